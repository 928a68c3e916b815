//! The structural-schema checks of custom objects beyond types and bounds (issue 31 §1):
//! `pattern`, `format`, list-type `set`/`map` uniqueness, `maxProperties`, and CRDs refused
//! for `uniqueItems` or a `pattern` that does not compile, each over HTTP with Kubernetes'
//! 422 wording.

use serde_json::{Value, json};

use crate::crds::create_established;
use crate::support::*;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GIZMOS: &str = "/apis/example.com/v1/namespaces/default/gizmos";

/// A namespaced CRD of `<plural>.example.com` (kind `kind`, one version `v1`) with `schema` as
/// its `openAPIV3Schema`.
pub(crate) fn example_crd(plural: &str, kind: &str, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

/// A custom object of `example.com/v1`.
pub(crate) fn example(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

/// A CRD of `gizmos.example.com` whose `spec` has the given properties.
fn gizmo_crd(spec_props: Value) -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec_props}}});
    example_crd("gizmos", "Gizmo", schema)
}

fn gizmo(name: &str, spec: Value) -> Value {
    example("Gizmo", name, spec)
}

fn checked_props() -> Value {
    json!({
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "id": {"type": "string", "format": "uuid"},
        "addr": {"type": "string", "format": "ipv4"},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port"],
            "items": {"type": "object", "required": ["port"], "properties": {
                "port": {"type": "integer"}, "name": {"type": "string"}}}},
        "labels": {"type": "object", "maxProperties": 1, "minProperties": 1,
            "additionalProperties": {"type": "string"}}
    })
}

/// Kubernetes' `TestValidateCustomResource` shapes over HTTP: a valid object is stored, and each
/// broken rule is one cause at its field with the OpenAPI validator's wording.
#[tokio::test]
async fn custom_objects_are_checked_for_pattern_format_list_types_and_property_counts() {
    let s = start().await;
    let c = client(&s);
    create_established(&c, &gizmo_crd(checked_props())).await;
    let good = json!({"name": "abc", "id": "123e4567-e89b-12d3-a456-426614174000",
        "addr": "10.0.0.1", "tags": ["a", "b"], "ports": [{"port": 80}, {"port": 81}],
        "labels": {"a": "b"}});
    let (code, created) = post(&c, GIZMOS, &gizmo("good", good)).await;
    assert_eq!(code, 201, "{created}");

    let bad = json!({"name": "ab1", "id": "nope", "addr": "10.0.0.256",
        "tags": ["a", "b", "a"], "ports": [{"port": 80, "name": "x"}, {"port": 80, "name": "y"}],
        "labels": {"a": "b", "c": "d"}});
    let (code, status) = post(&c, GIZMOS, &gizmo("bad", bad)).await;
    assert_eq!(code, 422, "{status}");
    let expected = [
        (
            "spec.addr",
            "FieldValueInvalid",
            "Invalid value: \"10.0.0.256\": spec.addr in body must be of type ipv4: \"10.0.0.256\"",
        ),
        (
            "spec.id",
            "FieldValueInvalid",
            "Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\"",
        ),
        (
            "spec.labels",
            "FieldValueTooMany",
            "Too many: 2: must have at most 1 items",
        ),
        (
            "spec.name",
            "FieldValueInvalid",
            "Invalid value: \"ab1\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            "spec.ports[1]",
            "FieldValueDuplicate",
            "Duplicate value: {\"port\":80}",
        ),
        (
            "spec.tags[2]",
            "FieldValueDuplicate",
            "Duplicate value: \"a\"",
        ),
    ];
    assert_causes(&status, &expected);

    let (code, status) = post(&c, GIZMOS, &gizmo("empty", json!({"labels": {}}))).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"].as_str().unwrap().contains(
            "spec.labels: Invalid value: {}: spec.labels in body should have at least 1 properties"
        ),
        "{status}"
    );
}

/// As `TestValidateCustomResourceDefinition`'s uniqueItems and invalid-pattern cases: the CRD is
/// refused with the schema path of each.
#[tokio::test]
async fn a_crd_with_unique_items_or_a_bad_pattern_is_refused() {
    let s = start().await;
    let c = client(&s);
    let crd = gizmo_crd(json!({
        "tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
        "name": {"type": "string", "pattern": "([a-z"}
    }));
    let (code, status) = post(&c, CRDS, &crd).await;
    assert_eq!(code, 422, "{status}");
    let (_, causes) = invalid(&status);
    let base = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
    assert!(
        causes.iter().any(|(f, r, m)| f == &format!("{base}.properties[tags].uniqueItems")
            && r == "FieldValueForbidden"
            && m == "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
        "{causes:?}"
    );
    assert!(
        causes
            .iter()
            .any(|(f, r, m)| f == &format!("{base}.properties[name].pattern")
                && r == "FieldValueInvalid"
                && m.starts_with(
                    "Invalid value: \"([a-z\": must be a valid regular expression, but isn't: "
                )),
        "{causes:?}"
    );
    assert_eq!(causes.len(), 2, "{causes:?}");
}

/// Asserts that a 422 `status` has exactly the `expected` causes (field, reason, message), each
/// also in its message as `field: message`.
pub(crate) fn assert_causes(status: &Value, expected: &[(&str, &str, &str)]) {
    let (message, causes) = invalid(status);
    for (field, reason, text) in expected {
        assert!(
            causes
                .iter()
                .any(|(f, r, m)| f == field && r == reason && m == text),
            "no {field} {reason} {text:?} in {causes:?}"
        );
        assert!(message.contains(&format!("{field}: {text}")), "{message}");
    }
    assert_eq!(causes.len(), expected.len(), "{causes:?}");
}
