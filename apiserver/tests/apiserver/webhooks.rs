//! The `admissionregistration.k8s.io/v1` kinds: Mutating and ValidatingWebhookConfigurations,
//! ValidatingAdmissionPolicies and their bindings, served, defaulted, validated (the cases of
//! `pkg/apis/admissionregistration/validation/validation_test.go`) and printed. Stored only:
//! nothing calls the webhooks nor enforces the policies yet.

use serde_json::{Value, json};

use crate::cluster_kinds::{columns, table};
use crate::kubectl::{kubectl, session};
use crate::support::*;

const GROUP: &str = "/apis/admissionregistration.k8s.io/v1";

/// A webhook that passes validation.
fn hook(name: &str) -> Value {
    json!({"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
           "clientConfig": {"url": "https://127.0.0.1:8443/validate"},
           "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                      "resources": ["configmaps"]}]})
}

fn configuration(kind: &str, name: &str, hooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": name}, "webhooks": hooks})
}

fn policy(name: &str) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": name},
           "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
                                                            "apiVersions": ["v1"], "resources": ["deployments"]}]},
                    "validations": [{"expression": "object.spec.replicas <= 5"}]}})
}

fn binding(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": name}, "spec": spec})
}

/// POSTs `obj` to `path`, which must refuse it with 422; its causes as (field, reason, message).
async fn refused(
    c: &kube_client::Client,
    path: &str,
    obj: &Value,
) -> Vec<(String, String, String)> {
    let (code, status) = post(c, path, obj).await;
    assert_eq!(code, 422, "{status}");
    invalid(&status).1
}

/// A configuration's webhooks get `SetDefaults_{Mutating,Validating}Webhook`'s values, rules
/// `SetDefaults_Rule`'s scope, services port 443; the table counts the webhooks.
#[tokio::test]
async fn webhook_configurations_are_defaulted_and_printed() {
    let s = start().await;
    let c = client(&s);
    let mut by_service = hook("svc.example.com");
    by_service["clientConfig"] = json!({"service": {"name": "hooks", "namespace": "default"}});
    for (kind, plural) in [
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        ),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
    ] {
        let config = configuration(
            kind,
            "cfg",
            vec![hook("url.example.com"), by_service.clone()],
        );
        let (code, created) = post(&c, &format!("{GROUP}/{plural}"), &config).await;
        assert_eq!(code, 201, "{created}");
        let w = &created["webhooks"][0];
        assert_eq!(
            (&w["failurePolicy"], &w["matchPolicy"], &w["timeoutSeconds"]),
            (&json!("Fail"), &json!("Equivalent"), &json!(10))
        );
        assert_eq!(
            (&w["namespaceSelector"], &w["objectSelector"]),
            (&json!({}), &json!({}))
        );
        assert_eq!(w["rules"][0]["scope"], "*");
        let reinvocation = if kind.starts_with("Mutating") {
            json!("Never")
        } else {
            Value::Null
        };
        assert_eq!(w["reinvocationPolicy"], reinvocation, "{kind}");
        assert_eq!(
            created["webhooks"][1]["clientConfig"]["service"]["port"],
            443
        );
        assert_eq!(created["metadata"]["generation"], 1);
        let t = table(&c, &format!("{GROUP}/{plural}")).await;
        assert_eq!(columns(&t), ["Name", "Webhooks", "Age"]);
        assert_eq!(t["rows"][0]["cells"][1], 2);
        // A change to the webhooks is a new generation.
        let mut changed = created.clone();
        changed["webhooks"][0]["timeoutSeconds"] = json!(5);
        let (code, updated) = put(&c, &format!("{GROUP}/{plural}/cfg"), &changed).await;
        assert_eq!((code, &updated["metadata"]["generation"]), (200, &json!(2)));
    }
}

