//! Services (`ValidateService` in `pkg/apis/core/validation/validation.go`): type, ports
//! required unless headless or ExternalName, port numbers, protocols and names, the selector's
//! label keys and values.

use serde_json::{Map, Value};

use super::Cause;
use super::field::{invalid, required, unsupported};

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
    if let Some(selector) = spec.get("selector").and_then(Value::as_object) {
        let labels = selector
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")));
        causes.extend(super::labels_causes("spec.selector", labels));
    }
    causes
}
