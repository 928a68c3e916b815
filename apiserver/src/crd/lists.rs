//! The uniqueness invariants of `x-kubernetes-list-type` `set` (whole items) and `map` (the
//! `x-kubernetes-list-map-keys`) on custom objects, as `ValidateListSetsAndMaps` in
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype/validation.go`: each repeated
//! item (or key) is a `Duplicate value` at its second appearance, once per value.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::validation::Cause;

use super::schema::join;

/// The duplicate causes in `obj` (the object's fields below its root, at `path`).
pub(crate) fn check(schema: &Value, obj: &Map<String, Value>, path: &str, out: &mut Vec<Cause>) {
    let props = schema.get("properties").and_then(Value::as_object);
    let extra = schema.get("additionalProperties").filter(|v| v.is_object());
    for (name, value) in obj {
        if let Some(sub) = props.and_then(|p| p.get(name)) {
            check_value(sub, value, &join(path, name), out);
        }
        if let Some(sub) = extra {
            check_value(sub, value, &format!("{path}[{name}]"), out);
        }
    }
}

fn check_value(schema: &Value, value: &Value, path: &str, out: &mut Vec<Cause>) {
    match value {
        Value::Object(map) => check(schema, map, path, out),
        Value::Array(items) => check_array(schema, items, path, out),
        _ => {}
    }
}

fn check_array(schema: &Value, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for i in repeated(items.iter()) {
                out.push(duplicate(path, i, &items[i]));
            }
        }
        Some("map") => check_map(schema, items, path, out),
        _ => {}
    }
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            check_value(item_schema, item, &format!("{path}[{i}]"), out);
        }
    }
}

fn check_map(schema: &Value, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
        out.push((
            format!("{path}[{i}]"),
            format!(
                "Invalid value: {}: must be an object for an array of list-type map",
                items[i]
            ),
        ));
        return;
    }
    let key_fields: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    // Each item's key: the key fields it has (an unspecified key is the empty object).
    let keys: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key = Map::new();
            for field in &key_fields {
                if let Some(v) = item.get(field) {
                    key.insert((*field).to_owned(), v.clone());
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in repeated(keys.iter()) {
        out.push(duplicate(path, i, &keys[i]));
    }
}

/// The indexes of the second appearance of each value that appears more than once.
fn repeated<'v>(items: impl Iterator<Item = &'v Value>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let times = seen.entry(canonical(item)).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// `value` as JSON with object keys sorted (as Go marshals a map), so equal values compare equal.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut fields: Vec<(&String, &Value)> = map.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = fields
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), canonical(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

fn duplicate(path: &str, i: usize, value: &Value) -> Cause {
    (
        format!("{path}[{i}]"),
        format!("Duplicate value: {}", canonical(value)),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::check;

    fn causes(schema: serde_json::Value, obj: serde_json::Value) -> Vec<(String, String)> {
        let mut out = Vec::new();
        check(&schema, obj.as_object().unwrap(), "", &mut out);
        out
    }

    #[test]
    fn set_duplicates_are_reported_once_at_their_second_appearance() {
        let schema = json!({"properties": {"spec": {"properties": {"tags": {
            "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}}});
        let got = causes(
            schema,
            json!({"spec": {"tags": ["a", "b", "a", "a", "b", "c"]}}),
        );
        assert_eq!(
            got,
            [
                (
                    "spec.tags[2]".to_owned(),
                    "Duplicate value: \"a\"".to_owned()
                ),
                (
                    "spec.tags[4]".to_owned(),
                    "Duplicate value: \"b\"".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn map_duplicates_name_the_keys() {
        let schema = json!({"properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object"}}}});
        let got = causes(
            schema,
            json!({"ports": [
                {"port": 80, "protocol": "TCP", "name": "a"},
                {"protocol": "TCP", "port": 80, "name": "b"},
                {"port": 80, "protocol": "UDP"}]}),
        );
        assert_eq!(
            got,
            [(
                "ports[1]".to_owned(),
                "Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}".to_owned()
            )]
        );
    }

    #[test]
    fn map_items_must_be_objects() {
        let schema = json!({"properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port"]}}});
        let got = causes(schema, json!({"ports": [{"port": 1}, 3]}));
        assert_eq!(
            got,
            [(
                "ports[1]".to_owned(),
                "Invalid value: 3: must be an object for an array of list-type map".to_owned()
            )]
        );
    }
}
