//! The strategies of the built-in kinds (`pkg/registry/<group>/<kind>/strategy.go`) and
//! [`strategy_for`], which picks a resource's.

use k8s_openapi::api::{apps, autoscaling, batch, core, networking, policy};
use kube_core::Resource;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::strategy::{DefaultStrategy, Strategy, Subresource, prepare_update, set_status};
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::validation::quantity::Quantity;
use crate::validation::{self, Cause};

type Data = Map<String, Value>;

/// The rules of a built-in kind without hooks of its own: its initial status (as its
/// `PrepareForCreate` sets `Status = <Kind>Status{}`; None: the status given is kept) and its
/// validation of new objects and of updates.
pub(super) struct Rules {
    pub(super) initial_status: Option<fn() -> Value>,
    pub(super) validate: fn(&Data) -> Vec<Cause>,
    pub(super) validate_update: fn(&Data, &Data) -> Vec<Cause>,
}

impl Strategy for Rules {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        if let Some(status) = self.initial_status {
            set_status(obj, Some(status()));
        }
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        (self.validate)(&obj.data())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        (self.validate_update)(&new.data(), &old.data())
    }
}

/// The empty status of type `T`, with the fields the type always encodes.
pub(super) fn empty<T: Default + Serialize>() -> Value {
    serde_json::to_value(T::default()).unwrap_or_default()
}

pub(super) fn nothing(_: &Data) -> Vec<Cause> {
    Vec::new()
}

fn nothing_changed(_: &Data, _: &Data) -> Vec<Cause> {
    Vec::new()
}

/// A kind whose new objects start with the empty status `T`, without validation of its own.
const fn status_only(initial_status: fn() -> Value) -> Rules {
    Rules {
        initial_status: Some(initial_status),
        validate: nothing,
        validate_update: nothing_changed,
    }
}

static DEPLOYMENT: Rules = Rules {
    initial_status: Some(empty::<apps::v1::DeploymentStatus>),
    validate: |d| validation::workload("Deployment", d),
    validate_update: validation::selector_update,
};
static REPLICA_SET: Rules = Rules {
    initial_status: Some(empty::<apps::v1::ReplicaSetStatus>),
    validate: |d| validation::workload("ReplicaSet", d),
    validate_update: validation::selector_update,
};
static STATEFUL_SET: Rules = Rules {
    initial_status: Some(empty::<apps::v1::StatefulSetStatus>),
    validate: |d| validation::workload("StatefulSet", d),
    validate_update: validation::selector_update,
};
static DAEMON_SET: Rules = Rules {
    initial_status: Some(empty::<apps::v1::DaemonSetStatus>),
    validate: |d| validation::workload("DaemonSet", d),
    validate_update: validation::selector_update,
};
static CONFIG_MAP: Rules = Rules {
    initial_status: None,
    validate: validation::config_map,
    validate_update: |n, o| {
        [
            validation::immutable_data(n, o, &["data", "binaryData"]),
            validation::config_map(n),
        ]
        .concat()
    },
};
static RESOURCE_QUOTA: Rules = status_only(empty::<core::v1::ResourceQuotaStatus>);
static INGRESS: Rules = Rules {
    initial_status: Some(empty::<networking::v1::IngressStatus>),
    validate: validation::ingress,
    validate_update: |n, _| validation::ingress(n),
};
static PDB: Rules = Rules {
    initial_status: Some(empty::<policy::v1::PodDisruptionBudgetStatus>),
    validate: validation::pod_disruption_budget,
    validate_update: |n, _| validation::pod_disruption_budget(n),
};
static NETWORK_POLICY: Rules = Rules {
    initial_status: None,
    validate: validation::network_policy,
    validate_update: |n, _| validation::network_policy(n),
};
static ENDPOINT_SLICE: Rules = Rules {
    initial_status: None,
    validate: validation::endpoint_slice,
    validate_update: |n, o| {
        [
            validation::endpoint_slice(n),
            validation::endpoint_slice_update(n, o),
        ]
        .concat()
    },
};
static STORAGE_CLASS: Rules = Rules {
    initial_status: None,
    validate: validation::storage_class,
    validate_update: |n, o| {
        [
            validation::storage_class(n),
            validation::storage_class_update(n, o),
        ]
        .concat()
    },
};
/// A new volume is `Pending` since now (PrepareForCreate with
/// PersistentVolumeLastPhaseTransitionTime).
static PERSISTENT_VOLUME: Rules = Rules {
    initial_status: Some(|| {
        let now = serde_json::to_value(super::now()).unwrap_or_default();
        json!({"phase": "Pending", "lastPhaseTransitionTime": now})
    }),
    validate: validation::persistent_volume,
    validate_update: |n, o| {
        [
            validation::persistent_volume(n),
            validation::persistent_volume_update(n, o),
        ]
        .concat()
    },
};
/// A new claim is `Pending` (its empty status as read back through the defaults).
static PERSISTENT_VOLUME_CLAIM: Rules = Rules {
    initial_status: Some(|| json!({"phase": "Pending"})),
    validate: validation::persistent_volume_claim,
    validate_update: |n, o| {
        [
            validation::persistent_volume_claim(n),
            validation::persistent_volume_claim_update(n, o),
        ]
        .concat()
    },
};

