//! Printers of NetworkPolicies and EndpointSlices (`printNetworkPolicy`,
//! `printEndpointSlice` with `formatDiscoveryPorts` and `formatDiscoveryEndpoints`).

use serde_json::{Map, Value, json};

use super::cells::{age, items, selector, text};
use super::{AGE, Cells, Column};
use crate::object::Object;

type Data = Map<String, Value>;

const NETWORK_POLICY: &[Column] = &[
    Column(
        "Pod-Selector",
        "string",
        0,
        "Selects the pods to which this NetworkPolicy object applies.",
    ),
    AGE,
];
const ENDPOINT_SLICE: &[Column] = &[
    Column(
        "AddressType",
        "string",
        0,
        "addressType specifies the type of address carried by this EndpointSlice.",
    ),
    Column(
        "Ports",
        "string",
        0,
        "ports specifies the list of network ports exposed by each endpoint in this slice.",
    ),
    Column(
        "Endpoints",
        "string",
        0,
        "endpoints is a list of unique endpoints in this slice.",
    ),
    AGE,
];

/// The printer of a networking or discovery kind.
pub(super) fn printer(group: &str, kind: &str) -> Option<(&'static [Column], Cells)> {
    Some(match (group, kind) {
        ("networking.k8s.io", "NetworkPolicy") => (NETWORK_POLICY, network_policy),
        ("discovery.k8s.io", "EndpointSlice") => (ENDPOINT_SLICE, endpoint_slice),
        _ => return None,
    })
}

fn network_policy(obj: &Object, data: &Data) -> Vec<Value> {
    let pod_selector = data.get("spec").and_then(|s| s.get("podSelector"));
    vec![selector(pod_selector), age(obj)]
}

/// `listWithMoreString`: the first three, `+ N more...`, or `<unset>`.
fn first_three(all: Vec<String>) -> String {
    let count = all.len();
    let shown = all[..count.min(3)].join(",");
    match count {
        0 => "<unset>".to_owned(),
        c if c > 3 => format!("{shown} + {} more...", c - 3),
        _ => shown,
    }
}

fn endpoint_slice(obj: &Object, data: &Data) -> Vec<Value> {
    let ports: Vec<String> = items(data, "/ports")
        .map(|p| match (&p["port"], p["name"].as_str()) {
            (Value::Number(n), _) => n.to_string(),
            (_, Some(name)) => name.to_owned(),
            _ => "*".to_owned(),
        })
        .collect();
    let addresses: Vec<String> = items(data, "/endpoints")
        .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    vec![
        json!(text(data, "/addressType")),
        json!(first_three(ports)),
        json!(first_three(addresses)),
        age(obj),
    ]
}
