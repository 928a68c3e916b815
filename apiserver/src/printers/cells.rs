//! What cells are made of, as `printers.go` prints them.

use kube_core::Resource;
use serde_json::{Map, Value};

use crate::object::Object;

/// `<none>`, what an empty cell shows.
pub(super) const NONE: &str = "<none>";

/// The name cell: the name, and ` (default)` after a default StorageClass's
/// (`printStorageClass` with `storageutil.IsDefaultAnnotation`).
pub(super) fn name(obj: &Object) -> String {
    let meta = obj.meta();
    let name = meta.name.clone().unwrap_or_default();
    let is_default = obj.kind() == "StorageClass"
        && meta.annotations.as_ref().is_some_and(|a| {
            [
                "storageclass.kubernetes.io/is-default-class",
                "storageclass.beta.kubernetes.io/is-default-class",
            ]
            .iter()
            .any(|k| a.get(*k).is_some_and(|v| v == "true"))
        });
    if is_default {
        format!("{name} (default)")
    } else {
        name
    }
}

/// A duration as `kubectl` shows ages (`duration.HumanDuration`: `45s`, `5m10s`, `3h`, `2d`).
pub(super) fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => match s % 60 {
            0 => format!("{m}m"),
            r => format!("{m}m{r}s"),
        },
        s if s < 3 * 3600 => format!("{m}m"),
        s if s < 8 * 3600 => match m % 60 {
            0 => format!("{h}h"),
            r => format!("{h}h{r}m"),
        },
        s if s < 48 * 3600 => format!("{h}h"),
        s if s < 8 * 86400 => match h % 24 {
            0 => format!("{d}d"),
            r => format!("{d}d{r}h"),
        },
        s if s < 2 * 365 * 86400 => format!("{d}d"),
        _ => format!("{}y", d / 365),
    }
}

fn seconds_since(timestamp: &str) -> Option<i64> {
    let t: k8s_openapi::jiff::Timestamp = timestamp.parse().ok()?;
    Some(k8s_openapi::jiff::Timestamp::now().as_second() - t.as_second())
}

/// The age of a timestamp (`<unknown>` without one).
pub(super) fn age_of(timestamp: Option<&str>) -> Value {
    Value::String(
        timestamp
            .and_then(seconds_since)
            .map_or_else(|| "<unknown>".to_owned(), human_duration),
    )
}

/// The age of an object.
pub(super) fn age(obj: &Object) -> Value {
    let created = obj
        .meta()
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string());
    age_of(created.as_deref())
}

/// The value at a simple JSON path (`.spec.replicas`, `.status.conditions[0].type`); Null when
/// absent.
pub(super) fn at_path(value: &Value, path: &str) -> Value {
    let mut cur = value;
    for part in path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
    {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        cur = &cur[key];
        if let Some(i) = index {
            cur = &cur[i];
        }
    }
    cur.clone()
}

/// The cell of a custom resource's printer column of type `type_` holding `value` (the
/// apiextensions-apiserver's tableconvertor: `cellForJSONValue`, and JSONPath's printing for
/// `string` columns): integers, numbers and booleans as such, strings as JSONPath prints any
/// value (arrays and objects as JSON), dates as ages (`<invalid>` when not RFC 3339 or in the
/// future, `<unknown>` empty or at the zero time); a value of another type, or a column of
/// another type, empty.
pub(super) fn custom_cell(type_: &str, value: Value) -> Value {
    match (type_, value) {
        ("integer", Value::Number(n)) => n
            .as_i64()
            // Go converts a float64 to int64 by truncation; `as` does the same.
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", v @ Value::Bool(_)) => v,
        ("string", Value::Null) => Value::Null,
        ("string", Value::String(s)) => Value::String(s),
        ("string", v @ (Value::Bool(_) | Value::Number(_))) => Value::String(v.to_string()),
        ("string", v) => Value::String(v.to_string()),
        // metav1.Time's UnmarshalQueryParameter reads "" as the zero time.
        ("date", Value::String(s)) if s.is_empty() => Value::String("<unknown>".to_owned()),
        ("date", Value::String(s)) => match s.parse::<k8s_openapi::jiff::Timestamp>() {
            Err(_) => Value::String("<invalid>".to_owned()),
            Ok(t) if t.as_second() == ZERO_TIME => Value::String("<unknown>".to_owned()),
            Ok(t) => {
                let secs = k8s_openapi::jiff::Timestamp::now().as_second() - t.as_second();
                // duration.HumanDuration: more than a second in the future is invalid.
                Value::String(if secs < -1 {
                    "<invalid>".to_owned()
                } else {
                    human_duration(secs)
                })
            }
        },
        _ => Value::Null,
    }
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds.
const ZERO_TIME: i64 = -62_135_596_800;

/// The value at a JSON pointer into an object's fields (`/spec/replicas`).
pub(super) fn at<'a>(data: &'a Map<String, Value>, pointer: &str) -> Option<&'a Value> {
    let path = pointer.trim_start_matches('/');
    let (first, rest) = path.split_once('/').unwrap_or((path, ""));
    let value = data.get(first)?;
    if rest.is_empty() {
        Some(value)
    } else {
        value.pointer(&format!("/{rest}"))
    }
}

/// The items of the list at a JSON pointer (none when absent).
pub(super) fn items<'a>(
    data: &'a Map<String, Value>,
    pointer: &str,
) -> impl Iterator<Item = &'a Value> {
    at(data, pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// An integer at a JSON pointer (0 when absent).
pub(super) fn int(data: &Map<String, Value>, pointer: &str) -> i64 {
    at(data, pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// A string at a JSON pointer (`""` when absent).
pub(super) fn text<'a>(data: &'a Map<String, Value>, pointer: &str) -> &'a str {
    at(data, pointer).and_then(Value::as_str).unwrap_or("")
}

/// `text` or `<none>` when empty.
pub(super) fn or_none(s: &str) -> Value {
    Value::String(if s.is_empty() { NONE } else { s }.to_owned())
}

/// `k=v,k2=v2` of a string map (sorted by key, as Go's label sets print).
pub(super) fn labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// A label selector as `metav1.LabelSelectorAsSelector(...).String()` prints it.
pub(super) fn selector(selector: Option<&Value>) -> Value {
    let Some(sel) = selector else {
        return or_none("");
    };
    let mut parts: Vec<String> = labels(sel.get("matchLabels"))
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    for r in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = r["key"].as_str().unwrap_or("");
        let values: Vec<&str> = r["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match r["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other}"),
        });
    }
    parts.sort();
    or_none(&parts.join(","))
}

/// The names and images of a pod spec's containers (`CONTAINERS` and `IMAGES` cells).
pub(super) fn containers(pod_spec: Option<&Value>) -> [Value; 2] {
    let list: Vec<&Value> = pod_spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let join = |field: &str| {
        list.iter()
            .map(|c| c[field].as_str().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(",")
    };
    [Value::String(join("name")), Value::String(join("image"))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_kubectl_ages() {
        for (secs, text) in [
            (45, "45s"),
            (150, "2m30s"),
            (900, "15m"),
            (4 * 3600 + 120, "4h2m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 3600, "3d1h"),
            (40 * 86400, "40d"),
        ] {
            assert_eq!(human_duration(secs), text);
        }
    }
}
