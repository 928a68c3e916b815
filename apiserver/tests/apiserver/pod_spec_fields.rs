//! Pod spec validation over HTTP beside containers and volumes (see pod_spec.rs for the
//! helpers): DNS policy, node selector, names, the active deadline, tolerations, security
//! contexts, and what only a new pod or a template is checked for. Cases from Kubernetes'
//! `pkg/apis/core/validation/validation_test.go` (TestValidateDNSPolicy, TestValidatePodSpec,
//! TestValidateTolerations, TestValidateSecurityContext, TestValidatePodCreate...).

use serde_json::json;

use crate::pod_spec::{DEPLOYS, LABEL, PODS, SUBDOMAIN, container, deployment, pod, refused};
use crate::support::*;

/// TestValidateDNSPolicy: the supported values in Kubernetes' (unsorted) order.
#[tokio::test]
async fn an_unknown_dns_policy_is_422() {
    let spec = json!({"containers": [container("app")], "dnsPolicy": "Bogus"});
    refused(spec, &[("dnsPolicy", "FieldValueNotSupported",
        "Unsupported value: \"Bogus\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"")])
    .await;
}

/// TestValidatePodSpec / TestValidateTolerations: node selector labels, the names a spec
/// refers to, the active deadline's range, and tolerations' keys, operators, values and
/// effects.
#[tokio::test]
async fn spec_names_deadline_and_tolerations_are_checked() {
    let spec = json!({"containers": [container("app")], "serviceAccountName": "Bad_SA",
    "nodeName": "node_1", "activeDeadlineSeconds": 0, "hostname": "Host.Name",
        "nodeSelector": {"zone": "a b"},
    "tolerations": [
        {"key": "", "operator": "Equal", "value": "x"},
        {"key": "k", "operator": "Exists", "value": "v"},
        {"key": "k", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 30},
        {"key": "k", "operator": "Greater", "effect": "Sometimes"}
    ]});
    let sa = format!("Invalid value: \"Bad_SA\": {SUBDOMAIN}");
    let node = format!("Invalid value: \"node_1\": {SUBDOMAIN}");
    let host = format!("Invalid value: \"Host.Name\": {LABEL}");
    refused(spec, &[
        ("nodeSelector", "FieldValueInvalid",
         "Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        ("serviceAccountName", "FieldValueInvalid", &sa),
        ("nodeName", "FieldValueInvalid", &node),
        ("activeDeadlineSeconds", "FieldValueInvalid",
         "Invalid value: 0: must be between 1 and 2147483647, inclusive"),
        ("hostname", "FieldValueInvalid", &host),
        ("tolerations[0].operator", "FieldValueInvalid",
         "Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\""),
        ("tolerations[1].operator", "FieldValueInvalid",
         "Invalid value: \"v\": value must be empty when `operator` is 'Exists'"),
        ("tolerations[2].effect", "FieldValueInvalid",
         "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"),
        ("tolerations[3].operator", "FieldValueNotSupported",
         "Unsupported value: \"Greater\": supported values: \"Equal\", \"Exists\""),
        ("tolerations[3].effect", "FieldValueNotSupported",
         "Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""),
    ])
    .await;
}

/// TestValidatePodSpec / TestValidateSecurityContext: user and group ids in range, process
/// namespace sharing without the host's PIDs, known fsGroup change policies and seccomp
/// profiles (reported under `securityContext`, where Kubernetes' internal type holds them).
#[tokio::test]
async fn security_contexts_are_checked() {
    let mut app = container("app");
    app["securityContext"] = json!({"runAsGroup": 3000000000_i64});
    let spec = json!({"containers": [app], "hostPID": true, "shareProcessNamespace": true,
        "securityContext": {"runAsUser": -1, "supplementalGroups": [1, -2],
                            "fsGroupChangePolicy": "Sometimes", "seccompProfile": {"type": "Localhost"}}});
    let range = "must be between 0 and 2147483647, inclusive";
    let group = format!("Invalid value: 3000000000: {range}");
    let user = format!("Invalid value: -1: {range}");
    let supplemental = format!("Invalid value: -2: {range}");
    refused(spec, &[
        ("containers[0].securityContext.runAsGroup", "FieldValueInvalid", &group),
        ("securityContext.runAsUser", "FieldValueInvalid", &user),
        ("securityContext.supplementalGroups[1]", "FieldValueInvalid", &supplemental),
        ("securityContext.shareProcessNamespace", "FieldValueInvalid",
         "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"),
        ("securityContext.fsGroupChangePolicy", "FieldValueNotSupported",
         "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnRootMismatch\""),
        ("securityContext.seccompProfile.localhostProfile", "FieldValueRequired",
         "Required value: must be set when seccomp type is Localhost"),
    ])
    .await;
}

/// ValidatePodCreate / TestValidatePodCreateWithSchedulingGates: only a pod's host ports must
/// equal their container ports on the host network (a template may leave them out), its
/// images have no surrounding whitespace, it has no ephemeral containers and no node name
/// while scheduling gates remain.
#[tokio::test]
async fn a_new_pod_is_checked_for_what_only_pods_are() {
    let s = start().await;
    let c = client(&s);
    let mut app = container("app");
    app["image"] = json!(" nginx:1 ");
    app["ports"] = json!([{"containerPort": 80, "hostPort": 81}, {"containerPort": 90}]);
    let spec = json!({"hostNetwork": true, "containers": [app],
                      "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
                      "nodeName": "n1", "schedulingGates": [{"name": "wait"}]});
    let (code, status) = post(&c, PODS, &pod(&spec)).await;
    assert_eq!(code, 422, "{status}");
    let must_match = "Invalid value: 81: must match `containerPort` when `hostNetwork` is true";
    let expected = [
        (
            "spec.containers[0].ports[0].hostPort",
            "FieldValueInvalid",
            must_match,
        ),
        (
            "spec.containers[0].image",
            "FieldValueInvalid",
            "Invalid value: \" nginx:1 \": must not have leading or trailing whitespace",
        ),
        (
            "spec.ephemeralContainers",
            "FieldValueForbidden",
            "Forbidden: cannot be set on create",
        ),
        (
            "spec.nodeName",
            "FieldValueForbidden",
            "Forbidden: cannot be set until all schedulingGates have been cleared",
        ),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(f, r, m)| ((*f).to_owned(), (*r).to_owned(), (*m).to_owned()))
        .collect();
    assert_eq!(invalid(&status).1, expected);
    // The template: the explicit host port still must match, the whitespace is allowed, and
    // ephemeral containers are not (ValidatePodTemplateSpec).
    let (code, status) = post(&c, DEPLOYS, &deployment(&spec)).await;
    assert_eq!(code, 422, "{status}");
    let at = "spec.template.spec";
    let expected = [
        (
            format!("{at}.containers[0].ports[0].hostPort"),
            "FieldValueInvalid",
            must_match,
        ),
        (
            format!("{at}.ephemeralContainers"),
            "FieldValueForbidden",
            "Forbidden: ephemeral containers not allowed in pod template",
        ),
    ];
    let expected: Vec<(String, String, String)> = expected
        .into_iter()
        .map(|(f, r, m)| (f, r.to_owned(), m.to_owned()))
        .collect();
    assert_eq!(invalid(&status).1, expected);
}

/// TestValidatePodDNSConfig, TestValidateReadinessGates, TestValidateSchedulingGates: a `None`
/// DNS policy needs a config with nameservers (at most three), options are named, gates have
/// qualified names and scheduling gates are unique.
#[tokio::test]
async fn dns_config_and_gates_are_checked() {
    let none = json!({"containers": [container("app")], "dnsPolicy": "None"});
    refused(
        none,
        &[(
            "dnsConfig",
            "FieldValueRequired",
            "Required value: must provide `dnsConfig` when `dnsPolicy` is None",
        )],
    )
    .await;
    let spec = json!({"containers": [container("app")], "dnsPolicy": "None",
        "dnsConfig": {"nameservers": ["1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4"],
                      "options": [{"name": ""}]},
        "readinessGates": [{"conditionType": "example.com/ready"}, {"conditionType": "not ready"}],
        "schedulingGates": [{"name": "wait"}, {"name": "wait"}]});
    refused(spec, &[
        ("dnsConfig.nameservers", "FieldValueInvalid",
         "Invalid value: []string{\"1.1.1.1\", \"1.0.0.1\", \"8.8.8.8\", \"8.8.4.4\"}: must not have more than 3 nameservers"),
        ("dnsConfig.options[0]", "FieldValueRequired", "Required value: must not be empty"),
        ("readinessGates[1].conditionType", "FieldValueInvalid",
         "Invalid value: \"not ready\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("schedulingGates[1]", "FieldValueDuplicate", "Duplicate value: \"wait\""),
    ])
    .await;
}

/// TestValidateAffinity / TestValidateNodeSelectorRequirement: node affinity requirements'
/// operators and values, field requirements on `metadata.name` with one value, preferred
/// terms' weights (their label values are not checked).
#[tokio::test]
async fn node_affinity_terms_are_checked() {
    let required_terms = json!({"nodeSelectorTerms": [{
    "matchExpressions": [
        {"key": "zone", "operator": "In"},
        {"key": "disk", "operator": "Exists", "values": ["ssd"]},
        {"key": "cores", "operator": "Gt", "values": ["1", "2"]},
        {"key": "x", "operator": "Near", "values": ["a"]}
    ],
    "matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]},
        {"key": "spec.nodeName", "operator": "In", "values": ["n1"]}
    ]}]});
    let preferred = json!([{"weight": 0, "preference": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["not a label value"]}]}}]);
    let spec = json!({"containers": [container("app")], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": required_terms,
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}}});
    let at =
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]";
    let field = |suffix: &str| format!("{at}.{suffix}");
    let (e0, e1, e2, e3) = (
        field("matchExpressions[0].values"),
        field("matchExpressions[1].values"),
        field("matchExpressions[2].values"),
        field("matchExpressions[3].operator"),
    );
    let (f0, f1) = (field("matchFields[0].values"), field("matchFields[1].key"));
    refused(spec, &[
        (&e0, "FieldValueRequired", "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        (&e1, "FieldValueForbidden",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        (&e2, "FieldValueRequired",
         "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
        (&e3, "FieldValueInvalid", "Invalid value: \"Near\": not a valid selector operator"),
        (&f0, "FieldValueRequired",
         "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
        (&f1, "FieldValueInvalid", "Invalid value: \"spec.nodeName\": not a valid field selector key"),
        ("affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
         "FieldValueInvalid", "Invalid value: 0: must be in the range 1-100"),
    ])
    .await;
}
