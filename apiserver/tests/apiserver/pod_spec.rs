//! Pod spec validation over HTTP, for a Pod and for a Deployment's pod template: status,
//! message, and each cause's field, reason and message as a real API server answers. Cases
//! grouped by the tests of Kubernetes' `pkg/apis/core/validation/validation_test.go` they come
//! from (TestValidateContainers, TestValidateInitContainers, TestValidatePorts /
//! TestValidateContainerPorts, TestValidateEnv, TestValidateResourceRequirements,
//! TestValidateVolumes, TestValidateVolumeMounts, TestValidateProbe / TestValidateHandler,
//! TestValidatePullPolicy, TestValidatePodSpec host ports); pod_spec_fields.rs has the spec's
//! other fields and what only a new pod is checked for.

use kube_client::Client;
use serde_json::{Value, json};

use crate::kubectl::{kubectl_failure, session};
use crate::support::*;

pub(crate) const PODS: &str = "/api/v1/namespaces/default/pods";
pub(crate) const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
pub(crate) const SUBDOMAIN: &str = r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(crate) const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

pub(crate) fn container(name: &str) -> Value {
    json!({"name": name, "image": "img:1"})
}

pub(crate) fn pod(spec: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

pub(crate) fn deployment(spec: &Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}})
}

/// Creates a Pod `p` and a Deployment `d` with `spec` as their pod spec; asserts both are 422
/// Invalid with `expected` (field under the pod spec, reason, message), in order, and the
/// Pod's message as Kubernetes words it.
pub(crate) async fn assert_refused(c: &Client, spec: Value, expected: &[(&str, &str, &str)]) {
    for (path, body, prefix) in [
        (PODS, pod(&spec), "spec"),
        (DEPLOYS, deployment(&spec), "spec.template.spec"),
    ] {
        let (code, status) = post(c, path, &body).await;
        assert_eq!(
            (code, status["reason"].as_str()),
            (422, Some("Invalid")),
            "{status}"
        );
        let want: Vec<(String, String, String)> = expected
            .iter()
            .map(|(f, r, m)| (format!("{prefix}.{f}"), (*r).to_owned(), (*m).to_owned()))
            .collect();
        let (message, got) = invalid(&status);
        assert_eq!(got, want, "{path}");
        if path == PODS {
            let text: Vec<String> = want.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
            let expected = match text.as_slice() {
                [one] => format!("Pod \"p\" is invalid: {one}"),
                _ => format!("Pod \"p\" is invalid: [{}]", text.join(", ")),
            };
            assert_eq!(message, expected);
        }
    }
}

/// [`assert_refused`] on a new server.
pub(crate) async fn refused(spec: Value, expected: &[(&str, &str, &str)]) {
    let s = start().await;
    assert_refused(&client(&s), spec, expected).await;
}

/// TestValidateContainers / TestValidateInitContainers: names are DNS labels unique across
/// containers and init containers, pull and termination message policies are known.
#[tokio::test]
async fn container_names_must_be_unique_labels_and_policies_known() {
    let s = start().await;
    let c = client(&s);
    let spec = json!({"containers": [container("app"), container("app")]});
    let dup = [(
        "containers[1].name",
        "FieldValueDuplicate",
        "Duplicate value: \"app\"",
    )];
    assert_refused(&c, spec, &dup).await;
    let spec = json!({"containers": [container("app")], "initContainers": [container("app")]});
    let dup = [(
        "initContainers[0].name",
        "FieldValueDuplicate",
        "Duplicate value: \"app\"",
    )];
    assert_refused(&c, spec, &dup).await;
    let mut bad = container("App_1");
    bad["imagePullPolicy"] = json!("Sometimes");
    bad["terminationMessagePolicy"] = json!("Never");
    let label = format!("Invalid value: \"App_1\": {LABEL}");
    assert_refused(&c, json!({"containers": [bad]}), &[
        ("containers[0].name", "FieldValueInvalid", &label),
        ("containers[0].terminationMessagePolicy", "FieldValueNotSupported",
         "Unsupported value: \"Never\": supported values: \"File\", \"FallbackToLogsOnError\""),
        ("containers[0].imagePullPolicy", "FieldValueNotSupported",
         "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\""),
    ])
    .await;
}

