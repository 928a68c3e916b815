//! Validation of the kinds of the API groups beyond core and apps over HTTP: status code and
//! causes (field paths and messages) as a real API server answers. The source of each group
//! of cases is named above its test.

use serde_json::{Value, json};

use crate::support::*;

/// The field paths and messages of a 422's causes.
fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or("").to_owned();
            (text("field"), text("message"))
        })
        .collect()
}

fn cause(field: &str, message: &str) -> (String, String) {
    (field.to_owned(), message.to_owned())
}

/// POSTs `body` to `path`, expecting 422 Invalid; returns its causes.
async fn refused(c: &kube_client::Client, path: &str, body: &Value) -> Vec<(String, String)> {
    let (code, status) = post(c, path, body).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "{status}"
    );
    causes(&status)
}

fn object(api_version: &str, kind: &str, name: &str, fields: Value) -> Value {
    let mut obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    for (k, v) in fields.as_object().unwrap() {
        obj[k] = v.clone();
    }
    obj
}

// pkg/apis/autoscaling/validation/validation_test.go (TestValidateHorizontalPodAutoscaler:
// minReplicas, maxReplicas below minReplicas, missing scaleTargetRef kind and name, a
// Utilization target of 0), through v2 and through v1 (validated as v2).
#[tokio::test]
async fn an_autoscaler_with_bad_replicas_target_or_reference_is_422() {
    let s = start().await;
    let c = client(&s);
    let spec = json!({"scaleTargetRef": {"apiVersion": "apps/v1"}, "minReplicas": 3, "maxReplicas": 2,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}]});
    let hpa = object(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "h",
        json!({"spec": spec}),
    );
    let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    assert_eq!(
        refused(&c, v2, &hpa).await,
        [
            cause(
                "spec.maxReplicas",
                "Invalid value: 2: must be greater than or equal to `minReplicas`"
            ),
            cause("spec.scaleTargetRef.kind", "Required value"),
            cause("spec.scaleTargetRef.name", "Required value"),
            cause(
                "spec.metrics[0].resource.target.averageUtilization",
                "Invalid value: 0: must be greater than 0"
            ),
        ]
    );
    let v1 = object(
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        "h",
        json!({"spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 0, "maxReplicas": 0,
        "targetCPUUtilizationPercentage": -1}}),
    );
    assert_eq!(
        refused(
            &c,
            "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers",
            &v1
        )
        .await,
        [
            cause(
                "spec.minReplicas",
                "Invalid value: 0: must be greater than or equal to 1"
            ),
            cause(
                "spec.maxReplicas",
                "Invalid value: 0: must be greater than 0"
            ),
            cause(
                "spec.metrics[0].resource.target.averageUtilization",
                "Invalid value: -1: must be greater than 0"
            ),
        ]
    );
}

// pkg/apis/discovery/validation/validation_test.go (TestValidateEndpointSlice: missing and
// unsupported address types, an endpoint without addresses, a bad IPv4 address;
// TestValidateEndpointSliceUpdate: the address type is immutable).
#[tokio::test]
async fn an_endpoint_slice_needs_an_address_type_it_keeps_and_addresses() {
    let s = start().await;
    let c = client(&s);
    let path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let slice = |fields: Value| object("discovery.k8s.io/v1", "EndpointSlice", "es", fields);
    assert_eq!(
        refused(&c, path, &slice(json!({}))).await,
        [cause("addressType", "Required value")]
    );
    assert_eq!(
        refused(
            &c,
            path,
            &slice(json!({"addressType": "IP", "endpoints": [{"addresses": []}]}))
        )
        .await,
        [
            cause(
                "addressType",
                "Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""
            ),
            cause(
                "endpoints[0].addresses",
                "Required value: must contain at least 1 address"
            ),
        ]
    );
    assert_eq!(
        refused(
            &c,
            path,
            &slice(json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.300"]}]}))
        )
        .await,
        [cause(
            "endpoints[0].addresses[0]",
            "Invalid value: \"10.0.0.300\": must be a valid IPv4 address"
        )]
    );
    let (code, created) = post(&c, path, &slice(json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.3"]}], "ports": [{"port": 80}]}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["ports"][0],
        json!({"name": "", "port": 80, "protocol": "TCP"})
    );
    let mut update = created.clone();
    update["addressType"] = json!("IPv6");
    update["endpoints"] = json!([{"addresses": ["fd00::1"]}]);
    let (code, status) = put(&c, &format!("{path}/es"), &update).await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&status),
        [cause(
            "addressType",
            "Invalid value: \"IPv6\": field is immutable"
        )]
    );
}

