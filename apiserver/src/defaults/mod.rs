//! Defaulting of the built-in kinds, as Kubernetes' defaulting functions
//! (`pkg/apis/<group>/v1/defaults.go` and the generated `zz_generated.defaults.go` that walks
//! nested types): fields a client leaves out get the values a cluster stores.
//!
//! Defaults work on the object's JSON (`serde_json::Value`), which is what the server holds:
//! going through the k8s-openapi types would decode and re-encode every object of a write for
//! a handful of `entry().or_insert()` calls, and would drop fields the types do not know.
//! Each default is set only where the field is absent or `null`.
//!
//! - pod.rs: pods and pod templates (containers, probes, volumes), quantity.rs their
//!   quantities in canonical form;
//! - workloads.rs: deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs;
//! - core.rs: services, namespaces, secrets, endpoints;
//! - autoscaling.rs: HorizontalPodAutoscalers (v1 and v2);
//! - storage.rs: StorageClasses, PersistentVolumes and PersistentVolumeClaims;
//! - network.rs: NetworkPolicies and EndpointSlices;
//! - admission.rs: webhook configurations, ValidatingAdmissionPolicies and their bindings;
//! - cluster.rs: LimitRanges, CSIDrivers, FlowSchemas and PriorityLevelConfigurations
//!   (PodTemplates take the pod template defaults).
//!
//! PodDisruptionBudgets, Ingresses, Leases and `events.k8s.io` Events have no v1 defaults.

use serde_json::{Map, Value};

mod admission;
mod autoscaling;
mod cluster;
mod core;
mod network;
mod pod;
mod quantity;
mod storage;
#[cfg(test)]
mod tests;
mod workloads;

const ADMISSION: &str = "admissionregistration.k8s.io/v1";

/// Fills in the defaults of a built-in object of `api_version` and `kind` (others: nothing).
pub(crate) fn apply(api_version: &str, kind: &str, value: &mut Value) {
    let Some(obj) = value.as_object_mut() else {
        return;
    };
    match (api_version, kind) {
        ("v1", "Pod") => pod::pod(obj),
        ("v1", "Service") => core::service(obj),
        ("v1", "Namespace") => core::namespace(obj),
        ("v1", "Secret") => core::secret(obj),
        ("v1", "Endpoints") => core::endpoints(obj),
        ("apps/v1", "Deployment") => workloads::deployment(obj),
        ("apps/v1", "ReplicaSet") => workloads::replica_set(obj),
        ("apps/v1", "StatefulSet") => workloads::stateful_set(obj),
        ("apps/v1", "DaemonSet") => workloads::daemon_set(obj),
        ("batch/v1", "Job") => workloads::job(obj),
        ("batch/v1", "CronJob") => workloads::cron_job(obj),
        ("autoscaling/v1", "HorizontalPodAutoscaler") => autoscaling::hpa_v1(obj),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => autoscaling::hpa_v2(obj),
        ("storage.k8s.io/v1", "StorageClass") => storage::storage_class(obj),
        ("v1", "PersistentVolume") => storage::persistent_volume(obj),
        ("v1", "PersistentVolumeClaim") => storage::persistent_volume_claim(obj),
        ("networking.k8s.io/v1", "NetworkPolicy") => network::network_policy(obj),
        ("discovery.k8s.io/v1", "EndpointSlice") => network::endpoint_slice(obj),
        ("v1", "LimitRange") => cluster::limit_range(obj),
        ("v1", "PodTemplate") => pod::template(obj),
        ("storage.k8s.io/v1", "CSIDriver") => cluster::csi_driver(obj),
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema") => cluster::flow_schema(obj),
        ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration") => {
            cluster::priority_level(obj);
        }
        (ADMISSION, "MutatingWebhookConfiguration") => admission::webhooks(obj, true),
        (ADMISSION, "ValidatingWebhookConfiguration") => admission::webhooks(obj, false),
        (ADMISSION, "ValidatingAdmissionPolicy") => admission::admission_policy(obj),
        (ADMISSION, "ValidatingAdmissionPolicyBinding") => {
            admission::admission_policy_binding(obj);
        }
        _ => {}
    }
}

/// Sets `key` to `value` when it is absent or null.
fn set_default(map: &mut Map<String, Value>, key: &str, value: impl Into<Value>) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value.into());
    }
}

/// The object at `key`, created empty when absent or null (None when it is not an object).
fn object_entry<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    set_default(map, key, Map::new());
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// The object at `key` if there is one.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// The objects in the list at `key`.
fn items_at<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}