/// TestValidateInitContainers: an init container's restart policy may only be `Always`, and
/// without it no probes.
#[tokio::test]
async fn init_containers_restart_always_or_have_no_probes() {
    let mut sidecar = container("side");
    sidecar["restartPolicy"] = json!("OnFailure");
    sidecar["livenessProbe"] = json!({"exec": {"command": ["true"]}});
    refused(
        json!({"containers": [container("app")], "initContainers": [sidecar]}),
        &[
            (
                "initContainers[0].restartPolicy",
                "FieldValueNotSupported",
                "Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ),
            (
                "initContainers[0].livenessProbe",
                "FieldValueForbidden",
                "Forbidden: may not be set for init containers without restartPolicy=Always",
            ),
        ],
    )
    .await;
}

/// TestValidateContainerPorts: names are IANA service names unique in a container, numbers
/// in range, protocols known; TestValidatePodSpec: host ports unique across containers.
#[tokio::test]
async fn container_ports_are_checked_and_host_ports_unique() {
    let mut app = container("app");
    app["ports"] = json!([
        {"name": "http", "containerPort": 80},
        {"name": "http", "containerPort": 70000, "protocol": "ICMP"},
        {"name": "Web_1", "containerPort": 0, "hostPort": 8080}
    ]);
    let mut other = container("other");
    other["ports"] = json!([{"containerPort": 81, "hostPort": 8080}]);
    refused(json!({"containers": [app, other]}), &[
        ("containers[0].ports[1].name", "FieldValueDuplicate", "Duplicate value: \"http\""),
        ("containers[0].ports[1].containerPort", "FieldValueInvalid",
         "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        ("containers[0].ports[1].protocol", "FieldValueNotSupported",
         "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""),
        ("containers[0].ports[2].name", "FieldValueInvalid",
         "Invalid value: \"Web_1\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
        ("containers[0].ports[2].containerPort", "FieldValueRequired", "Required value"),
        ("containers[1].ports[0].hostPort", "FieldValueDuplicate", "Duplicate value: \"TCP//8080\""),
    ])
    .await;
}

/// TestValidateEnv: relaxed names (printable ASCII but `=`), `valueFrom` with exactly one
/// source and no `value` beside it, key selectors with a key, downward API field paths
/// (subscripted labels allowed) and resources with their divisors.
#[tokio::test]
async fn env_names_and_value_sources_are_checked() {
    let cm = json!({"configMapKeyRef": {"name": "cm", "key": "k"}});
    let mut app = container("app");
    app["env"] = json!([
        {"name": "1 relaxed.name", "value": "ok"},
        {"name": "A=B", "value": "x"},
        {"name": "NONE", "valueFrom": {}},
        {"name": "BOTH", "value": "v", "valueFrom": cm},
        {"name": "TWO", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"},
                                       "secretKeyRef": {"name": "s", "key": ""}}},
        {"name": "LABELS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
        {"name": "FOO", "valueFrom": {"fieldRef": {"fieldPath": "spec.foo"}}},
        {"name": "GPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}},
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}
    ]);
    refused(json!({"containers": [app]}), &[
        ("containers[0].env[1].name", "FieldValueInvalid",
         "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"),
        ("containers[0].env[2].valueFrom", "FieldValueInvalid",
         "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
        ("containers[0].env[3].valueFrom", "FieldValueInvalid",
         "Invalid value: \"\": may not be specified when `value` is not empty"),
        ("containers[0].env[4].valueFrom.secretKeyRef.key", "FieldValueRequired", "Required value"),
        ("containers[0].env[4].valueFrom", "FieldValueInvalid",
         "Invalid value: \"\": may not have more than one field specified at a time"),
        ("containers[0].env[5].valueFrom.fieldRef.fieldPath", "FieldValueNotSupported",
         "Unsupported value: \"metadata.labels\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\""),
        ("containers[0].env[6].valueFrom.fieldRef.fieldPath", "FieldValueInvalid",
         "Invalid value: \"spec.foo\": error converting fieldPath: field label not supported: spec.foo"),
        ("containers[0].env[7].valueFrom.resourceFieldRef.resource", "FieldValueNotSupported",
         "Unsupported value: \"limits.gpu\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\""),
        ("containers[0].env[8].valueFrom.resourceFieldRef.divisor", "FieldValueInvalid",
         "Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource"),
    ])
    .await;
}

/// TestValidateResourceRequirements: requests no more than limits (printed canonical, as
/// `Quantity.String()`), non-negative quantities, extended resources with requests equal to
/// limits, standard names for containers. Kubernetes walks a container's `limits` and
/// `requests` maps in random order, so each container has at most one invalid entry per map:
/// the order of the causes is then the same on both (this server's name order is a README
/// "What still differs").
#[tokio::test]
async fn resource_requests_limits_and_names_are_checked() {
    let with = |name: &str, resources: Value| {
        let mut c = container(name);
        c["resources"] = resources;
        c
    };
    let containers = json!([
        with(
            "storage",
            json!({"limits": {"ephemeral-storage": "-1Gi"}, "requests": {"ephemeral-storage": "-2Gi"}})
        ),
        with(
            "cpu",
            json!({"limits": {"cpu": "1000m"}, "requests": {"cpu": "1.5"}})
        ),
        with(
            "gpu",
            json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}})
        ),
        with(
            "memory",
            json!({"limits": {"memory": "512Mi"}, "requests": {"memory": "1Gi"}})
        ),
        with(
            "named",
            json!({"limits": {"gpu": "1"}, "requests": {"gpu": "1"}})
        ),
    ]);
    refused(
        json!({"containers": containers}),
        &[
            (
                "containers[0].resources.limits[ephemeral-storage]",
                "FieldValueInvalid",
                "Invalid value: \"-1Gi\": must be greater than or equal to 0",
            ),
            (
                "containers[0].resources.requests[ephemeral-storage]",
                "FieldValueInvalid",
                "Invalid value: \"-2Gi\": must be greater than or equal to 0",
            ),
            (
                "containers[1].resources.requests",
                "FieldValueInvalid",
                "Invalid value: \"1500m\": must be less than or equal to cpu limit of 1",
            ),
            (
                "containers[2].resources.requests",
                "FieldValueInvalid",
                "Invalid value: \"1\": must be equal to example.com/gpu limit of 2",
            ),
            (
                "containers[3].resources.requests",
                "FieldValueInvalid",
                "Invalid value: \"1Gi\": must be less than or equal to memory limit of 512Mi",
            ),
            (
                "containers[4].resources.limits[gpu]",
                "FieldValueInvalid",
                "Invalid value: gpu: must be a standard resource type or fully qualified",
            ),
            (
                "containers[4].resources.limits[gpu]",
                "FieldValueInvalid",
                "Invalid value: gpu: must be a standard resource for containers",
            ),
            (
                "containers[4].resources.requests[gpu]",
                "FieldValueInvalid",
                "Invalid value: gpu: must be a standard resource type or fully qualified",
            ),
            (
                "containers[4].resources.requests[gpu]",
                "FieldValueInvalid",
                "Invalid value: gpu: must be a standard resource for containers",
            ),
        ],
    )
    .await;
}

/// TestValidateVolumes / TestValidateVolumeMounts: names unique DNS labels, one source per
/// volume, a source's required fields, downward API items (reported without their index, as
/// Kubernetes does), mounts of declared volumes at unique paths.
#[tokio::test]
async fn volumes_and_mounts_are_checked() {
    let mut app = container("app");
    app["volumeMounts"] = json!([
        {"name": "missing", "mountPath": "/a"},
        {"name": "v", "mountPath": "/a"},
        {"name": "v", "mountPath": "", "subPath": "../up"}
    ]);
    let spec = json!({"containers": [app], "volumes": [
        {"name": "v", "emptyDir": {}},
        {"name": "v", "emptyDir": {}},
        {"name": "two", "emptyDir": {}, "hostPath": {"path": "/tmp"}},
        {"name": "V_1", "secret": {}},
        {"name": "cm", "configMap": {"name": "c", "items": [{"key": "k", "path": "/abs"}]}},
        {"name": "dw", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu"}},
            {"path": "../x", "fieldRef": {"fieldPath": "status.podIP"}}
        ]}}
    ]});
    let label = format!("Invalid value: \"V_1\": {LABEL}");
    refused(
        spec,
        &[
            (
                "volumes[1].name",
                "FieldValueDuplicate",
                "Duplicate value: \"v\"",
            ),
            (
                "volumes[2].hostPath",
                "FieldValueForbidden",
                "Forbidden: may not specify more than 1 volume type",
            ),
            (
                "volumes[3].secret.secretName",
                "FieldValueRequired",
                "Required value",
            ),
            ("volumes[3].name", "FieldValueInvalid", &label),
            (
                "volumes[4].configMap.items[0].path",
                "FieldValueInvalid",
                "Invalid value: \"/abs\": must be a relative path",
            ),
            (
            "volumes[5].downwardAPI.resourceFieldRef.containerName",
            "FieldValueRequired",
            "Required value",
        ),
        (
            "volumes[5].downwardAPI.path",
            "FieldValueInvalid",
            "Invalid value: \"../x\": must not contain '..'",
        ),
        (
            "volumes[5].downwardAPI.fieldRef.fieldPath",
            "FieldValueNotSupported",
            "Unsupported value: \"status.podIP\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
        ),
        (
                "containers[0].volumeMounts[0].name",
                "FieldValueNotFound",
                "Not found: \"missing\"",
            ),
            (
                "containers[0].volumeMounts[1].mountPath",
                "FieldValueInvalid",
                "Invalid value: \"/a\": must be unique",
            ),
            (
                "containers[0].volumeMounts[2].mountPath",
                "FieldValueRequired",
                "Required value",
            ),
            (
                "containers[0].volumeMounts.subPath",
                "FieldValueInvalid",
                "Invalid value: \"../up\": must not contain '..'",
            ),
        ],
    )
    .await;
}