/// HorizontalPodAutoscalers: a new one has the empty status of its version, and is validated
/// in the stored (v2) form, as Kubernetes validates the internal object.
struct HpaStrategy;

fn hpa_causes(def: &ResourceDef, obj: &Object) -> Vec<Cause> {
    let v2 = crate::convert::stored(def, obj.clone());
    validation::hpa(&v2.data())
}

impl Strategy for HpaStrategy {
    fn prepare_for_create(&self, def: &ResourceDef, obj: &mut Object) {
        let status = if def.api.version == "v1" {
            crate::convert::set_status_annotations(obj, None);
            empty::<autoscaling::v1::HorizontalPodAutoscalerStatus>()
        } else {
            crate::convert::drop_round_trip_annotations(obj);
            empty::<autoscaling::v2::HorizontalPodAutoscalerStatus>()
        };
        set_status(obj, Some(status));
    }

    /// The generic rules; through v1 the status annotations follow the status (the stored one,
    /// or through `/status` the one sent), through v2 the round-trip annotations are dropped.
    fn prepare_for_update(
        &self,
        def: &ResourceDef,
        new: &mut Object,
        old: &Object,
        subresource: Subresource,
    ) {
        let sent = (def.api.version == "v1").then(|| new.clone());
        prepare_update(def, new, old, subresource);
        match (sent, subresource) {
            (Some(_), Subresource::Main | Subresource::EphemeralContainers) => {
                crate::convert::set_status_annotations(new, Some(old));
            }
            (Some(sent), Subresource::Status | Subresource::Approval) => {
                crate::convert::set_status_annotations(new, Some(&sent));
            }
            (None, _) => crate::convert::drop_round_trip_annotations(new),
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        hpa_causes(def, obj)
    }

    fn validate_update(&self, def: &ResourceDef, new: &Object, _old: &Object) -> Vec<Cause> {
        hpa_causes(def, new)
    }
}

/// `events.k8s.io` Events, validated with their namespace (the regarding object's must agree).
struct EventStrategy;

fn namespace_of(obj: &Object) -> &str {
    obj.meta().namespace.as_deref().unwrap_or("")
}

impl Strategy for EventStrategy {
    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::event(namespace_of(obj), &obj.data())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        validation::event_update(namespace_of(new), &new.data(), &old.data())
    }
}

/// Leases (`pkg/registry/coordination/lease/strategy.go`): a PUT may create one, and an
/// update must name the resource version.
struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::lease(&obj.data())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, _old: &Object) -> Vec<Cause> {
        validation::lease(&new.data())
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }
}

/// Kinds without rules of their own whose strategy has `AllowCreateOnUpdate` (Endpoints, RBAC
/// roles and bindings): a PUT to an absent name creates the object. Events do not (since
/// Kubernetes 1.19 their strategy says "POST is needed to create one").
struct CreateOnUpdate;

impl Strategy for CreateOnUpdate {
    fn allow_create_on_update(&self) -> bool {
        true
    }
}

/// Secrets (`pkg/registry/core/secret/strategy.go`): `stringData` is folded into `data` as
/// the body is decoded (the v1 to internal conversion), the type's keys are checked and the
/// type may not change.
struct SecretStrategy;