// pkg/apis/storage/validation/validation_test.go (TestValidateStorageClass: missing
// provisioner, unsupported reclaim policy; TestValidateStorageClassUpdate: parameters and
// reclaim policy forbidden to change).
#[tokio::test]
async fn a_storage_class_needs_a_provisioner_and_keeps_its_parameters() {
    let s = start().await;
    let c = client(&s);
    let path = "/apis/storage.k8s.io/v1/storageclasses";
    let sc = |fields: Value| object("storage.k8s.io/v1", "StorageClass", "fast", fields);
    assert_eq!(
        refused(&c, path, &sc(json!({"reclaimPolicy": "Recycle"}))).await,
        [
            cause("provisioner", "Required value"),
            cause(
                "reclaimPolicy",
                "Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\""
            ),
        ]
    );
    let (code, created) = post(
        &c,
        path,
        &sc(json!({"provisioner": "kubernetes.io/no-provisioner", "parameters": {"a": "1"}})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        (
            created["reclaimPolicy"].as_str(),
            created["volumeBindingMode"].as_str()
        ),
        (Some("Delete"), Some("Immediate"))
    );
    let mut update = created.clone();
    update["parameters"] = json!({"a": "2"});
    update["reclaimPolicy"] = json!("Retain");
    let (code, status) = put(&c, &format!("{path}/fast"), &update).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [
            cause(
                "parameters",
                "Forbidden: updates to parameters are forbidden."
            ),
            cause(
                "reclaimPolicy",
                "Forbidden: updates to reclaimPolicy are forbidden."
            ),
        ]
    );
}