/// TestValidateProjectedVolumeSource / TestValidateVolumes (projected): one kind per source,
/// named secrets, no path projected twice, token lifetimes of at least 10 minutes and a path
/// (both reported at the volume's `projected` path, as Kubernetes does).
#[tokio::test]
async fn projected_volume_sources_are_checked() {
    let sources = json!([
        {"secret": {"items": [{"key": "a", "path": "same"}]}},
        {"configMap": {"name": "c", "items": [{"key": "b", "path": "same"}]}},
        {"serviceAccountToken": {"expirationSeconds": 60, "path": ""}},
        {"secret": {"name": "s"}, "configMap": {"name": "c2"}}
    ]);
    let spec = json!({"containers": [container("app")],
                      "volumes": [{"name": "proj", "projected": {"sources": sources}}]});
    let at = "volumes[0].projected";
    let (secret, token) = (
        format!("{at}.sources[0].secret.name"),
        format!("{at}.sources[2].serviceAccountToken.expirationSeconds"),
    );
    let (path, fourth) = (format!("{at}.path"), format!("{at}.sources[3]"));
    refused(
        spec,
        &[
            (&secret, "FieldValueRequired", "Required value"),
            (
                at,
                "FieldValueInvalid",
                "Invalid value: \"c\": conflicting duplicate paths",
            ),
            (
                &token,
                "FieldValueInvalid",
                "Invalid value: 60: may not specify a duration less than 10 minutes",
            ),
            (&path, "FieldValueRequired", "Required value"),
            (
                &fourth,
                "FieldValueForbidden",
                "Forbidden: may not specify more than 1 volume type per source",
            ),
        ],
    )
    .await;
}

