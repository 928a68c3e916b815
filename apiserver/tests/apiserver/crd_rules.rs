//! CEL `x-kubernetes-validations` on custom objects (issue 31 §1): rules with `self` at any node
//! of the schema, `message`, `messageExpression`, `reason` and `fieldPath`, transition rules
//! (`oldSelf`, `optionalOldSelf`), the rules skipped after a type error, and a CRD whose rule
//! does not compile refused with 422.

use serde_json::{Value, json};

use crate::crd_schema_checks::{assert_causes, example, example_crd};
use crate::crds::create_established;
use crate::support::*;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const RANGES: &str = "/apis/example.com/v1/namespaces/default/ranges";

fn range_crd(spec: Value, root_rules: Value) -> Value {
    let schema = json!({"type": "object", "x-kubernetes-validations": root_rules,
        "properties": {"spec": spec}});
    example_crd("ranges", "Range", schema)
}

fn range(name: &str, spec: Value) -> Value {
    example("Range", name, spec)
}

fn spec_schema() -> Value {
    json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.min >= 0", "reason": "FieldValueForbidden", "fieldPath": ".min"}],
        "properties": {
            "min": {"type": "integer"}, "max": {"type": "integer"},
            "names": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.startsWith('n-')"}]}}}})
}

/// As `TestValidationExpressions` over HTTP: each failing rule is one cause at its node (plus
/// `fieldPath`), valued by the node's schema type, worded by `message`, typed by `reason`.
#[tokio::test]
async fn rules_see_self_at_every_level_with_message_reason_and_field_path() {
    let s = start().await;
    let c = client(&s);
    let root_rules = json!([{"rule": "self.metadata.name.startsWith('r-')", "message": "name must start with r-"}]);
    create_established(&c, &range_crd(spec_schema(), root_rules)).await;
    let good = json!({"min": 1, "max": 2, "names": ["n-a"]});
    let (code, created) = post(&c, RANGES, &range("r-good", good)).await;
    assert_eq!(code, 201, "{created}");

    let bad = json!({"min": -3, "max": -5, "names": ["n-a", "b"]});
    let (code, status) = post(&c, RANGES, &range("bad", bad)).await;
    assert_eq!(code, 422, "{status}");
    let expected = [
        (
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: \"object\": name must start with r-",
        ),
        (
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"object\": min must not exceed max",
        ),
        (
            "spec.min",
            "FieldValueForbidden",
            "Forbidden: failed rule: self.min >= 0",
        ),
        (
            "spec.names[1]",
            "FieldValueInvalid",
            "Invalid value: \"string\": failed rule: self.startsWith('n-')",
        ),
    ];
    assert_causes(&status, &expected);

    // A type error stops the rules, with Kubernetes' one extra cause.
    let (code, status) = post(&c, RANGES, &range("r-typed", json!({"min": "x", "max": 1}))).await;
    assert_eq!(code, 422, "{status}");
    let (_, causes) = invalid(&status);
    assert!(
        causes.iter().any(|(f, _, m)| f == "<nil>"
            && m.contains("some validation rules were not checked because the object was invalid")),
        "{causes:?}"
    );
    assert!(!causes.iter().any(|(f, _, _)| f == "spec"), "{causes:?}");
}

/// As `TestValidateCustomResourceDefinition`'s "invalid rule" cases: a rule that does not
/// compile refuses the CRD at the rule's path.
#[tokio::test]
async fn a_crd_whose_rule_does_not_compile_is_refused() {
    let s = start().await;
    let c = client(&s);
    let spec = json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.min <="}],
        "properties": {"min": {"type": "integer"}}});
    let (code, status) = post(&c, CRDS, &range_crd(spec, json!([]))).await;
    assert_eq!(code, 422, "{status}");
    let (_, causes) = invalid(&status);
    let field =
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    assert!(
        causes.iter().any(|(f, r, m)| f == field
            && r == "FieldValueInvalid"
            && m.starts_with(
                "Invalid value: \"self.min <=\": compilation failed: ERROR: <input>:1:"
            )),
        "{causes:?}"
    );
    assert_eq!(get(&c, &format!("{CRDS}/ranges.example.com")).await.0, 404);
}

/// As `TestValidationExpressions`' transition cases: a rule using `oldSelf` runs on updates
/// only (on create too with `optionalOldSelf`, `oldSelf` then empty), and a
/// `messageExpression` words the failure.
#[tokio::test]
async fn transition_rules_compare_with_the_old_object_and_message_expressions_word_failures() {
    let s = start().await;
    let c = client(&s);
    let spec = json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.size >= oldSelf.size", "message": "size may not shrink"},
            {"rule": "oldSelf.hasValue() || self.size == 1", "optionalOldSelf": true,
                "message": "must start at 1"},
            {"rule": "self.size <= 10", "messageExpression": "'size ' + string(self.size) + ' is over 10'"}],
        "properties": {"size": {"type": "integer"}}});
    create_established(&c, &range_crd(spec, json!([]))).await;

    let (code, status) = post(&c, RANGES, &range("r-two", json!({"size": 2}))).await;
    assert_eq!(code, 422, "{status}");
    let expected = [(
        "spec",
        "FieldValueInvalid",
        "Invalid value: \"object\": must start at 1",
    )];
    assert_causes(&status, &expected);

    let (code, mut created) = post(&c, RANGES, &range("r-one", json!({"size": 1}))).await;
    assert_eq!(code, 201, "{created}");
    created["spec"]["size"] = json!(5);
    let (code, grown) = put(&c, &format!("{RANGES}/r-one"), &created).await;
    assert_eq!(code, 200, "{grown}");

    let mut shrunk = grown.clone();
    shrunk["spec"]["size"] = json!(3);
    let (code, status) = put(&c, &format!("{RANGES}/r-one"), &shrunk).await;
    assert_eq!(code, 422, "{status}");
    let expected = [(
        "spec",
        "FieldValueInvalid",
        "Invalid value: \"object\": size may not shrink",
    )];
    assert_causes(&status, &expected);

    let mut over = grown;
    over["spec"]["size"] = json!(12);
    let (code, status) = put(&c, &format!("{RANGES}/r-one"), &over).await;
    assert_eq!(code, 422, "{status}");
    let expected = [(
        "spec",
        "FieldValueInvalid",
        "Invalid value: \"object\": size 12 is over 10",
    )];
    assert_causes(&status, &expected);
}

/// kubectl as a user meets the rules: apply a CRD with a rule, apply an object that breaks
/// it, read the 422 as kubectl prints it.
#[test]
fn kubectl_applies_a_crd_with_rules_and_reports_a_broken_rule() {
    let Some((kc, server, dir)) = crate::kubectl::session("crd-rules") else {
        return;
    };
    crate::kubectl::apply_crd(&kc, &server, &dir, &range_crd(spec_schema(), json!([])));
    let file = dir.join("bad.json");
    let bad = range("bad", json!({"min": 3, "max": 1}));
    std::fs::write(&file, bad.to_string()).unwrap();
    let args = ["apply", "-f", file.to_str().unwrap()];
    let err = crate::kubectl::kubectl_failure(&kc, &server, &args);
    assert!(
        err.contains(
            "The Range \"bad\" is invalid: spec: Invalid value: \"object\": min must not exceed max"
        ),
        "{err}"
    );
    let good = range("good", json!({"min": 1, "max": 3}));
    std::fs::write(&file, good.to_string()).unwrap();
    let out = crate::kubectl::kubectl(&kc, &server, &args);
    assert!(out.contains("range.example.com/good created"), "{out}");
}
