//! Node affinity (`pkg/apis/core/validation/validation.go`: `validateNodeAffinity`,
//! `ValidateNodeSelector`, `ValidateNodeSelectorRequirement`,
//! `ValidateNodeFieldSelectorRequirement`, `ValidatePreferredSchedulingTerms`).

use serde_json::Value;

use super::field::{forbidden, go_string, invalid, items, required, text};
use super::{Cause, invalid_value, label_value_errors, qualified_name_errors, subdomain_errors};

/// The strings of the `values` of a requirement.
fn values(requirement: &Value) -> Vec<&str> {
    items(requirement, "values")
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// `validateNodeAffinity` of `spec.affinity.nodeAffinity` at `path`.
pub(super) fn node_affinity(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(affinity) = spec
        .pointer("/affinity/nodeAffinity")
        .filter(|a| a.is_object())
    else {
        return;
    };
    let required_key = "requiredDuringSchedulingIgnoredDuringExecution";
    if let Some(selector) = affinity.get(required_key).filter(|s| s.is_object()) {
        let terms_path = format!("{path}.{required_key}.nodeSelectorTerms");
        let terms = items(selector, "nodeSelectorTerms");
        if terms.is_empty() {
            causes.push(required(
                &terms_path,
                "must have at least one node selector term",
            ));
        }
        for (i, term) in terms.iter().enumerate() {
            selector_term(term, true, &format!("{terms_path}[{i}]"), causes);
        }
    }
    let preferred_key = "preferredDuringSchedulingIgnoredDuringExecution";
    for (i, term) in items(affinity, preferred_key).iter().enumerate() {
        let at = format!("{path}.{preferred_key}[{i}]");
        let weight = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=100).contains(&weight) {
            causes.push(invalid(
                &format!("{at}.weight"),
                &weight.to_string(),
                "must be in the range 1-100",
            ));
        }
        // Preferred terms may name label values that are not valid (a one-node cluster).
        let preference = term.get("preference").unwrap_or(&Value::Null);
        selector_term(preference, false, &format!("{at}.preference"), causes);
    }
}

/// `ValidateNodeSelectorTerm`: its label requirements, then its field requirements.
fn selector_term(term: &Value, check_values: bool, path: &str, causes: &mut Vec<Cause>) {
    for (j, r) in items(term, "matchExpressions").iter().enumerate() {
        label_requirement(
            r,
            check_values,
            &format!("{path}.matchExpressions[{j}]"),
            causes,
        );
    }
    for (j, r) in items(term, "matchFields").iter().enumerate() {
        field_requirement(r, &format!("{path}.matchFields[{j}]"), causes);
    }
}

/// `ValidateNodeSelectorRequirement`.
fn label_requirement(r: &Value, check_values: bool, path: &str, causes: &mut Vec<Cause>) {
    let list = values(r);
    let values_path = format!("{path}.values");
    match text(r, "operator") {
        "In" | "NotIn" if list.is_empty() => causes.push(required(
            &values_path,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !list.is_empty() => causes.push(forbidden(
            &values_path,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if list.len() != 1 => causes.push(required(
            &values_path,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => causes.push(invalid(
            &format!("{path}.operator"),
            &go_string(other),
            "not a valid selector operator",
        )),
    }
    let key = text(r, "key");
    for m in qualified_name_errors(key) {
        causes.push((format!("{path}.key"), invalid_value(key, &m)));
    }
    if check_values {
        for (i, value) in list.iter().enumerate() {
            for m in label_value_errors(value) {
                causes.push((format!("{values_path}[{i}]"), invalid_value(value, &m)));
            }
        }
    }
}

/// `ValidateNodeFieldSelectorRequirement`: one value for `In`/`NotIn`, the key
/// `metadata.name` with node names as values.
fn field_requirement(r: &Value, path: &str, causes: &mut Vec<Cause>) {
    let list = values(r);
    match text(r, "operator") {
        "In" | "NotIn" if list.len() != 1 => causes.push(required(
            &format!("{path}.values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )),
        "In" | "NotIn" => {}
        other => causes.push(invalid(
            &format!("{path}.operator"),
            &go_string(other),
            "not a valid selector operator",
        )),
    }
    let key = text(r, "key");
    if key != "metadata.name" {
        causes.push(invalid(
            &format!("{path}.key"),
            &go_string(key),
            "not a valid field selector key",
        ));
        return;
    }
    for (i, value) in list.iter().enumerate() {
        for m in subdomain_errors(value) {
            causes.push((format!("{path}.values[{i}]"), invalid_value(value, &m)));
        }
    }
}
