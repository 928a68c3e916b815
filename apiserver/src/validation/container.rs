//! The containers of a pod spec (`pkg/apis/core/validation/validation.go`:
//! `validateContainers`, `validateInitContainers`, `validateEphemeralContainers`,
//! `validateContainerCommon`, `validateContainerPorts`, `validatePullPolicy`,
//! `AccumulateUniqueHostPorts`), in Kubernetes' order of checks.

use std::collections::BTreeSet;

use serde_json::Value;

use super::field::{
    duplicate, forbidden, go_string, invalid, is_set, items, not_found, required, text, unsupported,
};
use super::port::{PORT_RANGE, port_name_errors};
use super::volume::{Volumes, volume_mounts};
use super::{Cause, env, invalid_value, label_errors, probe, resources, security};

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const MESSAGE_POLICIES: &[&str] = &["File", "FallbackToLogsOnError"];
const INIT_ONLY: &str = "may not be set for init containers without restartPolicy=Always";
const NOT_EPHEMERAL: &str = "cannot be set for an Ephemeral Container";
/// The fields of `EphemeralContainerCommon` an ephemeral container may not set, in the order
/// of the struct (`allowedEphemeralContainerFields` lists what it may).
const EPHEMERAL_FORBIDDEN: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// `validateContainers`: the regular containers, their names unique, probes and lifecycle,
/// then host ports unique across them.
pub(super) fn containers(
    list: Option<&[Value]>,
    path: &str,
    volumes: &Volumes<'_>,
    causes: &mut Vec<Cause>,
) {
    let list = list.unwrap_or_default();
    if list.is_empty() {
        causes.push(required(path, ""));
        return;
    }
    let mut names = BTreeSet::new();
    for (i, c) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        common_and_unique(c, &at, volumes, &mut names, causes);
        probe::lifecycle_and_probes(c, &at, causes);
        if is_set(c, "restartPolicy") {
            causes.push(forbidden(
                &format!("{at}.restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    host_port_conflicts(list, path, causes);
}

/// `validateInitContainers`: names unique across regular and init containers, the restart
/// policy (`Always` makes a sidecar, which may have probes and a lifecycle).
pub(super) fn init_containers(
    spec: &Value,
    path: &str,
    volumes: &Volumes<'_>,
    causes: &mut Vec<Cause>,
) {
    let mut names: BTreeSet<&str> = items(spec, "containers")
        .iter()
        .map(|c| text(c, "name"))
        .collect();
    for (i, c) in items(spec, "initContainers").iter().enumerate() {
        let at = format!("{path}[{i}]");
        common(c, &at, volumes, causes);
        let restart_always = match c.get("restartPolicy").and_then(Value::as_str) {
            Some("Always") => true,
            Some(other) => {
                causes.push(unsupported(
                    &format!("{at}.restartPolicy"),
                    other,
                    &["Always"],
                ));
                false
            }
            None => false,
        };
        let name = text(c, "name");
        if names.contains(name) {
            causes.push(duplicate(&format!("{at}.name"), &go_string(name)));
        } else if !name.is_empty() {
            names.insert(name);
        }
        // Init containers run one by one: each is checked alone, under index 0 as Go does.
        host_port_conflicts(std::slice::from_ref(c), path, causes);
        if restart_always {
            probe::lifecycle_and_probes(c, &at, causes);
        } else {
            for field in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if is_set(c, field) {
                    causes.push(forbidden(&format!("{at}.{field}"), INIT_ONLY));
                }
            }
        }
    }
}

/// `validateEphemeralContainers`: names unique across all containers, the target container
/// declared, and none of the fields ephemeral containers may not have.
pub(super) fn ephemeral_containers(
    spec: &Value,
    path: &str,
    volumes: &Volumes<'_>,
    causes: &mut Vec<Cause>,
) {
    let list = items(spec, "ephemeralContainers");
    if list.is_empty() {
        return;
    }
    let others: BTreeSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| items(spec, k))
        .map(|c| text(c, "name"))
        .collect();
    let mut names = others.clone();
    for (i, c) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        common_and_unique(c, &at, volumes, &mut names, causes);
        let target = text(c, "targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            causes.push(not_found(
                &format!("{at}.targetContainerName"),
                &go_string(target),
            ));
        }
        for field in EPHEMERAL_FORBIDDEN {
            let set = match c.get(*field) {
                Some(Value::Object(m)) => !m.is_empty(),
                Some(v) => !v.is_null(),
                None => false,
            };
            if set {
                causes.push(forbidden(&format!("{at}.{field}"), NOT_EPHEMERAL));
            }
        }
        for (j, mount) in items(c, "volumeMounts").iter().enumerate() {
            for field in ["subPath", "subPathExpr"] {
                if !text(mount, field).is_empty() {
                    causes.push(forbidden(
                        &format!("{at}.volumeMounts[{j}].{field}"),
                        NOT_EPHEMERAL,
                    ));
                }
            }
        }
    }
}

