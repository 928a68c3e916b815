//! Probes and lifecycle hooks (`pkg/apis/core/validation/validation.go`: `validateProbe`,
//! `validateLivenessProbe`, `validateReadinessProbe`, `validateStartupProbe`,
//! `validateHandler`, `validateLifecycle`, `ValidatePortNumOrName`).

use serde_json::Value;

use super::field::{forbidden, invalid, is_set, items, required, text, unsupported};
use super::port::num_or_name;
use super::{Cause, invalid_value};

const HEADER_NAME: &str = "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')";
const NON_NEGATIVE: &str = "must be greater than or equal to 0";
const ONE_HANDLER: &str = "may not specify more than 1 handler type";
/// The handlers of a probe, in the order Kubernetes counts them.
const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
/// The handlers of a lifecycle hook.
const HOOK_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

/// A container's lifecycle hooks and its liveness, readiness and startup probes, as
/// `validateContainers` checks them.
pub(super) fn lifecycle_and_probes(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    if let Some(lifecycle) = c.get("lifecycle").filter(|v| !v.is_null()) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lifecycle.get(hook).filter(|v| !v.is_null()) {
                handler(
                    h,
                    HOOK_HANDLERS,
                    &format!("{path}.lifecycle.{hook}"),
                    causes,
                );
            }
        }
    }
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = c.get(kind).filter(|v| !v.is_null()) else {
            continue;
        };
        let at = format!("{path}.{kind}");
        probe(p, &at, causes);
        let number = |key: &str| p.get(key).and_then(Value::as_i64);
        if kind == "readinessProbe" {
            if let Some(grace) = number("terminationGracePeriodSeconds") {
                causes.push(invalid(
                    &format!("{at}.terminationGracePeriodSeconds"),
                    &grace.to_string(),
                    "must not be set for readinessProbes",
                ));
            }
        } else {
            let success = number("successThreshold").unwrap_or(0);
            if success != 1 {
                causes.push(invalid(
                    &format!("{at}.successThreshold"),
                    &success.to_string(),
                    "must be 1",
                ));
            }
        }
    }
}

/// `validateProbe`: one handler, non-negative timings and thresholds, a positive grace period.
fn probe(p: &Value, path: &str, causes: &mut Vec<Cause>) {
    handler(p, PROBE_HANDLERS, path, causes);
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        let n = p.get(field).and_then(Value::as_i64).unwrap_or(0);
        if n < 0 {
            causes.push(invalid(
                &format!("{path}.{field}"),
                &n.to_string(),
                NON_NEGATIVE,
            ));
        }
    }
    if let Some(grace) = p
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        && grace <= 0
    {
        causes.push(invalid(
            &format!("{path}.terminationGracePeriodSeconds"),
            &grace.to_string(),
            "must be greater than 0",
        ));
    }
}

/// `validateHandler`: exactly one of `kinds`, each checked as Kubernetes does.
fn handler(h: &Value, kinds: &[&str], path: &str, causes: &mut Vec<Cause>) {
    let mut found = 0;
    for kind in kinds.iter().filter(|k| is_set(h, k)) {
        let at = format!("{path}.{kind}");
        if found > 0 {
            causes.push(forbidden(&at, ONE_HANDLER));
            continue;
        }
        found += 1;
        let action = &h[*kind];
        match *kind {
            "exec" if items(action, "command").is_empty() => {
                causes.push(required(&format!("{at}.command"), ""));
            }
            "httpGet" => {
                if text(action, "path").is_empty() {
                    causes.push(required(&format!("{at}.path"), ""));
                }
                num_or_name(action.get("port"), &format!("{at}.port"), causes);
                let scheme = text(action, "scheme");
                if !["HTTP", "HTTPS"].contains(&scheme) {
                    causes.push(unsupported(
                        &format!("{at}.scheme"),
                        scheme,
                        &["HTTP", "HTTPS"],
                    ));
                }
                // `IsHTTPHeaderName`, reported at the list's path as Kubernetes does.
                for header in items(action, "httpHeaders") {
                    let name = text(header, "name");
                    let valid = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
                    if !valid {
                        let at = format!("{at}.httpHeaders");
                        causes.push((at, invalid_value(name, HEADER_NAME)));
                    }
                }
            }
            "tcpSocket" | "grpc" => num_or_name(action.get("port"), &format!("{at}.port"), causes),
            _ => {}
        }
    }
    if found == 0 {
        causes.push(required(path, "must specify a handler type"));
    }
}
