//! Pods and pod templates (`pkg/apis/core/validation/validation.go`: `ValidatePodSpec`,
//! `ValidatePodUpdate`): volumes (volume.rs), containers, init and ephemeral containers
//! (container.rs, with env.rs, resources.rs and probe.rs), host network ports, restart and DNS
//! policies, and what only a new pod is checked for (`ValidatePodCreate`); what a pod update
//! may change is pod_update.rs.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::affinity::node_affinity;
use super::container::{containers, ephemeral_containers, init_containers, one_of};
use super::field::{duplicate, forbidden, go_string, go_strings, invalid, items, required, text};
use super::security;
use super::toleration::tolerations;
use super::volume::volumes;
use super::{
    Cause, invalid_value, label_errors, labels_causes, qualified_name_errors, subdomain_errors,
};

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
/// `validateDNSPolicy`'s list, in its (unsorted) order.
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];

/// The causes of an invalid pod template's spec at `path` (`spec.template.spec`...), in the
/// order of `ValidatePodSpec`, then `ValidatePodTemplateSpec`'s: no ephemeral containers.
pub(super) fn pod_spec(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    spec_causes(spec, path, false, causes);
    if !items(spec, "ephemeralContainers").is_empty() {
        causes.push(forbidden(
            &format!("{path}.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// The causes of an invalid new pod (`ValidatePodCreate`): its spec as a pod's (a host port
/// must match its container port on the host network), images without surrounding
/// whitespace, no ephemeral containers, and no node name while scheduling gates remain.
pub(crate) fn pod_create(data: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    spec_causes(spec, "spec", true, &mut causes);
    for list in ["containers", "initContainers"] {
        for (i, c) in items(spec, list).iter().enumerate() {
            let image = text(c, "image");
            if image.trim() != image {
                causes.push(invalid(
                    &format!("spec.{list}[{i}].image"),
                    &go_string(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    if !items(spec, "ephemeralContainers").is_empty() {
        causes.push(forbidden(
            "spec.ephemeralContainers",
            "cannot be set on create",
        ));
    }
    if !text(spec, "nodeName").is_empty() && !items(spec, "schedulingGates").is_empty() {
        causes.push(forbidden(
            "spec.nodeName",
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    causes
}

/// `ValidatePodSpec` of a pod (`is_pod`, Kubernetes' `ResourceIsPod`) or a template.
fn spec_causes(spec: &Value, path: &str, is_pod: bool, causes: &mut Vec<Cause>) {
    if spec
        .get("terminationGracePeriodSeconds")
        .is_none_or(Value::is_null)
    {
        causes.push(required(
            &format!("{path}.terminationGracePeriodSeconds"),
            "",
        ));
    }
    let volumes = volumes(spec, &format!("{path}.volumes"), causes);
    let list = spec.get("containers").and_then(Value::as_array);
    containers(
        list.map(Vec::as_slice),
        &format!("{path}.containers"),
        &volumes,
        causes,
    );
    init_containers(spec, &format!("{path}.initContainers"), &volumes, causes);
    ephemeral_containers(
        spec,
        &format!("{path}.ephemeralContainers"),
        &volumes,
        causes,
    );
    host_network_ports(spec, path, is_pod, causes);
    // `validateRestartPolicy`, `validateDNSPolicy`: set by defaulting, so required here.
    one_of(spec, "restartPolicy", path, RESTART_POLICIES, causes);
    one_of(spec, "dnsPolicy", path, DNS_POLICIES, causes);
    let selector = spec
        .get("nodeSelector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten();
    let selector = selector.map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")));
    causes.extend(labels_causes(&format!("{path}.nodeSelector"), selector));
    security::pod_context(spec, &format!("{path}.securityContext"), causes);
    node_affinity(spec, &format!("{path}.affinity.nodeAffinity"), causes);
    dns_config(spec, &format!("{path}.dnsConfig"), causes);
    gates(spec, path, causes);
    names_and_deadline(spec, path, causes);
}

/// `validatePodDNSConfig`: a `None` DNS policy needs a config with a nameserver; at most three
/// nameservers; options named.
fn dns_config(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let config = spec.get("dnsConfig").filter(|c| c.is_object());
    let nameservers: Vec<&str> = config
        .map(|c| items(c, "nameservers"))
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if text(spec, "dnsPolicy") == "None" {
        if config.is_none() {
            causes.push(required(
                path,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ));
            return;
        }
        if nameservers.is_empty() {
            causes.push(required(
                &format!("{path}.nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return;
        }
    }
    let Some(config) = config else {
        return;
    };
    if nameservers.len() > 3 {
        causes.push(invalid(
            &format!("{path}.nameservers"),
            &go_strings(&nameservers),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, option) in items(config, "options").iter().enumerate() {
        if text(option, "name").is_empty() {
            causes.push(required(
                &format!("{path}.options[{i}]"),
                "must not be empty",
            ));
        }
    }
}

/// `validateReadinessGates` and `validateSchedulingGates`: qualified names, scheduling gates
/// unique.
fn gates(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, gate) in items(spec, "readinessGates").iter().enumerate() {
        let condition = text(gate, "conditionType");
        let at = format!("{path}.readinessGates[{i}].conditionType");
        for m in qualified_name_errors(condition) {
            causes.push((at.clone(), invalid_value(condition, &m)));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, gate) in items(spec, "schedulingGates").iter().enumerate() {
        let name = text(gate, "name");
        let at = format!("{path}.schedulingGates[{i}]");
        for m in qualified_name_errors(name) {
            causes.push((at.clone(), invalid_value(name, &m)));
        }
        if !seen.insert(name) {
            causes.push(duplicate(&at, &go_string(name)));
        }
    }
}

/// The names a pod spec refers to (service account, node, priority class: DNS subdomains;
/// hostname and subdomain: DNS labels), its active deadline and its tolerations, in
/// `ValidatePodSpec`'s order.
fn names_and_deadline(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let name = |field: &str, errors: fn(&str) -> Vec<String>, causes: &mut Vec<Cause>| {
        let value = text(spec, field);
        if !value.is_empty() {
            for m in errors(value) {
                causes.push((format!("{path}.{field}"), invalid_value(value, &m)));
            }
        }
    };
    name("serviceAccountName", subdomain_errors, causes);
    name("nodeName", subdomain_errors, causes);
    if let Some(deadline) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        causes.push(invalid(
            &format!("{path}.activeDeadlineSeconds"),
            &deadline.to_string(),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    name("hostname", label_errors, causes);
    name("subdomain", label_errors, causes);
    tolerations(spec, &format!("{path}.tolerations"), causes);
    name("priorityClassName", subdomain_errors, causes);
}

/// `validatePodHostNetworkDeps`: on the host network a container's host port is its
/// container port (in a template, a host port left out is defaulted later).
fn host_network_ports(spec: &Value, path: &str, is_pod: bool, causes: &mut Vec<Cause>) {
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for (i, c) in items(spec, "containers").iter().enumerate() {
        for (j, port) in items(c, "ports").iter().enumerate() {
            let number = |key: &str| port.get(key).and_then(Value::as_i64).unwrap_or(0);
            let (host, container) = (number("hostPort"), number("containerPort"));
            if (is_pod || host != 0) && host != container {
                causes.push(invalid(
                    &format!("{path}.containers[{i}].ports[{j}].hostPort"),
                    &host.to_string(),
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
}

/// `ValidatePodSpec` of a pod's spec (what an update validates of the new pod).
pub(super) fn spec_of_pod(spec: &Value, causes: &mut Vec<Cause>) {
    spec_causes(spec, "spec", true, causes);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The realistic pod the benchmarks create by the 50,000 (a ReplicaSet's pod as a cluster
    /// stores it) passes, defaulted as the server defaults it.
    #[test]
    fn the_store_fixture_pod_is_valid() {
        for i in 0..3 {
            let mut pod = kcache_store::testing::pod_json(i, 3, 0);
            crate::defaults::apply("v1", "Pod", &mut pod);
            let causes = pod_create(pod.as_object().unwrap());
            assert!(causes.is_empty(), "{causes:?}");
        }
    }
}
