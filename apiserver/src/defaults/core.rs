//! Services, namespaces, secrets and endpoints (`pkg/apis/core/v1/defaults.go`). A service's
//! cluster IP is allocated by the write path, not here (Kubernetes' `service/storage/alloc.go`).

use serde_json::{Map, Value, json};

use super::{items_at, object_entry, set_default};

pub(super) fn service(obj: &mut Map<String, Value>) {
    let Some(spec) = object_entry(obj, "spec") else {
        return;
    };
    set_default(spec, "type", "ClusterIP");
    set_default(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let config = object_entry(spec, "sessionAffinityConfig")
                .and_then(|c| object_entry(c, "clientIP"));
            if let Some(client_ip) = config {
                set_default(client_ip, "timeoutSeconds", 10800);
            }
        }
        _ => {}
    }
    for port in items_at(spec, "ports") {
        set_default(port, "protocol", "TCP");
        let target_unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if target_unset && let Some(p) = port.get("port").cloned() {
            port.insert("targetPort".into(), p);
        }
    }
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if service_type != "ExternalName" {
        set_default(spec, "internalTrafficPolicy", "Cluster");
    }
    if service_type == "NodePort" || service_type == "LoadBalancer" {
        set_default(spec, "externalTrafficPolicy", "Cluster");
    }
    if service_type == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", true);
    }
}

/// The `kubernetes.io/metadata.name` label and the `kubernetes` finalizer of the spec.
pub(super) fn namespace(obj: &mut Map<String, Value>) {
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str);
    if let Some(name) = name.filter(|n| !n.is_empty()).map(str::to_owned)
        && let Some(labels) = object_entry(obj, "metadata").and_then(|m| object_entry(m, "labels"))
    {
        labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
    if let Some(spec) = object_entry(obj, "spec") {
        set_default(spec, "finalizers", json!(["kubernetes"]));
    }
}

pub(super) fn secret(obj: &mut Map<String, Value>) {
    set_default(obj, "type", "Opaque");
}

pub(super) fn endpoints(obj: &mut Map<String, Value>) {
    for subset in items_at(obj, "subsets") {
        for port in items_at(subset, "ports") {
            set_default(port, "protocol", "TCP");
        }
    }
}
