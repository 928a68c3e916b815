//! Field errors worded as Kubernetes' `field.Error` (`k8s.io/apimachinery/pkg/util/validation/
//! field/errors.go`), and Go's `%#v` of the values they quote.

use serde_json::{Map, Value};

use super::Cause;

/// `Required value` (with `: detail` when there is one).
pub(crate) fn required(path: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_owned()
    } else {
        format!("Required value: {detail}")
    };
    (path.to_owned(), message)
}

/// `Invalid value: VALUE: detail`, VALUE already printed as Go does.
pub(crate) fn invalid(path: &str, value: &str, detail: &str) -> Cause {
    (path.to_owned(), format!("Invalid value: {value}: {detail}"))
}

/// `Forbidden: detail`.
pub(crate) fn forbidden(path: &str, detail: &str) -> Cause {
    (path.to_owned(), format!("Forbidden: {detail}"))
}

/// `Unsupported value: "VALUE": supported values: "A", "B"`.
pub(crate) fn unsupported(path: &str, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| go_string(s)).collect();
    (
        path.to_owned(),
        format!(
            "Unsupported value: {}: supported values: {}",
            go_string(value),
            list.join(", ")
        ),
    )
}

/// `Duplicate value: VALUE`, VALUE already printed as Go does.
pub(crate) fn duplicate(path: &str, value: &str) -> Cause {
    (path.to_owned(), format!("Duplicate value: {value}"))
}

/// `Not found: VALUE`, VALUE already printed as Go does.
pub(crate) fn not_found(path: &str, value: &str) -> Cause {
    (path.to_owned(), format!("Not found: {value}"))
}

/// The string at `key` of `value`, `""` when absent or not a string (Go's zero value).
pub(crate) fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The items of the list at `key` of `value` (none when absent).
pub(crate) fn items<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Whether `value` has a non-null `key` (a Go pointer that is set).
pub(crate) fn is_set(value: &Value, key: &str) -> bool {
    value.get(key).is_some_and(|v| !v.is_null())
}

/// A Go string literal (`"abc"`).
pub(crate) fn go_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// A JSON scalar as Go prints it (strings quoted, numbers and booleans plain).
pub(crate) fn go_scalar(v: &Value) -> String {
    match v {
        Value::String(s) => go_string(s),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

/// `[]string{"a", "b"}`.
pub(crate) fn go_strings<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_string(s.as_ref())).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `map[string]string{"a":"b", "c":"d"}` (keys sorted, as Go prints maps); `map[string]string(nil)`
/// for none.
pub(crate) fn go_string_map(map: Option<&Map<String, Value>>) -> String {
    let Some(map) = map else {
        return "map[string]string(nil)".to_owned();
    };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_key(|(k, _)| *k);
    let text: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}:{}", go_string(k), go_scalar(v)))
        .collect();
    format!("map[string]string{{{}}}", text.join(", "))
}

/// The values of a label selector requirement (`{"key", "operator", "values"}`).
pub(crate) fn requirement_values(requirement: &Value) -> Vec<&str> {
    requirement["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A `metav1.LabelSelector` as `%#v` prints it.
pub(crate) fn go_label_selector(selector: &Value) -> String {
    let labels = go_string_map(selector.get("matchLabels").and_then(Value::as_object));
    let expressions = match selector.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|r| {
                    let values = if r["values"].is_array() {
                        go_strings(&requirement_values(r))
                    } else {
                        "[]string(nil)".to_owned()
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                        go_scalar(&r["key"]),
                        go_scalar(&r["operator"])
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(
            go_string_map(json!({"b": "2", "a": "1"}).as_object()),
            r#"map[string]string{"a":"1", "b":"2"}"#
        );
        assert_eq!(go_strings(&["x", "y"]), r#"[]string{"x", "y"}"#);
        assert_eq!(
            go_label_selector(&json!({"matchLabels": {"app": "web"}})),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
    }
}