// pkg/apis/core/validation/validation_test.go (TestValidatePersistentVolumes: missing
// access modes, capacity and volume type; TestValidatePersistentVolumeClaim: missing access
// modes and storage request; TestValidatePersistentVolumeClaimUpdate: immutable spec).
#[tokio::test]
async fn volumes_and_claims_need_modes_capacity_and_keep_their_spec() {
    let s = start().await;
    let c = client(&s);
    let pv = object("v1", "PersistentVolume", "pv1", json!({"spec": {}}));
    assert_eq!(
        refused(&c, "/api/v1/persistentvolumes", &pv).await,
        [
            cause("spec.accessModes", "Required value"),
            cause("spec.capacity", "Required value"),
            cause(
                "spec.capacity",
                "Unsupported value: core.ResourceList(nil): supported values: \"storage\""
            ),
            cause("spec", "Required value: must specify a volume type"),
        ]
    );
    let pvcs = "/api/v1/namespaces/default/persistentvolumeclaims";
    let pvc = object("v1", "PersistentVolumeClaim", "data", json!({"spec": {}}));
    assert_eq!(
        refused(&c, pvcs, &pvc).await,
        [
            cause(
                "spec.accessModes",
                "Required value: at least 1 access mode is required"
            ),
            cause("spec.resources[storage]", "Required value"),
        ]
    );
    let pvc = object(
        "v1",
        "PersistentVolumeClaim",
        "data",
        json!({"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    let (code, created) = post(&c, pvcs, &pvc).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["status"], json!({"phase": "Pending"}));
    assert_eq!(created["spec"]["volumeMode"], "Filesystem");
    let mut update = created.clone();
    update["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    let (code, status) = put(&c, &format!("{pvcs}/data"), &update).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [cause(
            "spec",
            "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
        )]
    );
}

// pkg/apis/networking/validation/validation_test.go (TestValidateNetworkPolicy: invalid
// port numbers and protocols, an ipBlock without cidr, unsupported policy types, selectors
// with an In requirement without values or a bad label key).
#[tokio::test]
async fn a_network_policy_with_bad_ports_peers_or_types_is_422() {
    let s = start().await;
    let c = client(&s);
    let np = object(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "np",
        json!({"spec": {
        "podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
        "ingress": [{"ports": [{"port": 70000}, {"protocol": "ICMP", "port": 80}],
                     "from": [{"ipBlock": {}}, {"podSelector": {"matchLabels": {"bad key": "v"}}}]}],
        "policyTypes": ["Ingress", "Sideways"]}}),
    );
    assert_eq!(
        refused(
            &c,
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            &np
        )
        .await,
        [
            cause(
                "spec.podSelector.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
            cause(
                "spec.ingress[0].ports[0].port",
                "Invalid value: 70000: must be between 1 and 65535, inclusive"
            ),
            cause(
                "spec.ingress[0].ports[1].protocol",
                "Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\""
            ),
            cause("spec.ingress[0].from[0].ipBlock.cidr", "Required value"),
            cause(
                "spec.ingress[0].from[1].podSelector.matchLabels",
                "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            cause(
                "spec.policyTypes[1]",
                "Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\""
            ),
        ]
    );
}

// pkg/apis/policy/validation/validation_test.go (TestValidateMinAvailablePodDisruptionBudget
// Spec, TestValidateMinAvailablePodAndMaxUnavailableDisruptionBudgetSpec: negative, over 100%
// and malformed percentages; TestValidateUnhealthyPodEvictionPolicyDisruptionBudgetSpec) and
// apimachinery's meta/v1/validation (TestValidateLabelSelector: an unknown operator).
#[tokio::test]
async fn a_pdb_with_bad_budgets_or_policy_is_422() {
    let s = start().await;
    let c = client(&s);
    let path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let pdb = |spec: Value| {
        object(
            "policy/v1",
            "PodDisruptionBudget",
            "pdb",
            json!({"spec": spec}),
        )
    };
    assert_eq!(
        refused(
            &c,
            path,
            &pdb(json!({"minAvailable": -1, "unhealthyPodEvictionPolicy": "Never"}))
        )
        .await,
        [
            cause(
                "spec.minAvailable",
                "Invalid value: -1: must be greater than or equal to 0"
            ),
            cause(
                "spec.unhealthyPodEvictionPolicy",
                "Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\""
            ),
        ]
    );
    assert_eq!(
        refused(&c, path, &pdb(json!({"maxUnavailable": "110%"}))).await,
        [cause(
            "spec.maxUnavailable",
            "Invalid value: 110%: must not be greater than 100%"
        )]
    );
    assert_eq!(
        refused(&c, path, &pdb(json!({"minAvailable": "1.5"}))).await,
        [cause(
            "spec.minAvailable",
            "Invalid value: 1.5: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
        )]
    );
    let selector =
        json!({"matchExpressions": [{"key": "app", "operator": "Bogus", "values": ["a"]}]});
    assert_eq!(
        refused(
            &c,
            path,
            &pdb(json!({"minAvailable": 1, "selector": selector}))
        )
        .await,
        [cause(
            "spec.selector.matchExpressions[0].operator",
            "Invalid value: \"Bogus\": not a valid selector operator"
        )]
    );
}

// pkg/apis/networking/validation/validation_test.go (TestValidateIngress: neither default
// backend nor rules, a path without pathType, a relative Prefix path, a backend without
// service port).
#[tokio::test]
async fn an_ingress_without_backend_or_with_bad_paths_is_422() {
    let s = start().await;
    let c = client(&s);
    let path = "/apis/networking.k8s.io/v1/namespaces/default/ingresses";
    let ing = |spec: Value| {
        object(
            "networking.k8s.io/v1",
            "Ingress",
            "ing",
            json!({"spec": spec}),
        )
    };
    assert_eq!(
        refused(&c, path, &ing(json!({}))).await,
        [cause(
            "spec",
            "Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
        )]
    );
    let rules = json!({"rules": [{"host": "foo.example.com", "http": {"paths": [
        {"path": "/a", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
        {"path": "b", "pathType": "Prefix", "backend": {"service": {"name": "web"}}}]}}]});
    assert_eq!(
        refused(&c, path, &ing(rules)).await,
        [
            cause(
                "spec.rules[0].http.paths[0].pathType",
                "Required value: pathType must be specified"
            ),
            cause(
                "spec.rules[0].http.paths[1].path",
                "Invalid value: \"b\": must be an absolute path"
            ),
            cause(
                "spec.rules[0].http.paths[1].backend",
                "Required value: port name or number is required"
            ),
        ]
    );
}

// pkg/apis/coordination/validation/validation_test.go (TestValidateLeaseSpec: non-positive
// duration, negative transitions, a preferred holder without strategy).
#[tokio::test]
async fn a_lease_with_a_bad_duration_transitions_or_holder_is_422() {
    let s = start().await;
    let c = client(&s);
    let lease = object(
        "coordination.k8s.io/v1",
        "Lease",
        "l",
        json!({"spec": {
        "leaseDurationSeconds": 0, "leaseTransitions": -1, "preferredHolder": "me"}}),
    );
    assert_eq!(
        refused(
            &c,
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            &lease
        )
        .await,
        [
            cause(
                "spec.leaseDurationSeconds",
                "Invalid value: 0: must be greater than 0"
            ),
            cause(
                "spec.leaseTransitions",
                "Invalid value: -1: must be greater than or equal to 0"
            ),
            cause(
                "spec.preferredHolder",
                "Forbidden: may only be specified if `strategy` is defined"
            ),
        ]
    );
}

// pkg/apis/core/validation/events_test.go (TestValidateEventForCoreV1Events and
// TestValidateEventForNewV1EventsAPI: eventTime, reporting controller and instance, action,
// reason and type required for events.k8s.io/v1; TestEventV1EventTimeImmutability and the
// immutable note).
#[tokio::test]
async fn an_events_api_event_needs_its_reporting_fields_and_keeps_them() {
    let s = start().await;
    let c = client(&s);
    let path = "/apis/events.k8s.io/v1/namespaces/default/events";
    let regarding = json!({"kind": "Pod", "namespace": "default", "name": "p"});
    let bare = object(
        "events.k8s.io/v1",
        "Event",
        "e1",
        json!({"regarding": regarding}),
    );
    assert_eq!(
        refused(&c, path, &bare).await,
        [
            cause("eventTime", "Required value"),
            cause("type", "Invalid value: \"\": has invalid value: "),
        ]
    );
    let timed = object(
        "events.k8s.io/v1",
        "Event",
        "e1",
        json!({"regarding": regarding,
        "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal"}),
    );
    assert_eq!(
        refused(&c, path, &timed).await,
        [
            cause("reportingController", "Required value"),
            cause(
                "reportingController",
                "Invalid value: \"\": name part must be non-empty"
            ),
            cause(
                "reportingController",
                "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ),
            cause("reportingInstance", "Required value"),
            cause("action", "Required value"),
            cause("reason", "Required value"),
        ]
    );
    let mut event = timed.clone();
    for (k, v) in [
        ("reportingController", "example.com/ctl"),
        ("reportingInstance", "ctl-1"),
        ("action", "Sync"),
        ("reason", "Synced"),
        ("note", "done"),
    ] {
        event[k] = json!(v);
    }
    let (code, created) = post(&c, path, &event).await;
    assert_eq!(code, 201, "{created}");
    let mut update = created.clone();
    update["note"] = json!("changed");
    let (code, status) = put(&c, &format!("{path}/e1"), &update).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [cause(
            "message",
            "Invalid value: \"changed\": field is immutable"
        )]
    );
}
