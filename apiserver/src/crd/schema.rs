//! Custom objects against a version's `openAPIV3Schema`: unknown fields pruned unless
//! `x-kubernetes-preserve-unknown-fields` (`pkg/apiserver/schema/pruning`), `default`s applied
//! (`pkg/apiserver/schema/defaulting`), then the value checked (types, `required`, `enum`,
//! bounds, lengths and item counts) with the messages and field paths of Kubernetes' OpenAPI
//! schema validator.

use serde_json::{Map, Value};

use crate::validation::Cause;

use super::{formats, rules};

/// The fields every object keeps at its root, whatever its schema says.
const ROOT_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// Prunes unknown fields from `obj` (a whole object) and applies `default`s.
pub(crate) fn prune_and_default(schema: &Value, obj: &mut Map<String, Value>) {
    walk_object(schema, obj, true);
}

fn walk(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => walk_object(schema, map, false),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    walk(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// Whether pruning keeps field `name` of an object of `schema` (at the object's `root`).
fn keeps(schema: &Value, root: bool, name: &str) -> bool {
    flag(schema, "x-kubernetes-preserve-unknown-fields")
        || schema
            .get("additionalProperties")
            .is_some_and(Value::is_object)
        || (root && ROOT_FIELDS.contains(&name))
        || schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(name))
}

/// The schema of field `name` of an object of `schema`: its property, or
/// `additionalProperties`.
fn field_schema<'s>(schema: &'s Value, name: &str) -> Option<&'s Value> {
    schema
        .get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| schema.get("additionalProperties").filter(|v| v.is_object()))
}

fn walk_object(schema: &Value, map: &mut Map<String, Value>, root: bool) {
    map.retain(|k, _| keeps(schema, root, k));
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            if root && ROOT_FIELDS.contains(&name.as_str()) {
                continue;
            }
            if let Some(default) = sub.get("default").filter(|_| !map.contains_key(name)) {
                map.insert(name.clone(), default.clone());
            }
        }
    }
    for (name, value) in map.iter_mut() {
        if root && ROOT_FIELDS.contains(&name.as_str()) {
            continue;
        }
        if let Some(sub) = field_schema(schema, name) {
            walk(sub, value);
        }
    }
}

/// The paths of the fields pruning would drop from `obj` (a whole object, its `metadata` left
/// out): what a custom resource's strict decoding reports as unknown fields.
pub(crate) fn pruned_paths(schema: &Value, obj: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    collect_pruned(schema, obj, true, "", &mut out);
    out
}

fn collect_pruned(
    schema: &Value,
    map: &Map<String, Value>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    for (name, value) in map {
        if root && ROOT_FIELDS.contains(&name.as_str()) {
            continue;
        }
        let field = join(path, name);
        if !keeps(schema, root, name) {
            out.push(field);
        } else if let Some(sub) = field_schema(schema, name) {
            match value {
                Value::Object(m) => collect_pruned(sub, m, false, &field, out),
                Value::Array(items) => collect_items(sub, items, &field, out),
                _ => {}
            }
        }
    }
}

fn collect_items(schema: &Value, items: &[Value], path: &str, out: &mut Vec<String>) {
    let Some(item_schema) = schema.get("items") else {
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        match item {
            Value::Object(m) => collect_pruned(item_schema, m, false, &item_path, out),
            Value::Array(nested) => collect_items(item_schema, nested, &item_path, out),
            _ => {}
        }
    }
}

/// The causes of `obj` (a whole object) not matching `schema`.
#[cfg(test)]
pub(crate) fn check_object(schema: &Value, obj: &Map<String, Value>) -> Vec<Cause> {
    check_custom(schema, obj, || Value::Object(obj.clone()), || None)
}

/// The causes of a custom object whose fields below the root are `obj` not matching `schema`;
/// `whole` makes the whole object (with `apiVersion`, `kind`, `metadata`) and `old_whole` the
/// whole old object of an update, when rules need them.
pub(crate) fn check_custom(
    schema: &Value,
    obj: &Map<String, Value>,
    whole: impl FnOnce() -> Value,
    old_whole: impl FnOnce() -> Option<Value>,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut trimmed = obj.clone();
    trimmed.retain(|k, _| !ROOT_FIELDS.contains(&k.as_str()));
    let mut root = schema.clone();
    if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
        props.retain(|k, _| !ROOT_FIELDS.contains(&k.as_str()));
    }
    check(&root, &Value::Object(trimmed.clone()), "", &mut causes);
    super::lists::check(&root, &trimmed, "", &mut causes);
    if rules::has_rules(&root) {
        if rules::blocked(&causes) {
            causes.push(rules::skipped());
        } else {
            // The root's rules see apiVersion, kind and the name; the rest only their node.
            let old = old_whole();
            let old_root = old
                .as_ref()
                .and_then(Value::as_object)
                .map(rules::root_self);
            if root.get("x-kubernetes-validations").is_some() {
                let whole = whole();
                let root_self = whole.as_object().map(rules::root_self).unwrap_or_default();
                rules::check_node(&root, &root_self, old_root.as_ref(), "", &mut causes);
            }
            let mut below = root.clone();
            if let Some(map) = below.as_object_mut() {
                map.remove("x-kubernetes-validations");
            }
            let old_below = old_root.map(|mut o| {
                if let Some(map) = o.as_object_mut() {
                    map.retain(|k, _| !ROOT_FIELDS.contains(&k.as_str()));
                }
                o
            });
            let new_below = Value::Object(trimmed);
            rules::walk(&below, &new_below, old_below.as_ref(), "", &mut causes);
        }
    }
    causes
}

