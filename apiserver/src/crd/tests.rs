//! Unit tests of custom objects against schemas and of CRD validation.

use serde_json::{Value, json};

use super::{check_object, prune_and_default};

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "exclusiveMaximum": true, "maximum": 5},
            "tags": {"type": "array", "maxItems": 1, "items": {"type": "object", "properties": {"k": {"type": "string", "default": "x"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "port": {"x-kubernetes-int-or-string": true},
            "name": {"type": "string", "maxLength": 3, "nullable": true}
        }}
    }})
}

fn object(spec: Value) -> serde_json::Map<String, Value> {
    let Value::Object(map) = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "spec": spec, "junk": 1})
    else {
        unreachable!()
    };
    map
}

fn fields(spec: Value) -> Vec<String> {
    check_object(&schema(), &object(spec))
        .into_iter()
        .map(|(f, _)| f)
        .collect()
}

#[test]
fn pruning_keeps_the_root_fields_known_properties_maps_and_preserved_subtrees() {
    let mut obj = object(
        json!({"size": 1, "gone": 1, "labels": {"a": "b"}, "free": {"any": {"deep": 1}}, "tags": [{"k": "v", "drop": 1}]}),
    );
    prune_and_default(&schema(), &mut obj);
    assert_eq!(
        Value::Object(obj),
        json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"},
               "spec": {"size": 1, "labels": {"a": "b"}, "free": {"any": {"deep": 1}}, "tags": [{"k": "v"}]}})
    );
}

#[test]
fn defaults_fill_absent_fields_inside_list_items() {
    let mut obj = object(json!({"size": 1, "tags": [{}]}));
    prune_and_default(&schema(), &mut obj);
    assert_eq!(obj["spec"]["tags"], json!([{"k": "x"}]));
}

#[test]
fn checks_report_each_failing_field_path() {
    assert!(fields(json!({"size": 1, "port": "http", "name": null})).is_empty());
    assert_eq!(fields(json!({})), ["spec.size"]);
    assert_eq!(fields(json!({"size": 5})), ["spec.size"]);
    assert_eq!(fields(json!({"size": 1, "port": true})), ["spec.port"]);
    assert_eq!(fields(json!({"size": 1, "name": "long"})), ["spec.name"]);
    assert_eq!(
        fields(json!({"size": 1, "labels": {"a": 1}})),
        ["spec.labels.a"]
    );
    assert_eq!(fields(json!({"size": 1, "tags": [{}, {}]})), ["spec.tags"]);
    assert_eq!(
        fields(json!({"size": 1, "tags": [{"k": 1}]})),
        ["spec.tags[0].k"]
    );
}

#[test]
fn messages_are_those_of_kubernetes_schema_validator() {
    let causes = check_object(&schema(), &object(json!({"size": 0, "name": "long"})));
    let messages: Vec<&str> = causes.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Too long: may not be more than 3 bytes",
            "Invalid value: 0: spec.size in body should be greater than or equal to 1",
        ]
    );
}

#[test]
fn a_crd_needs_one_storage_version_and_its_name_from_plural_and_group() {
    let crd: super::Crd = serde_json::from_value(json!({
        "metadata": {"name": "x.example.com"},
        "spec": {"group": "example", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget", "listKind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": false,
                               "schema": {"openAPIV3Schema": {"type": "string"}}}]}
    }))
    .unwrap();
    let fields: Vec<String> = super::validate(&crd).into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        fields,
        [
            "metadata.name",
            "spec.group",
            "spec.names.listKind",
            "spec.versions",
            "spec.versions[0].schema.openAPIV3Schema.type",
        ]
    );
}

fn named_crd(plural: &str, kind: &str, short: &[&str], status: Value) -> super::Crd {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced", "versions": [],
            "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind,
                "listKind": format!("{kind}List"), "shortNames": short}},
        "status": status,
    });
    serde_json::from_value(crd).unwrap()
}

#[test]
fn several_conflicting_short_names_are_reported_together_and_an_established_crd_stays_served() {
    let accepted = |plural: &str, kind: &str, short: &[&str]| {
        json!({"acceptedNames": {"plural": plural, "singular": plural.trim_end_matches('s'),
            "kind": kind, "listKind": format!("{kind}List"), "shortNames": short},
            "conditions": [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
    };
    let widgets = named_crd(
        "widgets",
        "Widget",
        &["a", "b"],
        accepted("widgets", "Widget", &["a", "b"]),
    );
    // An established CRD that now asks for names in use keeps its accepted ones and is served.
    let gadgets = named_crd(
        "gadgets",
        "Gadget",
        &["g", "a", "b"],
        accepted("gadgets", "Gadget", &["g"]),
    );
    let all = [widgets, gadgets.clone()];
    let naming = super::decide_names(&gadgets, &all);
    let patch = naming.patch.unwrap();
    let conditions = patch["status"]["conditions"].as_array().unwrap();
    let names = conditions
        .iter()
        .find(|c| c["type"] == "NamesAccepted")
        .unwrap();
    assert_eq!(names["reason"], "ShortNamesConflict");
    assert_eq!(
        names["message"],
        r#"["a" is already in use, "b" is already in use]"#
    );
    assert_eq!(naming.accepted.short_names, Some(vec!["g".to_owned()]));
    assert!(naming.served);
    let established = conditions
        .iter()
        .find(|c| c["type"] == "Established")
        .unwrap();
    assert_eq!(established["lastTransitionTime"], "2026-01-01T00:00:00Z");
}
