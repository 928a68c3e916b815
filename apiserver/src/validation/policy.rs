//! PodDisruptionBudgets (`pkg/apis/policy/validation/validation.go`:
//! `ValidatePodDisruptionBudgetSpec` with apps' `ValidatePositiveIntOrPercent` and
//! `IsNotMoreThan100Percent`) and Leases (`pkg/apis/coordination/validation/validation.go`).

use serde_json::{Map, Value};

use super::Cause;
use super::field::{forbidden, invalid, unsupported};

type Data = Map<String, Value>;

const PERCENT: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// An int-or-percent that must be non-negative and at most 100%.
fn int_or_percent(path: &str, value: &Value, causes: &mut Vec<Cause>) {
    match value {
        Value::Number(n) => {
            let n = n.as_i64().unwrap_or(0);
            if n < 0 {
                causes.push(invalid(
                    path,
                    &n.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
        }
        Value::String(s) => {
            // intstr.IntOrString prints through its String(): the text, unquoted.
            let digits = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            match digits {
                None => causes.push(invalid(path, s, PERCENT)),
                Some(d) if d.parse::<u64>().is_ok_and(|p| p > 100) => {
                    causes.push(invalid(path, s, "must not be greater than 100%"));
                }
                Some(_) => {}
            }
        }
        _ => {}
    }
}

/// `ValidatePodDisruptionBudgetSpec`: one of minAvailable and maxUnavailable, each an
/// int-or-percent, a valid selector and a supported unhealthy pod eviction policy.
pub(crate) fn pod_disruption_budget(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    let min = spec.get("minAvailable").filter(|v| !v.is_null());
    let max = spec.get("maxUnavailable").filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        causes.push(invalid(
            "spec",
            &spec.to_string(),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    if let Some(min) = min {
        int_or_percent("spec.minAvailable", min, &mut causes);
    }
    if let Some(max) = max {
        int_or_percent("spec.maxUnavailable", max, &mut causes);
    }
    if let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) {
        causes.extend(super::label_selector("spec.selector", selector));
    }
    const POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];
    if let Some(policy) = spec["unhealthyPodEvictionPolicy"]
        .as_str()
        .filter(|p| !POLICIES.contains(p))
    {
        causes.push(unsupported(
            "spec.unhealthyPodEvictionPolicy",
            policy,
            POLICIES,
        ));
    }
    causes
}

/// `ValidateLeaseSpec`: a positive duration, non-negative transitions, a preferred holder
/// only with a strategy.
pub(crate) fn lease(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    if let Some(d) = spec
        .get("leaseDurationSeconds")
        .and_then(Value::as_i64)
        .filter(|d| *d <= 0)
    {
        causes.push(invalid(
            "spec.leaseDurationSeconds",
            &d.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(t) = spec
        .get("leaseTransitions")
        .and_then(Value::as_i64)
        .filter(|t| *t < 0)
    {
        causes.push(invalid(
            "spec.leaseTransitions",
            &t.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    let holder = spec["preferredHolder"]
        .as_str()
        .is_some_and(|h| !h.is_empty());
    if holder && spec["strategy"].as_str().is_none_or(str::is_empty) {
        causes.push(forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
    causes
}