impl Strategy for SecretStrategy {
    fn default(&self, def: &ResourceDef, value: &mut Value) {
        crate::defaults::apply(&def.api.api_version, &def.api.kind, value);
        if let Some(obj) = value.as_object_mut() {
            validation::fold_string_data(obj);
        }
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::secret(&obj.data(), obj.meta().annotations.as_ref())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        validation::secret_update(&new.data(), &old.data(), new.meta().annotations.as_ref())
    }
}

/// core/v1 Events: in their involved object's namespace, and with an `eventTime`, the
/// reporting fields (`pkg/registry/core/event/strategy.go`).
struct CoreEventStrategy;

impl Strategy for CoreEventStrategy {
    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::core_event(namespace_of(obj), &obj.data())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, _old: &Object) -> Vec<Cause> {
        validation::core_event(namespace_of(new), &new.data())
    }
}

/// Namespaces: a new namespace is `Active`.
struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(obj, Some(json!({"phase": "Active"})));
    }
}

/// Nodes keep the status they are registered with.
struct NodeStrategy;

impl Strategy for NodeStrategy {}

/// Jobs: unless `spec.manualSelector`, a new job selects its pods by its uid, and its template
/// labels them with its uid and name (`pkg/registry/batch/job/strategy.go`,
/// `generateSelector`; labels the client set are kept).
struct JobStrategy;

impl Strategy for JobStrategy {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(obj, Some(empty::<batch::v1::JobStatus>()));
        let uid = obj.meta().uid.clone().unwrap_or_default();
        let name = obj.meta().name.clone().unwrap_or_default();
        let mut data = obj.data();
        let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let template_labels = spec
            .get_mut("template")
            .and_then(Value::as_object_mut)
            .map(|t| t.entry("metadata").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
            .map(|m| m.entry("labels").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut);
        if let Some(labels) = template_labels {
            for (key, value) in [
                ("batch.kubernetes.io/controller-uid", &uid),
                ("batch.kubernetes.io/job-name", &name),
                ("controller-uid", &uid),
                ("job-name", &name),
            ] {
                labels
                    .entry(key)
                    .or_insert_with(|| Value::String(value.clone()));
            }
        }
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
        obj.set_data(data);
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::job(&obj.data())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        let (new, old) = (new.data(), old.data());
        let mut causes = validation::job_update(&new, &old);
        causes.extend(validation::job_status_update(&new, &old));
        causes
    }
}

/// CronJobs (`pkg/registry/batch/cronjob/strategy.go`): the empty status, and
/// `ValidateCronJobCreate`/`ValidateCronJobUpdate`, the create with the 52-character name
/// limit (the controller's job names add 11 characters to the cron job's).
struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(obj, Some(empty::<batch::v1::CronJobStatus>()));
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        let mut causes = validation::cron_job(&obj.data(), None);
        let name = obj.meta().name.as_deref().unwrap_or("");
        if name.len() > 52 {
            causes.push(validation::field::invalid(
                "metadata.name",
                &validation::field::go_string(name),
                "must be no more than 52 characters",
            ));
        }
        causes
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        validation::cron_job(&new.data(), Some(&old.data()))
    }
}

/// Pods: a new pod is `Pending`, with its QoS class.
struct PodStrategy;

impl Strategy for PodStrategy {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        let qos = qos_class(&obj.data());
        set_status(obj, Some(json!({"phase": "Pending", "qosClass": qos})));
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::pod_create(&obj.data())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        validation::pod_update((new.meta(), &new.data()), (old.meta(), &old.data()))
    }

    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        new: &Object,
        old: &Object,
        subresource: Subresource,
    ) -> Vec<Cause> {
        match subresource {
            Subresource::EphemeralContainers => {
                let (new_data, old_data) = (new.data(), old.data());
                validation::ephemeral_containers_update(
                    (new.meta(), &new_data),
                    (old.meta(), &old_data),
                )
            }
            // The spec is the stored one (`ValidatePodStatusUpdate`'s own rules are not
            // checked); pods have no approval.
            Subresource::Status | Subresource::Approval => Vec::new(),
            Subresource::Main => self.validate_update(def, new, old),
        }
    }
}