/// [`common`], then the container's name must not be in `names` (it is added).
fn common_and_unique<'a>(
    c: &'a Value,
    path: &str,
    volumes: &Volumes<'_>,
    names: &mut BTreeSet<&'a str>,
    causes: &mut Vec<Cause>,
) {
    common(c, path, volumes, causes);
    let name = text(c, "name");
    if !names.insert(name) {
        causes.push(duplicate(&format!("{path}.name"), &go_string(name)));
    }
}

/// `validateContainerCommon`: name, image, termination message policy, ports, env, mounts,
/// pull policy and resources.
fn common(c: &Value, path: &str, volumes: &Volumes<'_>, causes: &mut Vec<Cause>) {
    let name = text(c, "name");
    if name.is_empty() {
        causes.push(required(&format!("{path}.name"), ""));
    } else {
        for m in label_errors(name) {
            causes.push((format!("{path}.name"), invalid_value(name, &m)));
        }
    }
    if text(c, "image").is_empty() {
        causes.push(required(&format!("{path}.image"), ""));
    }
    one_of(
        c,
        "terminationMessagePolicy",
        path,
        MESSAGE_POLICIES,
        causes,
    );
    ports(c, &format!("{path}.ports"), causes);
    env::env(c, &format!("{path}.env"), causes);
    env::env_from(c, &format!("{path}.envFrom"), causes);
    volume_mounts(c, &format!("{path}.volumeMounts"), volumes, causes);
    one_of(c, "imagePullPolicy", path, PULL_POLICIES, causes);
    resources::requirements(c.get("resources"), &format!("{path}.resources"), causes);
    security::container_context(c, &format!("{path}.securityContext"), causes);
}

/// `Required` when the string at `key` is empty, `NotSupported` when it is not in `supported`.
pub(super) fn one_of(
    v: &Value,
    key: &str,
    path: &str,
    supported: &[&str],
    causes: &mut Vec<Cause>,
) {
    let at = format!("{path}.{key}");
    match text(v, key) {
        "" => causes.push(required(&at, "")),
        s if !supported.contains(&s) => causes.push(unsupported(&at, s, supported)),
        _ => {}
    }
}

/// `validateContainerPorts`.
fn ports(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    let mut names = BTreeSet::new();
    for (i, port) in items(c, "ports").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = text(port, "name");
        if !name.is_empty() {
            let errs = port_name_errors(name);
            if !errs.is_empty() {
                for m in errs {
                    causes.push((format!("{at}.name"), invalid_value(name, m)));
                }
            } else if !names.insert(name) {
                causes.push(duplicate(&format!("{at}.name"), &go_string(name)));
            }
        }
        let number = |key: &str| port.get(key).and_then(Value::as_i64).unwrap_or(0);
        match number("containerPort") {
            0 => causes.push(required(&format!("{at}.containerPort"), "")),
            n if !(1..=65535).contains(&n) => {
                causes.push(invalid(
                    &format!("{at}.containerPort"),
                    &n.to_string(),
                    PORT_RANGE,
                ));
            }
            _ => {}
        }
        let host = number("hostPort");
        if host != 0 && !(1..=65535).contains(&host) {
            causes.push(invalid(
                &format!("{at}.hostPort"),
                &host.to_string(),
                PORT_RANGE,
            ));
        }
        one_of(port, "protocol", &at, PROTOCOLS, causes);
    }
}

/// `AccumulateUniqueHostPorts`: a `protocol/hostIP/hostPort` used twice is a duplicate.
fn host_port_conflicts(list: &[Value], path: &str, causes: &mut Vec<Cause>) {
    let mut seen = BTreeSet::new();
    for (i, c) in list.iter().enumerate() {
        for (j, port) in items(c, "ports").iter().enumerate() {
            let host = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host == 0 {
                continue;
            }
            let key = format!("{}/{}/{host}", text(port, "protocol"), text(port, "hostIP"));
            if seen.contains(&key) {
                causes.push(duplicate(
                    &format!("{path}[{i}].ports[{j}].hostPort"),
                    &go_string(&key),
                ));
            } else {
                seen.insert(key);
            }
        }
    }
}