/// The cases of `TestValidateValidatingWebhookConfiguration` (and the mutating one's
/// reinvocation policy), as (case, webhook, field of the first cause, its message).
#[tokio::test]
async fn test_validate_validating_webhook_configuration() {
    let s = start().await;
    let c = client(&s);
    let with = |key: &str, value: Value| {
        let mut h = hook("a.b.c");
        h[key] = value;
        h
    };
    let rule = |operations: Value, resources: Value| json!([{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"], "resources": resources}]);
    let cases = [
        (
            "should fail on bad name",
            hook("---"),
            "webhooks[0].name",
            "",
        ),
        (
            "should fail on name with fewer than three segments",
            hook("k8s.io"),
            "webhooks[0].name",
            "Invalid value: \"k8s.io\": should be a domain with at least three segments separated by dots",
        ),
        (
            "Operations must not be empty or nil",
            with("rules", rule(json!([]), json!(["pods"]))),
            "webhooks[0].rules[0].operations",
            "Required value",
        ),
        (
            "\"*\" is not allowed with other operations",
            with("rules", rule(json!(["*", "CREATE"]), json!(["pods"]))),
            "webhooks[0].rules[0].operations",
            "Invalid value: [\"*\",\"CREATE\"]: if '*' is present, must not specify other operations",
        ),
        (
            "resource a/* cannot mix with a/x",
            with("rules", rule(json!(["CREATE"]), json!(["a/*", "a/x"]))),
            "webhooks[0].rules[0].resources[1]",
            "Invalid value: \"a/x\": if 'a/*' is present, must not specify a/x",
        ),
        (
            "resource \"*\" cannot mix with resources that don't have subresources",
            with("rules", rule(json!(["CREATE"]), json!(["*", "a"]))),
            "webhooks[0].rules[0].resources",
            "Invalid value: [\"*\",\"a\"]: if '*' is present, must not specify other resources without subresources",
        ),
        (
            "FailurePolicy can only be \"Ignore\" or \"Fail\"",
            with("failurePolicy", json!("other")),
            "webhooks[0].failurePolicy",
            "Unsupported value: \"other\": supported values: \"Fail\", \"Ignore\"",
        ),
        (
            "SideEffects are required",
            with("sideEffects", Value::Null),
            "webhooks[0].sideEffects",
            "Required value: must specify one of None, NoneOnDryRun",
        ),
        (
            "SideEffects can only be \"None\" or \"NoneOnDryRun\" when created",
            with("sideEffects", json!("Some")),
            "webhooks[0].sideEffects",
            "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
        ),
        (
            "both service and URL missing",
            with("clientConfig", json!({})),
            "webhooks[0].clientConfig",
            "Required value: exactly one of url or service is required",
        ),
        (
            "both service and URL provided",
            with(
                "clientConfig",
                json!({"url": "https://a.b", "service": {"name": "n", "namespace": "ns"}}),
            ),
            "webhooks[0].clientConfig",
            "Required value: exactly one of url or service is required",
        ),
        (
            "blank URL",
            with("clientConfig", json!({"url": ""})),
            "webhooks[0].clientConfig.url",
            "Invalid value: \"\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            "wrong scheme",
            with("clientConfig", json!({"url": "http://example.com"})),
            "webhooks[0].clientConfig.url",
            "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            "missing host",
            with("clientConfig", json!({"url": "https:///fancy/webhook"})),
            "webhooks[0].clientConfig.url",
            "Invalid value: \"\": host must be provided; desired format: https://host[/path]",
        ),
        (
            "fragment",
            with(
                "clientConfig",
                json!({"url": "https://example.com/#bookmark"}),
            ),
            "webhooks[0].clientConfig.url",
            "Invalid value: \"bookmark\": fragments are not permitted in the URL",
        ),
        (
            "query",
            with(
                "clientConfig",
                json!({"url": "https://example.com?arg=value"}),
            ),
            "webhooks[0].clientConfig.url",
            "Invalid value: \"arg=value\": query parameters are not permitted in the URL",
        ),
        (
            "user password",
            with(
                "clientConfig",
                json!({"url": "https://Aladdin:sesame@example.com"}),
            ),
            "webhooks[0].clientConfig.url",
            "Invalid value: \"Aladdin:sesame\": user information is not permitted in the URL",
        ),
        (
            "path must start with slash",
            with(
                "clientConfig",
                json!({"service": {"name": "n", "namespace": "ns", "path": "foo/"}}),
            ),
            "webhooks[0].clientConfig.service.path",
            "Invalid value: \"foo/\": must start with a '/'",
        ),
        (
            "path accepts no trailing empty segment",
            with(
                "clientConfig",
                json!({"service": {"name": "n", "namespace": "ns", "path": "/foo//"}}),
            ),
            "webhooks[0].clientConfig.service.path",
            "Invalid value: \"/foo//\": segment[1] may not be empty",
        ),
        (
            "invalid port >65535",
            with(
                "clientConfig",
                json!({"service": {"name": "n", "namespace": "ns", "port": 65536}}),
            ),
            "webhooks[0].clientConfig.service.port",
            "Invalid value: 65536: port is not valid: must be between 1 and 65535, inclusive",
        ),
        (
            "timeout seconds cannot be greater than 30",
            with("timeoutSeconds", json!(31)),
            "webhooks[0].timeoutSeconds",
            "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        ),
        (
            "timeout seconds cannot be smaller than 1",
            with("timeoutSeconds", json!(0)),
            "webhooks[0].timeoutSeconds",
            "Invalid value: 0: the timeout value must be between 1 and 30 seconds",
        ),
        (
            "AdmissionReviewVersions are required",
            with("admissionReviewVersions", json!([])),
            "webhooks[0].admissionReviewVersions",
            "Required value: must specify one of v1, v1beta1",
        ),
        (
            "should fail on invalid AdmissionReviewVersion",
            with("admissionReviewVersions", json!(["invalidVersion"])),
            "webhooks[0].admissionReviewVersions[0]",
            "",
        ),
        (
            "should fail on duplicate AdmissionReviewVersion",
            with("admissionReviewVersions", json!(["v1", "v1"])),
            "webhooks[0].admissionReviewVersions[1]",
            "Invalid value: \"v1\": duplicate version",
        ),
        (
            "should fail on no recognized AdmissionReviewVersion",
            with("admissionReviewVersions", json!(["v2"])),
            "webhooks[0].admissionReviewVersions",
            "Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
        ),
        (
            "invalid namespaceSelector operator",
            with(
                "namespaceSelector",
                json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
            ),
            "webhooks[0].namespaceSelector.matchExpressions[0].operator",
            "",
        ),
    ];
    let validating = format!("{GROUP}/validatingwebhookconfigurations");
    for (case, hook, field, message) in cases {
        let config = configuration("ValidatingWebhookConfiguration", "cfg", vec![hook]);
        let causes = refused(&c, &validating, &config).await;
        assert_eq!(causes[0].0, field, "{case}: {causes:?}");
        if !message.is_empty() {
            assert_eq!(causes[0].2, message, "{case}");
        }
    }
    // "webhook names must be unique"
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "dup",
        vec![hook("a.b.c"), hook("a.b.c")],
    );
    assert_eq!(
        refused(&c, &validating, &config).await[0],
        (
            "webhooks[1].name".to_owned(),
            "FieldValueDuplicate".to_owned(),
            "Duplicate value: \"a.b.c\"".to_owned()
        )
    );
    // "Reinvocation policy can only be \"Never\" or \"IfNeeded\"" (mutating webhooks only).
    let mut h = hook("a.b.c");
    h["reinvocationPolicy"] = json!("other");
    let config = configuration("MutatingWebhookConfiguration", "m", vec![h]);
    let (code, status) = post(
        &c,
        &format!("{GROUP}/mutatingwebhookconfigurations"),
        &config,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        invalid(&status).1[0].2,
        "Unsupported value: \"other\": supported values: \"IfNeeded\", \"Never\""
    );
}

/// Policies are stored with `failurePolicy: Fail` and their match constraints defaulted, an
/// empty status and a generation; they need match constraints and validations. Bindings need
/// a policy name and validation actions, not both Deny and Warn. Nothing enforces them.
#[tokio::test]
async fn validating_admission_policies_and_bindings_are_stored_and_validated() {
    let s = start().await;
    let c = client(&s);
    let policies = format!("{GROUP}/validatingadmissionpolicies");
    let (code, created) = post(&c, &policies, &policy("replicas")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["failurePolicy"], "Fail");
    let constraints = &created["spec"]["matchConstraints"];
    assert_eq!(constraints["matchPolicy"], "Equivalent");
    assert_eq!(constraints["resourceRules"][0]["scope"], "*");
    assert_eq!(
        (&created["status"], &created["metadata"]["generation"]),
        (&json!({}), &json!(1))
    );
    let t = table(&c, &policies).await;
    assert_eq!(
        t["rows"][0]["cells"],
        json!(["replicas", 1, "<unset>", t["rows"][0]["cells"][3]])
    );

    let mut empty = policy("empty");
    empty["spec"] = json!({});
    let causes = refused(&c, &policies, &empty).await;
    let fields: Vec<String> = causes.into_iter().map(|c| c.0).collect();
    assert_eq!(fields, ["spec.matchConstraints", "spec.validations"]);

    let bindings = format!("{GROUP}/validatingadmissionpolicybindings");
    let good = binding(
        "b",
        json!({"policyName": "replicas", "validationActions": ["Deny"],
                                   "paramRef": {"name": "p", "namespace": "default"}}),
    );
    let (code, created) = post(&c, &bindings, &good).await;
    assert_eq!(code, 201, "{created}");
    let t = table(&c, &bindings).await;
    assert_eq!(t["rows"][0]["cells"][1], "replicas");
    assert_eq!(t["rows"][0]["cells"][2], "default/p");
    let cases = [
        (
            json!({"validationActions": ["Deny"]}),
            "spec.policyName",
            "Required value",
        ),
        (
            json!({"policyName": "p"}),
            "spec.validationActions",
            "Required value: at least one validation action is required",
        ),
        (
            json!({"policyName": "p", "validationActions": ["Deny", "Deny"]}),
            "spec.validationActions[1]",
            "Duplicate value: \"Deny\"",
        ),
        (
            json!({"policyName": "p", "validationActions": ["Block"]}),
            "spec.validationActions[0]",
            "Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"",
        ),
    ];
    for (spec, field, message) in cases {
        let causes = refused(&c, &bindings, &binding("bad", spec)).await;
        assert_eq!(
            (causes[0].0.as_str(), causes[0].2.as_str()),
            (field, message)
        );
    }
}

/// kubectl creates a configuration from a manifest and prints its WEBHOOKS column; the group
/// is discovered with its four resources.
#[test]
fn kubectl_creates_and_gets_webhook_configurations() {
    let Some((kc, server, dir)) = session("webhooks") else {
        return;
    };
    let manifest = dir.join("vwc.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: pod-policy
webhooks:
- name: pod-policy.example.com
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://127.0.0.1:9443/validate
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [pods]
",
    )
    .unwrap();
    let out = kubectl(&kc, &server, &["create", "-f", manifest.to_str().unwrap()]);
    assert!(
        out.contains(
            "validatingwebhookconfiguration.admissionregistration.k8s.io/pod-policy created"
        ),
        "{out}"
    );
    let out = kubectl(&kc, &server, &["get", "validatingwebhookconfigurations"]);
    let mut lines = out.lines();
    assert_eq!(
        lines
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["NAME", "WEBHOOKS", "AGE"])
    );
    assert_eq!(
        lines
            .next()
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>()),
        Some(vec!["pod-policy", "1"])
    );
    let resources = kubectl(
        &kc,
        &server,
        &[
            "api-resources",
            "--api-group",
            "admissionregistration.k8s.io",
            "-o",
            "name",
        ],
    );
    let mut names: Vec<&str> = resources.lines().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "mutatingwebhookconfigurations.admissionregistration.k8s.io",
            "validatingadmissionpolicies.admissionregistration.k8s.io",
            "validatingadmissionpolicybindings.admissionregistration.k8s.io",
            "validatingwebhookconfigurations.admissionregistration.k8s.io",
        ]
    );
}
