//! NetworkPolicies and Ingresses (`pkg/apis/networking/validation/validation.go`:
//! `ValidateNetworkPolicySpec`, `ValidateIngressSpec`) and EndpointSlices
//! (`pkg/apis/discovery/validation/validation.go`).

use std::net::{Ipv4Addr, Ipv6Addr};

use serde_json::{Map, Value};

use super::Cause;
use super::field::{forbidden, go_string, invalid, required, unsupported};

type Data = Map<String, Value>;

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// `ValidateNetworkPolicyPort`: protocol and port range.
fn policy_port(path: &str, port: &Value, causes: &mut Vec<Cause>) {
    if let Some(protocol) = port["protocol"]
        .as_str()
        .filter(|p| !["TCP", "UDP", "SCTP"].contains(p))
    {
        causes.push(unsupported(
            &format!("{path}.protocol"),
            protocol,
            &["TCP", "UDP", "SCTP"],
        ));
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    match &port["port"] {
        Value::Number(n) => {
            let n = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                causes.push(invalid(&format!("{path}.port"), &n.to_string(), PORT_RANGE));
            }
            if let Some(end) = end {
                if end < n {
                    causes.push(invalid(
                        &format!("{path}.endPort"),
                        &n.to_string(),
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&end) {
                    causes.push(invalid(
                        &format!("{path}.endPort"),
                        &end.to_string(),
                        PORT_RANGE,
                    ));
                }
            }
        }
        Value::String(_) => {
            if let Some(end) = end {
                causes.push(invalid(
                    &format!("{path}.endPort"),
                    &end.to_string(),
                    "may not be specified when `port` is non-numeric",
                ));
            }
        }
        _ => {
            if let Some(end) = end {
                causes.push(invalid(
                    &format!("{path}.endPort"),
                    &end.to_string(),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

/// `ValidateNetworkPolicyPeer`: valid selectors, one peer, an ipBlock with a CIDR and alone.
fn policy_peer(path: &str, peer: &Value, causes: &mut Vec<Cause>) {
    let present = |k: &str| peer.get(k).is_some_and(|v| !v.is_null());
    for selector in ["podSelector", "namespaceSelector"] {
        if present(selector) {
            causes.extend(super::label_selector(
                &format!("{path}.{selector}"),
                &peer[selector],
            ));
        }
    }
    let peers = ["podSelector", "namespaceSelector", "ipBlock"]
        .iter()
        .filter(|k| present(k))
        .count();
    if present("ipBlock") && peer["ipBlock"]["cidr"].as_str().is_none_or(str::is_empty) {
        causes.push(required(&format!("{path}.ipBlock.cidr"), ""));
    }
    if peers == 0 {
        causes.push(required(path, "must specify a peer"));
    } else if peers > 1 && present("ipBlock") {
        causes.push(forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
}

/// `ValidateNetworkPolicySpec`: the pod selector, ports and peers of the rules, and the policy
/// types.
pub(crate) fn network_policy(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    causes.extend(super::label_selector(
        "spec.podSelector",
        &spec["podSelector"],
    ));
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(spec, direction) {
            for (j, port) in items(rule, "ports") {
                policy_port(
                    &format!("spec.{direction}[{i}].ports[{j}]"),
                    port,
                    &mut causes,
                );
            }
            for (j, peer) in items(rule, peers) {
                policy_peer(
                    &format!("spec.{direction}[{i}].{peers}[{j}]"),
                    peer,
                    &mut causes,
                );
            }
        }
    }
    let types: Vec<&Value> = items(spec, "policyTypes").map(|(_, t)| t).collect();
    if types.len() > 2 {
        let list: Vec<&str> = types.iter().filter_map(|t| t.as_str()).collect();
        let printed = format!(
            "&[]networking.PolicyType{{{}}}",
            list.iter()
                .map(|t| go_string(t))
                .collect::<Vec<_>>()
                .join(", ")
        );
        causes.push(invalid(
            "spec.policyTypes",
            &printed,
            "may not specify more than two policyTypes",
        ));
        return causes;
    }
    for (i, t) in types.iter().enumerate() {
        if let Some(t) = t.as_str().filter(|t| !["Ingress", "Egress"].contains(t)) {
            causes.push(unsupported(
                &format!("spec.policyTypes[{i}]"),
                t,
                &["Ingress", "Egress"],
            ));
        }
    }
    causes
}

/// `validateIngressBackend`: a service (name and port) or a resource, not both.
fn ingress_backend(path: &str, backend: &Value, causes: &mut Vec<Cause>) {
    let service = backend.get("service").filter(|s| !s.is_null());
    let resource = backend.get("resource").filter(|r| !r.is_null());
    match (service, resource) {
        (Some(_), Some(_)) => causes.push(invalid(
            path,
            "\"\"",
            "cannot set both resource and service backends",
        )),
        (Some(service), None) => {
            if service["name"].as_str().is_none_or(str::is_empty) {
                causes.push(required(&format!("{path}.service.name"), ""));
            }
            let name = service["port"]["name"]
                .as_str()
                .is_some_and(|n| !n.is_empty());
            let number = service["port"]["number"].as_i64().filter(|n| *n != 0);
            match (name, number) {
                (true, Some(_)) => causes.push(invalid(
                    path,
                    "\"\"",
                    "cannot set both port name & port number",
                )),
                (false, Some(n)) if !(1..=65535).contains(&n) => {
                    causes.push(invalid(
                        &format!("{path}.service.port.number"),
                        &n.to_string(),
                        PORT_RANGE,
                    ));
                }
                (false, None) => causes.push(required(path, "port name or number is required")),
                _ => {}
            }
        }
        (None, Some(_)) => {}
        (None, None) => causes.push(invalid(
            path,
            "\"\"",
            "resource or service backend is required",
        )),
    }
}

/// `validateHTTPIngressPath`: a supported path type and an absolute path.
fn ingress_path(path: &str, p: &Value, causes: &mut Vec<Cause>) {
    let value = p["path"].as_str().unwrap_or("");
    let absolute = |causes: &mut Vec<Cause>| {
        if !value.starts_with('/') {
            causes.push(invalid(
                &format!("{path}.path"),
                &go_string(value),
                "must be an absolute path",
            ));
        }
    };
    match p["pathType"].as_str() {
        None => {
            causes.push(required(
                &format!("{path}.pathType"),
                "pathType must be specified",
            ));
            return;
        }
        Some("Exact" | "Prefix") => {
            absolute(causes);
            for bad in ["//", "/./", "/../", "%2f", "%2F"] {
                if value.contains(bad) {
                    causes.push(invalid(
                        &format!("{path}.path"),
                        &go_string(value),
                        &format!("must not contain '{bad}'"),
                    ));
                }
            }
            for bad in ["/..", "/."] {
                if value.ends_with(bad) {
                    causes.push(invalid(
                        &format!("{path}.path"),
                        &go_string(value),
                        &format!("cannot end with '{bad}'"),
                    ));
                }
            }
        }
        Some("ImplementationSpecific") => {
            if !value.is_empty() {
                absolute(causes);
            }
        }
        Some(other) => causes.push(unsupported(
            &format!("{path}.pathType"),
            other,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    ingress_backend(&format!("{path}.backend"), &p["backend"], causes);
}

/// `ValidateIngressSpec`: a default backend or rules, hosts that are DNS names, HTTP paths.
pub(crate) fn ingress(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    let rules = spec.get("rules").and_then(Value::as_array);
    let default_backend = spec.get("defaultBackend").filter(|b| !b.is_null());
    if rules.is_none_or(Vec::is_empty) && default_backend.is_none() {
        let printed = if rules.is_some() {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        causes.push(invalid(
            "spec",
            printed,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        ingress_backend("spec.defaultBackend", backend, &mut causes);
    }
    for (i, rule) in items(spec, "rules") {
        let host = rule["host"].as_str().unwrap_or("");
        if host.parse::<Ipv4Addr>().is_ok() || host.parse::<Ipv6Addr>().is_ok() {
            causes.push(invalid(
                &format!("spec.rules[{i}].host"),
                &go_string(host),
                "must be a DNS name, not an IP address",
            ));
        } else if !host.is_empty() && !host.contains('*') {
            causes.extend(
                super::subdomain_errors(host)
                    .iter()
                    .map(|m| invalid(&format!("spec.rules[{i}].host"), &go_string(host), m)),
            );
        }
        let Some(http) = rule.get("http").filter(|h| !h.is_null()) else {
            continue;
        };
        if http["paths"].as_array().is_none_or(Vec::is_empty) {
            causes.push(required(&format!("spec.rules[{i}].http.paths"), ""));
        }
        for (j, p) in items(http, "paths") {
            ingress_path(&format!("spec.rules[{i}].http.paths[{j}]"), p, &mut causes);
        }
    }
    causes
}

/// `ValidateEndpointSlice`: the address type, addresses of each endpoint, port protocols.
pub(crate) fn endpoint_slice(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let address_type = data
        .get("addressType")
        .and_then(Value::as_str)
        .unwrap_or("");
    const TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
    if address_type.is_empty() {
        causes.push(required("addressType", ""));
    } else if !TYPES.contains(&address_type) {
        causes.push(unsupported("addressType", address_type, TYPES));
    }
    let slice = Value::Object(data.clone());
    for (i, endpoint) in items(&slice, "endpoints") {
        let path = format!("endpoints[{i}].addresses");
        if endpoint["addresses"].as_array().is_none_or(Vec::is_empty) {
            causes.push(required(&path, "must contain at least 1 address"));
        }
        for (j, address) in items(endpoint, "addresses") {
            let address = address.as_str().unwrap_or("");
            let bad = match address_type {
                "IPv4" => address
                    .parse::<Ipv4Addr>()
                    .is_err()
                    .then_some("must be a valid IPv4 address"),
                "IPv6" => address
                    .parse::<Ipv6Addr>()
                    .is_err()
                    .then_some("must be a valid IPv6 address"),
                _ => None,
            };
            if let Some(message) = bad {
                causes.push(invalid(
                    &format!("{path}[{j}]"),
                    &go_string(address),
                    message,
                ));
            }
        }
    }
    for (i, port) in items(&slice, "ports") {
        if let Some(protocol) = port["protocol"]
            .as_str()
            .filter(|p| !["SCTP", "TCP", "UDP"].contains(p))
        {
            causes.push(unsupported(
                &format!("ports[{i}].protocol"),
                protocol,
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
    causes
}

/// `ValidateEndpointSliceUpdate`: the address type is immutable.
pub(crate) fn endpoint_slice_update(new: &Data, old: &Data) -> Vec<Cause> {
    match (new.get("addressType"), old.get("addressType")) {
        (n, o) if n == o => Vec::new(),
        (n, _) => vec![invalid(
            "addressType",
            &go_string(n.and_then(Value::as_str).unwrap_or("")),
            "field is immutable",
        )],
    }
}