/// A pod's QoS class (`pkg/apis/core/helper/qos/qos.go`): BestEffort without any request or
/// limit, Guaranteed when every container limits cpu and memory with requests equal to the
/// limits (compared as quantities: `1` and `1000m` are equal), else Burstable.
fn qos_class(data: &Data) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| data.get("spec")?.get(*k)?.as_array())
        .flatten()
        .collect();
    let resources = |c: &Value, kind: &str| {
        c.get("resources")
            .and_then(|r| r.get(kind))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let any = containers
        .iter()
        .any(|c| !resources(c, "requests").is_empty() || !resources(c, "limits").is_empty());
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let (limits, requests) = (resources(c, "limits"), resources(c, "requests"));
        ["cpu", "memory"].iter().all(|r| {
            let same = |q: &Value, l: &Value| match (Quantity::from_json(q), Quantity::from_json(l))
            {
                (Some(q), Some(l)) => q.cmp_value(&l).is_eq(),
                _ => q == l,
            };
            let limit = limits.get(*r);
            limit.is_some()
                && requests
                    .get(*r)
                    .is_none_or(|q| limit.is_some_and(|l| same(q, l)))
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The strategy of `def`'s kind.
pub(crate) fn strategy_for(def: &ResourceDef) -> &'static dyn Strategy {
    match (def.api.group.as_str(), def.api.kind.as_str()) {
        ("", "Namespace") => &NamespaceStrategy,
        ("", "Node") => &NodeStrategy,
        ("", "Pod") => &PodStrategy,
        ("", "Event") => &CoreEventStrategy,
        ("", "Service") => &super::service::ServiceStrategy,
        ("", "ConfigMap") => &CONFIG_MAP,
        ("", "Secret") => &SecretStrategy,
        ("", "ResourceQuota") => &RESOURCE_QUOTA,
        ("apps", "Deployment") => &DEPLOYMENT,
        ("apps", "ReplicaSet") => &REPLICA_SET,
        ("apps", "StatefulSet") => &STATEFUL_SET,
        ("apps", "DaemonSet") => &DAEMON_SET,
        ("batch", "Job") => &JobStrategy,
        ("batch", "CronJob") => &CronJobStrategy,
        ("networking.k8s.io", "Ingress") => &INGRESS,
        ("networking.k8s.io", "NetworkPolicy") => &NETWORK_POLICY,
        ("policy", "PodDisruptionBudget") => &PDB,
        ("autoscaling", "HorizontalPodAutoscaler") => &HpaStrategy,
        ("discovery.k8s.io", "EndpointSlice") => &ENDPOINT_SLICE,
        ("coordination.k8s.io", "Lease") => &LeaseStrategy,
        ("", "Endpoints") => &CreateOnUpdate,
        (
            "rbac.authorization.k8s.io",
            "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding",
        ) => &CreateOnUpdate,
        ("events.k8s.io", "Event") => &EventStrategy,
        ("storage.k8s.io", "StorageClass") => &STORAGE_CLASS,
        ("", "PersistentVolume") => &PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => &PERSISTENT_VOLUME_CLAIM,
        _ if crate::crd::is_crd(def) => &super::custom::CrdStrategy,
        _ if def.schema.is_some() => &super::custom::CustomStrategy,
        _ if crate::kinds::find(&def.api.api_version, &def.api.kind).is_none() => {
            &super::custom::SchemalessStrategy
        }
        (group, kind) => super::cluster::strategy_for(group, kind).unwrap_or(&DefaultStrategy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes_follow_requests_and_limits() {
        let pod = |resources: Value| {
            json!({"spec": {"containers": [{"resources": resources}]}})
                .as_object()
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&pod(json!({"requests": {"cpu": "1"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))),
            "Guaranteed"
        );
        let written_apart = json!({"limits": {"cpu": "1.", "memory": "1Gi"},
                                   "requests": {"cpu": "1000m", "memory": "1024Mi"}});
        assert_eq!(qos_class(&pod(written_apart)), "Guaranteed");
        let more = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "2"}});
        assert_eq!(qos_class(&pod(more)), "Burstable");
    }
}