/// TestValidateProbe / TestValidateHandler: one handler, non-negative numbers, a success
/// threshold of 1 for liveness and startup probes, ports in range, HTTP header names.
#[tokio::test]
async fn probes_need_one_handler_and_sane_numbers() {
    let mut app = container("app");
    app["livenessProbe"] = json!({"periodSeconds": 5, "successThreshold": 2});
    app["readinessProbe"] = json!({"exec": {"command": ["true"]}, "httpGet": {"port": 80}});
    app["lifecycle"] = json!({"preStop": {"httpGet": {"port": "http",
        "httpHeaders": [{"name": "X-Ok", "value": "1"}, {"name": "Bad Header", "value": "2"}]}}});
    app["startupProbe"] = json!({"tcpSocket": {"port": 70000}, "initialDelaySeconds": -1});
    let at = "containers[0]";
    refused(
        json!({"containers": [app]}),
        &[
            (
                &format!("{at}.lifecycle.preStop.httpGet.httpHeaders"),
                "FieldValueInvalid",
                "Invalid value: \"Bad Header\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
            ),
            (
                &format!("{at}.livenessProbe"),
                "FieldValueRequired",
                "Required value: must specify a handler type",
            ),
            (
                &format!("{at}.livenessProbe.successThreshold"),
                "FieldValueInvalid",
                "Invalid value: 2: must be 1",
            ),
            (
                &format!("{at}.readinessProbe.httpGet"),
                "FieldValueForbidden",
                "Forbidden: may not specify more than 1 handler type",
            ),
            (
                &format!("{at}.startupProbe.tcpSocket.port"),
                "FieldValueInvalid",
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            ),
            (
                &format!("{at}.startupProbe.initialDelaySeconds"),
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
        ],
    )
    .await;
}

/// A spec using ports, env sources, resources, volumes and mounts, probes and a sidecar is
/// valid as a Pod and as a template; a volume source given as `null` defaults to `emptyDir`;
/// quantities are stored canonical.
async fn a_full_valid_pod_spec_is_created(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let mut app = container("app");
    app["ports"] = json!([{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}]);
    app["env"] = json!([
        {"name": "A", "value": "1"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    ]);
    app["resources"] = json!({"limits": {"cpu": 1, "memory": "1Gi", "example.com/gpu": "1"},
                              "requests": {"cpu": "0.5", "memory": "1024Mi", "example.com/gpu": "1"}});
    app["volumeMounts"] = json!([{"name": "data", "mountPath": "/data", "subPath": "sub"},
                                 {"name": "cfg", "mountPath": "/cfg"}]);
    app["livenessProbe"] = json!({"httpGet": {"port": "http", "path": "/healthz"}});
    app["readinessProbe"] = json!({"tcpSocket": {"port": 8080}});
    let mut sidecar = container("side");
    sidecar["restartPolicy"] = json!("Always");
    sidecar["startupProbe"] = json!({"exec": {"command": ["true"]}});
    let spec = json!({"containers": [app], "initContainers": [sidecar], "volumes": [
        {"name": "data", "emptyDir": null},
        {"name": "cfg", "configMap": {"name": "c", "items": [{"key": "k", "path": "k.txt"}]}},
        {"name": "podinfo", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "mem", "resourceFieldRef": {"containerName": "app", "resource": "limits.memory", "divisor": "1Mi"}}
        ]}}
    ]});
    for (path, body) in [(PODS, pod(&spec)), (DEPLOYS, deployment(&spec))] {
        let (code, created) = post(&c, path, &body).await;
        assert_eq!(code, 201, "{created}");
    }
    let (_, got) = get(&c, &format!("{PODS}/p")).await;
    assert_eq!(
        got["spec"]["volumes"][0],
        json!({"name": "data", "emptyDir": {}})
    );
    // Quantities are stored as `Quantity.String()` prints them.
    let canonical = json!({"limits": {"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"},
                           "requests": {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"}});
    assert_eq!(got["spec"]["containers"][0]["resources"], canonical);
    let (_, got) = get(&c, &format!("{DEPLOYS}/d")).await;
    let template = &got["spec"]["template"]["spec"]["containers"][0]["resources"];
    assert_eq!(template, &canonical);
}

/// The duplicate-name case on every backend: validation runs before storage.
async fn a_duplicate_container_name_is_422_on_every_backend(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let spec = json!({"containers": [container("app"), container("app")]});
    let dup = [(
        "containers[1].name",
        "FieldValueDuplicate",
        "Duplicate value: \"app\"",
    )];
    assert_refused(&c, spec, &dup).await;
}

on_every_backend!(
    a_full_valid_pod_spec_is_created,
    a_duplicate_container_name_is_422_on_every_backend,
);

/// kubectl prints the 422 as Kubernetes' kubectl does: `The Pod "x" is invalid: ...`.
#[test]
fn kubectl_create_of_a_pod_with_duplicate_container_names_prints_the_422() {
    let Some((kc, server, dir)) = session("pod-spec") else {
        return;
    };
    let manifest = dir.join("pod.yaml");
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - {name: app, image: nginx:1}\n  - {name: app, image: nginx:1}\n";
    std::fs::write(&manifest, pod).unwrap();
    let err = kubectl_failure(&kc, &server, &["create", "-f", manifest.to_str().unwrap()]);
    assert!(
        err.contains(r#"The Pod "x" is invalid: spec.containers[1].name: Duplicate value: "app""#),
        "{err}"
    );
}