pub(super) fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

/// Go's `%v`-like rendering of a value in a message: strings quoted, the rest as JSON.
fn shown(value: &Value) -> String {
    value.to_string()
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => true,
    }
}

fn check(schema: &Value, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    if value.is_null() && flag(schema, "nullable") {
        return;
    }
    let int_or_string = flag(schema, "x-kubernetes-int-or-string");
    if int_or_string && !(value.is_string() || value.is_i64() || value.is_u64()) {
        causes.push((
            path.to_owned(),
            format!(
                "Invalid value: {}: {path} in body must be of type integer,string: {}",
                shown(value),
                shown(value)
            ),
        ));
        return;
    }
    if let Some(ty) = schema.get("type").and_then(Value::as_str)
        && !int_or_string
        && !type_matches(ty, value)
    {
        let got = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_f64() => "number",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        causes.push((
            path.to_owned(),
            format!(
                "Invalid value: {:?}: {path} in body must be of type {ty}: {:?}",
                got, got
            ),
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(shown).collect();
        causes.push((
            path.to_owned(),
            format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                list.join(", ")
            ),
        ));
    }
    bounds(schema, value, path, causes);
    if let Value::String(text) = value {
        strings(schema, text, path, causes);
    }
    match value {
        Value::Object(map) => {
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !map.contains_key(name) {
                    causes.push((join(path, name), "Required value".to_owned()));
                }
            }
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties").filter(|v| v.is_object());
            for (name, sub_value) in map {
                if let Some(sub) = props.and_then(|p| p.get(name)).or(extra) {
                    check(sub, sub_value, &join(path, name), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

/// `pattern` and `format`, with kube-openapi's messages.
fn strings(schema: &Value, text: &str, path: &str, causes: &mut Vec<Cause>) {
    let shown = Value::from(text).to_string();
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && formats::matches(pattern, text) == Some(false)
    {
        causes.push((
            path.to_owned(),
            format!("Invalid value: {shown}: {path} in body should match '{pattern}'"),
        ));
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str)
        && formats::valid(format, text) == Some(false)
    {
        causes.push((
            path.to_owned(),
            format!("Invalid value: {shown}: {path} in body must be of type {format}: {shown}"),
        ));
    }
}

/// `minimum`/`maximum` (and their exclusive forms), `minLength`/`maxLength`,
/// `minItems`/`maxItems`, `minProperties`/`maxProperties`.
fn bounds(schema: &Value, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    let num = |name: &str| schema.get(name).and_then(Value::as_f64);
    let count = |name: &str| schema.get(name).and_then(Value::as_u64);
    let invalid = |detail: String| {
        (
            path.to_owned(),
            format!("Invalid value: {}: {detail}", shown(value)),
        )
    };
    if let Some(n) = value.as_f64() {
        let fmt = |b: f64| Value::from(b).to_string().trim_end_matches(".0").to_owned();
        if let Some(min) = num("minimum") {
            if flag(schema, "exclusiveMinimum") && n <= min {
                causes.push(invalid(format!(
                    "{path} in body should be greater than {}",
                    fmt(min)
                )));
            } else if n < min {
                causes.push(invalid(format!(
                    "{path} in body should be greater than or equal to {}",
                    fmt(min)
                )));
            }
        }
        if let Some(max) = num("maximum") {
            if flag(schema, "exclusiveMaximum") && n >= max {
                causes.push(invalid(format!(
                    "{path} in body should be less than {}",
                    fmt(max)
                )));
            } else if n > max {
                causes.push(invalid(format!(
                    "{path} in body should be less than or equal to {}",
                    fmt(max)
                )));
            }
        }
    }
    // (the length keyword pair, the length, and what the minimum's message counts)
    let counted = match value {
        Value::String(s) => Some((("minLength", "maxLength"), s.chars().count(), "chars long")),
        Value::Array(items) => Some((("minItems", "maxItems"), items.len(), "items")),
        Value::Object(map) => Some((("minProperties", "maxProperties"), map.len(), "properties")),
        _ => None,
    };
    let Some(((min_key, max_key), len, unit)) = counted else {
        return;
    };
    let len = len as u64;
    if let Some(min) = count(min_key).filter(|&m| len < m) {
        let detail = if value.is_string() {
            format!("{path} in body should be at least {min} {unit}")
        } else {
            format!("{path} in body should have at least {min} {unit}")
        };
        causes.push(invalid(detail));
    }
    if let Some(max) = count(max_key).filter(|&m| len > m) {
        let message = if value.is_string() {
            format!("Too long: may not be more than {max} bytes")
        } else {
            format!("Too many: {len}: must have at most {max} items")
        };
        causes.push((path.to_owned(), message));
    }
}
