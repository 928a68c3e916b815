//! A pod spec's tolerations (`ValidateTolerations` and `validateTaintEffect` of
//! `pkg/apis/core/validation/validation.go`).

use serde_json::Value;

use super::field::{go_string, invalid, is_set, items, text, unsupported};
use super::{Cause, invalid_value, label_value_errors, qualified_name_errors};

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const OPERATORS: &[&str] = &["Equal", "Exists"];
const KEY_EMPTY: &str =
    "operator must be Exists when `key` is empty, which means \"match all values and all keys\"";

/// `ValidateTolerations` of the tolerations at `path`.
pub(super) fn tolerations(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, t) in items(spec, "tolerations").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let (key, operator, effect) = (text(t, "key"), text(t, "operator"), text(t, "effect"));
        let operator_path = format!("{at}.operator");
        if !key.is_empty() {
            for m in qualified_name_errors(key) {
                causes.push((format!("{at}.key"), invalid_value(key, &m)));
            }
        }
        if key.is_empty() && operator != "Exists" {
            causes.push(invalid(&operator_path, &go_string(operator), KEY_EMPTY));
        }
        if is_set(t, "tolerationSeconds") && effect != "NoExecute" {
            causes.push(invalid(
                &format!("{at}.effect"),
                &go_string(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = text(t, "value");
        match operator {
            "Equal" | "" => {
                let errs = label_value_errors(value);
                if !errs.is_empty() {
                    causes.push(invalid(&operator_path, &go_string(value), &errs.join(";")));
                }
            }
            "Exists" if !value.is_empty() => causes.push(invalid(
                &operator_path,
                &go_string(value),
                "value must be empty when `operator` is 'Exists'",
            )),
            "Exists" => {}
            other => causes.push(unsupported(&operator_path, other, OPERATORS)),
        }
        if !effect.is_empty() && !EFFECTS.contains(&effect) {
            causes.push(unsupported(&format!("{at}.effect"), effect, EFFECTS));
        }
    }
}
