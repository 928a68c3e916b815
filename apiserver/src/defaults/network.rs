//! NetworkPolicies (`pkg/apis/networking/v1/defaults.go`) and EndpointSlices
//! (`pkg/apis/discovery/v1/defaults.go`).

use serde_json::{Map, Value, json};

use super::{items_at, object_at, set_default};

/// Ports default to TCP; without `policyTypes`, a policy is `Ingress` (and `Egress` when it
/// has egress rules).
pub(super) fn network_policy(obj: &mut Map<String, Value>) {
    let Some(spec) = object_at(obj, "spec") else {
        return;
    };
    for rules in ["ingress", "egress"] {
        for rule in items_at(spec, rules) {
            for port in items_at(rule, "ports") {
                set_default(port, "protocol", "TCP");
            }
        }
    }
    if spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        let has_egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// `SetDefaults_EndpointPort`: an empty name and TCP.
pub(super) fn endpoint_slice(obj: &mut Map<String, Value>) {
    for port in items_at(obj, "ports") {
        set_default(port, "name", "");
        set_default(port, "protocol", "TCP");
    }
}
