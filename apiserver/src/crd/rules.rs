//! CEL validation rules of a CRD schema (`x-kubernetes-validations`), with the `cel` crate
//! (cel-rust): compiled when a CRD is written (a rule that does not compile refuses the CRD,
//! as `ValidateCustomResourceDefinitionOpenAPISchema`), evaluated with `self` bound to each
//! node of a custom object that has rules, and failures reported as
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go` does.

use std::sync::Arc;

use cel::objects::OptionalValue;
use cel::{Context, Value as Cel};
use serde_json::{Map, Value};

use crate::validation::Cause;

use super::cel_env::{compiled, context};

const REASONS: [&str; 4] = [
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

fn text<'v>(rule: &'v Value, name: &str) -> Option<&'v str> {
    rule.get(name).and_then(Value::as_str)
}

/// The CRD-time checks of the rules of one schema node at `path` (its `x-kubernetes-validations`
/// field errors).
pub(crate) fn check_crd_node(schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let source = text(rule, "rule").unwrap_or("").trim();
        if source.is_empty() {
            causes.push((
                format!("{at}.rule"),
                "Required value: rule is not specified".to_owned(),
            ));
            continue;
        }
        if let Some(reason) = text(rule, "reason")
            && !REASONS.contains(&reason)
        {
            let supported: Vec<String> = REASONS.iter().map(|r| format!("{r:?}")).collect();
            causes.push((
                format!("{at}.reason"),
                format!(
                    "Unsupported value: {reason:?}: supported values: {}",
                    supported.join(", ")
                ),
            ));
            continue;
        }
        match compiled(source) {
            Err(error) => causes.push((
                format!("{at}.rule"),
                format!(
                    "Invalid value: {}: compilation failed: {error}",
                    Value::from(source)
                ),
            )),
            Ok(program) => {
                if rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true)
                    && !program.references().has_variable("oldSelf")
                {
                    causes.push((
                        format!("{at}.optionalOldSelf"),
                        "Invalid value: true: may not be set if oldSelf is not used in rule"
                            .to_owned(),
                    ));
                }
            }
        }
        if let Some(expression) = text(rule, "messageExpression") {
            let at = format!("{at}.messageExpression");
            if expression.trim().is_empty() {
                causes.push((
                    at,
                    "Required value: messageExpression must be non-empty if specified".to_owned(),
                ));
            } else if let Err(error) = compiled(expression.trim()) {
                causes.push((
                    at,
                    format!(
                        "Invalid value: {}: messageExpression compilation failed: {error}",
                        Value::from(expression)
                    ),
                ));
            }
        }
    }
}

/// The value Kubernetes shows for a failed rule: the node's schema type.
fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

/// `path` extended by a rule's `fieldPath` (`.a.b`, `['a']`, `[0]`).
fn with_field_path(path: &str, field_path: &str) -> String {
    let mut out = path.to_owned();
    for part in field_path.split_inclusive(['.', '[']) {
        let part = part.trim_end_matches(['.', '[']);
        if part.is_empty() {
            continue;
        }
        let segment = part.trim_end_matches(']').trim_matches('\'');
        if part.ends_with(']') && segment.parse::<usize>().is_ok() {
            out = format!("{out}[{segment}]");
        } else {
            out = super::schema::join(&out, segment);
        }
    }
    out
}

/// The cause of a rule that failed (`detail` from its message or its text).
fn failure(schema: &Value, rule: &Value, path: &str, detail: &str) -> Cause {
    let path = match text(rule, "fieldPath").filter(|p| !p.is_empty()) {
        Some(field_path) => with_field_path(path, field_path),
        None => path.to_owned(),
    };
    let shown = Value::from(schema_type(schema)).to_string();
    let message = match text(rule, "reason").unwrap_or("FieldValueInvalid") {
        "FieldValueForbidden" => format!("Forbidden: {detail}"),
        "FieldValueRequired" => format!("Required value: {detail}"),
        "FieldValueDuplicate" => format!("Duplicate value: {shown}"),
        _ => format!("Invalid value: {shown}: {detail}"),
    };
    (
        if path.is_empty() {
            "<nil>".to_owned()
        } else {
            path
        },
        message,
    )
}

/// The detail a failed rule's `messageExpression` gives, if it evaluates to a usable string
/// (non-empty once trimmed, one line, at most 5120 bytes); else the static message is used.
fn expressed(rule: &Value, context: &Context<'_, '_>) -> Option<String> {
    let source = text(rule, "messageExpression")?.trim();
    let program = compiled(source).ok()?;
    match program.execute(context) {
        Ok(Cel::String(s)) => {
            let s = s.trim();
            (!s.is_empty() && !s.contains(['\n', '\r']) && s.len() <= 5120).then(|| s.to_owned())
        }
        _ => None,
    }
}

/// Evaluates the rules of one node whose value is `value` at `path`; `old` is its old value on
/// an update where one correlates (transition rules run only with one, unless
/// `optionalOldSelf`).
pub(crate) fn check_node(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    else {
        return;
    };
    let Ok(bound) = cel::to_value(value) else {
        return;
    };
    let old_bound = old.and_then(|o| cel::to_value(o).ok());
    for rule in rules {
        let Some(source) = text(rule, "rule").map(str::trim) else {
            continue;
        };
        let Ok(program) = compiled(source) else {
            continue;
        };
        let Some(mut context) = context() else {
            return;
        };
        context.add_variable_from_value("self", bound.clone());
        if program.references().has_variable("oldSelf") {
            let optional = rule
                .get("optionalOldSelf")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            match (&old_bound, optional) {
                (Some(o), false) => context.add_variable_from_value("oldSelf", o.clone()),
                (o, true) => {
                    let opt = match o {
                        Some(o) => OptionalValue::of(o.clone()),
                        None => OptionalValue::none(),
                    };
                    context.add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(opt)));
                }
                (None, false) => continue,
            }
        }
        let named = text(rule, "message")
            .map(str::trim)
            .filter(|m| !m.is_empty());
        let detail = match program.execute(&context) {
            Ok(Cel::Bool(true)) => continue,
            Ok(Cel::Bool(false)) => expressed(rule, &context)
                .or_else(|| named.map(str::to_owned))
                .unwrap_or_else(|| format!("failed rule: {source}")),
            Ok(_) => format!(
                "rule did not evaluate to a bool evaluating rule: {}",
                named.unwrap_or(source)
            ),
            Err(error) => {
                let error = error.to_string();
                if error.starts_with("no such overload") {
                    format!(
                        "'{error}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        named.unwrap_or(source)
                    )
                } else {
                    format!("{error} evaluating rule: {}", named.unwrap_or(source))
                }
            }
        };
        causes.push(failure(schema, rule, path, &detail));
    }
}

/// The old item of a `map` list that has the same map keys as `item`.
fn correlated<'o>(schema: &Value, item: &Value, old: Option<&'o Value>) -> Option<&'o Value> {
    if schema.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    old?.as_array()?
        .iter()
        .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
}

/// Whether `schema` has rules anywhere (a custom object of a schema without any is not walked).
pub(crate) fn has_rules(schema: &Value) -> bool {
    schema.get("x-kubernetes-validations").is_some()
        || schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.values().any(has_rules))
        || ["items", "additionalProperties"]
            .iter()
            .any(|k| schema.get(k).is_some_and(has_rules))
}

/// Evaluates the rules of every node of `value` (at `path`, `old` its old value) below `schema`.
pub(crate) fn walk(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    check_node(schema, value, old, path, causes);
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties").filter(|v| v.is_object());
            for (name, sub_value) in map {
                let sub_old = old.and_then(|o| o.get(name));
                if let Some(sub) = props.and_then(|p| p.get(name)) {
                    let at = super::schema::join(path, name);
                    walk(sub, sub_value, sub_old, &at, causes);
                } else if let Some(sub) = extra {
                    walk(sub, sub_value, sub_old, &format!("{path}[{name}]"), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let sub_old = correlated(schema, item, old);
                    walk(sub, item, sub_old, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

/// The root's `self`: the object's fields with `metadata` cut to `name` and `generateName`.
pub(crate) fn root_self(obj: &Map<String, Value>) -> Value {
    let mut root = obj.clone();
    if let Some(Value::Object(meta)) = root.get_mut("metadata") {
        meta.retain(|k, _| k == "name" || k == "generateName");
    }
    Value::Object(root)
}

/// Whether `causes` (of the OpenAPI checks) stop the rules from running, as Kubernetes skips
/// them after a NotSupported, Required, TooLong, TooMany or TypeInvalid error.
pub(crate) fn blocked(causes: &[Cause]) -> bool {
    causes.iter().any(|(_, m)| {
        [
            "Unsupported value",
            "Required value",
            "Too long",
            "Too many",
        ]
        .iter()
        .any(|p| m.starts_with(p))
            || m.contains(" in body must be of type ") && !m.contains("must be of type integer,")
    })
}

/// The one cause added when the rules were skipped.
pub(crate) fn skipped() -> Cause {
    (
        "<nil>".to_owned(),
        "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check_crd_node, check_node, with_field_path};

    #[test]
    fn field_paths_extend_the_node_path() {
        assert_eq!(with_field_path("spec", ".a.b"), "spec.a.b");
        assert_eq!(with_field_path("spec", "['a'].b"), "spec.a.b");
        assert_eq!(with_field_path("spec", ".items[0]"), "spec.items[0]");
        assert_eq!(with_field_path("", ".a"), "a");
    }

    #[test]
    fn rules_see_self_and_report_message_reason_and_field_path() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.max < 100"},
            {"rule": "self.min > 0", "reason": "FieldValueForbidden", "fieldPath": ".min"}]});
        let mut causes = Vec::new();
        check_node(
            &schema,
            &json!({"min": 0, "max": 200}),
            None,
            "spec",
            &mut causes,
        );
        let mut ok = Vec::new();
        check_node(&schema, &json!({"min": 1, "max": 2}), None, "spec", &mut ok);
        assert!(ok.is_empty(), "{ok:?}");
        assert_eq!(
            causes,
            [
                (
                    "spec".to_owned(),
                    "Invalid value: \"object\": failed rule: self.max < 100".to_owned()
                ),
                (
                    "spec.min".to_owned(),
                    "Forbidden: failed rule: self.min > 0".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn a_rule_that_does_not_compile_is_a_crd_error() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.a ==="}, {"rule": ""}, {"rule": "true", "reason": "Nope"}]});
        let mut causes = Vec::new();
        check_crd_node(&schema, "s", &mut causes);
        assert_eq!(causes.len(), 3, "{causes:?}");
        assert_eq!(causes[0].0, "s.x-kubernetes-validations[0].rule");
        assert!(
            causes[0].1.starts_with(
                "Invalid value: \"self.a ===\": compilation failed: ERROR: <input>:1:"
            ),
            "{causes:?}"
        );
        assert_eq!(
            causes[1],
            (
                "s.x-kubernetes-validations[1].rule".to_owned(),
                "Required value: rule is not specified".to_owned()
            )
        );
        assert_eq!(causes[2].0, "s.x-kubernetes-validations[2].reason");
    }

    #[test]
    fn optional_old_self_needs_old_self_and_message_expressions_must_compile() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.a > 0", "optionalOldSelf": true},
            {"rule": "self.a > 0", "messageExpression": "'a' +"},
            {"rule": "self.a > 0", "messageExpression": " "}]});
        let mut causes = Vec::new();
        check_crd_node(&schema, "s", &mut causes);
        assert_eq!(
            causes[0],
            (
                "s.x-kubernetes-validations[0].optionalOldSelf".to_owned(),
                "Invalid value: true: may not be set if oldSelf is not used in rule".to_owned()
            )
        );
        assert_eq!(
            causes[1].0,
            "s.x-kubernetes-validations[1].messageExpression"
        );
        assert!(
            causes[1]
                .1
                .starts_with("Invalid value: \"'a' +\": messageExpression compilation failed: "),
            "{causes:?}"
        );
        assert_eq!(
            causes[2].1,
            "Required value: messageExpression must be non-empty if specified"
        );
        assert_eq!(causes.len(), 3, "{causes:?}");
    }

    #[test]
    fn transition_rules_run_only_with_an_old_value_unless_optional() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.a >= oldSelf.a"},
            {"rule": "!oldSelf.hasValue()", "optionalOldSelf": true, "message": "had old"}]});
        let mut created = Vec::new();
        check_node(&schema, &json!({"a": 1}), None, "s", &mut created);
        assert!(created.is_empty(), "{created:?}");
        let mut updated = Vec::new();
        check_node(
            &schema,
            &json!({"a": 1}),
            Some(&json!({"a": 2})),
            "s",
            &mut updated,
        );
        assert_eq!(
            updated,
            [
                (
                    "s".to_owned(),
                    "Invalid value: \"object\": failed rule: self.a >= oldSelf.a".to_owned()
                ),
                (
                    "s".to_owned(),
                    "Invalid value: \"object\": had old".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn the_strings_extension_and_list_and_regex_functions_are_in_the_environment() {
        let schema = json!({"type": "string", "x-kubernetes-validations": [
            {"rule": "self.lowerAscii() == self && self.split('-').size() == 2 && self.charAt(0) == 'a'"},
            {"rule": "['x', 'y'].join('-') == 'x-y' && self.indexOf('-') == 1"},
            {"rule": "[1, 2, 2].isSorted() && ![2, 1].isSorted() && [1, 2, 3].sum() == 6"},
            {"rule": "self.find('[a-z]+') == 'a' && self.findAll('[a-z]') == ['a', 'b']"}]});
        let mut good = Vec::new();
        check_node(&schema, &json!("a-b"), None, "s", &mut good);
        assert!(good.is_empty(), "{good:?}");
        let mut bad = Vec::new();
        check_node(&schema, &json!("A-b"), None, "s", &mut bad);
        // lowerAscii differs, and the first lower-case run is "b".
        assert_eq!(bad.len(), 2, "{bad:?}");
    }
}
