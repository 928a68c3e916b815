//! Services (`ValidateService` in `pkg/apis/core/validation/validation.go`): type, ports
//! required unless headless or ExternalName, port numbers, protocols and names, node ports
//! only for types that have them, ExternalName's name and absent cluster IPs, the selector's
//! label keys and values.

use serde_json::{Map, Value};

use super::Cause;
use super::field::{forbidden, go_string, invalid, required, unsupported};

const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

pub(crate) fn service(data: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if !TYPES.contains(&service_type) {
        causes.push(unsupported("spec.type", service_type, TYPES));
    }
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let ports = spec.get("ports").and_then(Value::as_array);
    let ports = ports.map(Vec::as_slice).unwrap_or_default();
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        causes.push(required("spec.ports", ""));
    }
    for (i, port) in ports.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        if ports.len() > 1
            && port
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            causes.push(required(&format!("{path}.name"), ""));
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            causes.push(invalid(
                &format!("{path}.port"),
                &number.to_string(),
                "must be between 1 and 65535, inclusive",
            ));
        }
        let node_port = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if service_type == "ClusterIP" && node_port != 0 {
            causes.push(forbidden(
                &format!("{path}.nodePort"),
                "may not be used when `type` is 'ClusterIP'",
            ));
        }
        if let Some(protocol) = port.get("protocol").and_then(Value::as_str)
            && !PROTOCOLS.contains(&protocol)
        {
            causes.push(unsupported(
                &format!("{path}.protocol"),
                protocol,
                PROTOCOLS,
            ));
        }
    }
    if service_type == "ExternalName" {
        external_name(spec, &mut causes);
    }
    if let Some(selector) = spec.get("selector").and_then(Value::as_object) {
        let labels = selector
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")));
        causes.extend(super::labels_causes("spec.selector", labels));
    }
    causes
}

/// An ExternalName service (`ValidateService`): no cluster IPs nor IP families, and an
/// `externalName` that is a DNS subdomain (a trailing dot allowed).
fn external_name(spec: &Value, causes: &mut Vec<Cause>) {
    let set = |key: &str| {
        spec.get(key)
            .is_some_and(|v| !(v.is_null() || v == "" || v.as_array().is_some_and(Vec::is_empty)))
    };
    for (present, field) in [
        (set("clusterIP") || set("clusterIPs"), "clusterIPs"),
        (set("ipFamilies"), "ipFamilies"),
        (set("ipFamilyPolicy"), "ipFamilyPolicy"),
    ] {
        if present {
            causes.push(forbidden(
                &format!("spec.{field}"),
                "may not be set for ExternalName services",
            ));
        }
    }
    let name = spec
        .get("externalName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let cname = name.strip_suffix('.').unwrap_or(name);
    if cname.is_empty() {
        causes.push(required("spec.externalName", ""));
        return;
    }
    for message in super::subdomain_errors(cname) {
        causes.push(invalid("spec.externalName", &go_string(cname), &message));
    }
}
