//! The strategies of the built-in kinds (`pkg/registry/<group>/<kind>/strategy.go`) and
//! [`strategy_for`], which picks a resource's.

use std::marker::PhantomData;

use k8s_openapi::api::{apps, batch, core, networking, policy};
use serde::Serialize;
use serde_json::{Value, json};

use super::strategy::{DefaultStrategy, Strategy, Subresource, prepare_update, set_status};
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::validation::Cause;

/// Kinds whose new objects start with the empty status of their type `T` (as their
/// `PrepareForCreate` sets `Status = <Kind>Status{}`; fields the type always encodes appear).
struct EmptyStatus<T>(PhantomData<fn() -> T>);

impl<T: Default + Serialize> Strategy for EmptyStatus<T> {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(obj, serde_json::to_value(T::default()).ok());
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

/// Services: the allocated addresses stay when an update leaves them out, and may not change.
struct ServiceStrategy;

/// The fields of a service's spec allocated at create.
const ALLOCATED: &[&str] = &["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"];

impl Strategy for ServiceStrategy {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(
            obj,
            serde_json::to_value(core::v1::ServiceStatus::default()).ok(),
        );
    }

    fn prepare_for_update(
        &self,
        def: &ResourceDef,
        new: &mut Object,
        old: &Object,
        sub: Subresource,
    ) {
        prepare_update(def, new, old, sub);
        let old_spec = old.data().get("spec").cloned().unwrap_or_default();
        let mut data = new.data();
        if let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) {
            for field in ALLOCATED {
                let missing = spec.get(*field).is_none_or(|v| v.is_null() || v == "");
                if let (true, Some(value)) = (missing, old_spec.get(*field)) {
                    spec.insert((*field).to_owned(), value.clone());
                }
            }
        }
        new.set_data(data);
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        let ip = |o: &Object| o.field("spec.clusterIP").map(|ip| ip.into_owned());
        let (new_ip, old_ip) = (ip(new), ip(old));
        if old_ip.is_none() || new_ip == old_ip {
            return Vec::new();
        }
        let new_ips = new
            .data()
            .get("spec")
            .and_then(|s| s.get("clusterIPs"))
            .cloned()
            .unwrap_or(Value::Null);
        vec![(
            "spec.clusterIPs[0]".to_owned(),
            format!("Invalid value: {new_ips}: may not change once set"),
        )]
    }
}

/// Pods: a new pod is `Pending`, with its QoS class.
struct PodStrategy;

impl Strategy for PodStrategy {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        let qos = qos_class(&obj.data());
        set_status(obj, Some(json!({"phase": "Pending", "qosClass": qos})));
    }
}

/// A pod's QoS class (`pkg/apis/core/helper/qos/qos.go`): BestEffort without any request or
/// limit, Guaranteed when every container limits cpu and memory with requests equal to the
/// limits, else Burstable.
fn qos_class(data: &serde_json::Map<String, Value>) -> &'static str {
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
            limits.contains_key(*r) && requests.get(*r).is_none_or(|q| Some(q) == limits.get(*r))
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

macro_rules! empty_status {
    ($ty:ty) => {
        &EmptyStatus::<$ty>(PhantomData)
    };
}

/// The strategy of `def`'s kind.
pub(crate) fn strategy_for(def: &ResourceDef) -> &'static dyn Strategy {
    match (def.api.group.as_str(), def.api.kind.as_str()) {
        ("", "Namespace") => &NamespaceStrategy,
        ("", "Node") => &NodeStrategy,
        ("", "Pod") => &PodStrategy,
        ("", "Service") => &ServiceStrategy,
        ("", "ResourceQuota") => empty_status!(core::v1::ResourceQuotaStatus),
        ("apps", "Deployment") => empty_status!(apps::v1::DeploymentStatus),
        ("apps", "ReplicaSet") => empty_status!(apps::v1::ReplicaSetStatus),
        ("apps", "StatefulSet") => empty_status!(apps::v1::StatefulSetStatus),
        ("apps", "DaemonSet") => empty_status!(apps::v1::DaemonSetStatus),
        ("batch", "Job") => empty_status!(batch::v1::JobStatus),
        ("batch", "CronJob") => empty_status!(batch::v1::CronJobStatus),
        ("networking.k8s.io", "Ingress") => empty_status!(networking::v1::IngressStatus),
        ("policy", "PodDisruptionBudget") => {
            empty_status!(policy::v1::PodDisruptionBudgetStatus)
        }
        _ => &DefaultStrategy,
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
    }
}
