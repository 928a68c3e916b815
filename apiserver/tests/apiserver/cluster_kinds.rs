//! The cluster-level kinds a 1.34 cluster serves besides the workloads: limitranges,
//! podtemplates, controllerrevisions, ingressclasses, certificatesigningrequests (with
//! `approval`), runtimeclasses, flowschemas, prioritylevelconfigurations, csidrivers, csinodes,
//! csistoragecapacities and volumeattachments: served, defaulted, validated and printed.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::kubectl::{kubectl, session};
use crate::support::*;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// The Table of `path`.
pub(crate) async fn table(c: &kube_client::Client, path: &str) -> Value {
    let req = http::Request::get(path)
        .header("accept", TABLE)
        .body(Vec::new())
        .unwrap();
    c.request(req).await.unwrap()
}

/// The names of a Table's columns.
pub(crate) fn columns(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect()
}

/// A PEM certificate request, base64 as the `request` field carries it.
fn csr_request() -> String {
    let pem = "-----BEGIN CERTIFICATE REQUEST-----\nMIIBAA==\n-----END CERTIFICATE REQUEST-----\n";
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn csr(name: &str) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": name},
           "spec": {"request": csr_request(), "signerName": "example.com/signer",
                    "usages": ["client auth"], "expirationSeconds": 3600}})
}

/// One valid object per kind, the path of its collection, and its table's columns.
fn fixtures() -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        (
            "/api/v1/namespaces/default/limitranges",
            json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                   "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}}]}}),
            vec!["Name", "Created At"],
        ),
        (
            "/api/v1/namespaces/default/podtemplates",
            json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt"},
                   "template": {"metadata": {"labels": {"app": "x"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}),
            vec!["Name", "Containers", "Images", "Pod Labels"],
        ),
        (
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "cr"},
                   "data": {"spec": {}}, "revision": 2}),
            vec!["Name", "Controller", "Revision", "Age"],
        ),
        (
            "/apis/networking.k8s.io/v1/ingressclasses",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
                   "spec": {"controller": "k8s.io/ingress-nginx"}}),
            vec!["Name", "Controller", "Parameters", "Age"],
        ),
        (
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            csr("csr1"),
            vec![
                "Name",
                "Age",
                "SignerName",
                "Requestor",
                "RequestedDuration",
                "Condition",
            ],
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses",
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
                   "handler": "runsc"}),
            vec!["Name", "Handler", "Age"],
        ),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
                   "metadata": {"name": "batch"},
                   "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}}),
            vec![
                "Name",
                "Type",
                "NominalConcurrencyShares",
                "Queues",
                "HandSize",
                "QueueLengthLimit",
                "Age",
            ],
        ),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                   "metadata": {"name": "batch"},
                   "spec": {"priorityLevelConfiguration": {"name": "batch"}}}),
            vec![
                "Name",
                "PriorityLevel",
                "MatchingPrecedence",
                "DistinguisherMethod",
                "Age",
                "MissingPL",
            ],
        ),
        (
            "/apis/storage.k8s.io/v1/csidrivers",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example.com"},
                   "spec": {}}),
            vec![
                "Name",
                "AttachRequired",
                "PodInfoOnMount",
                "StorageCapacity",
                "TokenRequests",
                "RequiresRepublish",
                "Modes",
                "Age",
            ],
        ),
        (
            "/apis/storage.k8s.io/v1/csinodes",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "node-1"},
                   "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1"}]}}),
            vec!["Name", "Drivers", "Age"],
        ),
        (
            "/apis/storage.k8s.io/v1/volumeattachments",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "va"},
                   "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
                            "source": {"persistentVolumeName": "pv-1"}}}),
            vec!["Name", "Attacher", "PV", "Node", "Attached", "Age"],
        ),
        (
            "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity", "metadata": {"name": "cap"},
                   "storageClassName": "fast", "capacity": "10Gi"}),
            vec!["Name", "StorageClassName", "Capacity"],
        ),
    ]
}

#[tokio::test]
async fn cluster_kinds_are_created_listed_and_printed() {
    let s = start().await;
    let c = client(&s);
    for (path, obj, expected_columns) in fixtures() {
        let name = obj["metadata"]["name"].as_str().unwrap().to_owned();
        let (code, created) = post(&c, path, &obj).await;
        assert_eq!(code, 201, "{path}: {created}");
        let (code, got) = get(&c, &format!("{path}/{name}")).await;
        assert_eq!(
            (code, &got["metadata"]["uid"]),
            (200, &created["metadata"]["uid"])
        );
        let (code, list) = get(&c, path).await;
        assert_eq!((code, names(&list)), (200, vec![name.clone()]), "{path}");
        let t = table(&c, path).await;
        assert_eq!(columns(&t), expected_columns, "{path}");
        assert_eq!(t["rows"][0]["cells"][0], json!(name), "{path}");
        assert_eq!(
            t["rows"][0]["cells"].as_array().map(Vec::len),
            Some(expected_columns.len())
        );
    }
    // Defaults: a container limit's default and default request, a CSIDriver's spec, a
    // priority level's queuing and a flow schema's precedence.
    let (_, lr) = get(&c, "/api/v1/namespaces/default/limitranges/lr").await;
    assert_eq!(lr["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
    assert_eq!(
        lr["spec"]["limits"][0]["defaultRequest"],
        json!({"cpu": "2"})
    );
    let (_, driver) = get(&c, "/apis/storage.k8s.io/v1/csidrivers/csi.example.com").await;
    assert_eq!(driver["spec"]["attachRequired"], true);
    assert_eq!(
        driver["spec"]["volumeLifecycleModes"],
        json!(["Persistent"])
    );
    assert_eq!(driver["spec"]["fsGroupPolicy"], "ReadWriteOnceWithFSType");
    let (_, level) = get(
        &c,
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/batch",
    )
    .await;
    assert_eq!(
        level["spec"]["limited"]["limitResponse"]["queuing"],
        json!({"queues": 64, "handSize": 8, "queueLengthLimit": 50})
    );
    assert_eq!(level["spec"]["limited"]["nominalConcurrencyShares"], 30);
    let (_, schema) = get(
        &c,
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/batch",
    )
    .await;
    assert_eq!(schema["spec"]["matchingPrecedence"], 1000);
    let (_, va) = get(&c, "/apis/storage.k8s.io/v1/volumeattachments/va").await;
    assert_eq!(va["status"], json!({"attached": false}));
}

/// The refusals of each kind's validation, as (path, object, field of the first cause).
#[tokio::test]
async fn cluster_kinds_refuse_what_their_validation_refuses() {
    let s = start().await;
    let c = client(&s);
    let mut bad_csr = csr("bad");
    bad_csr["spec"]["signerName"] = json!("no-slash");
    bad_csr["spec"]["expirationSeconds"] = json!(60);
    let cases = [
        (
            "/api/v1/namespaces/default/limitranges",
            json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "inverted"},
                   "spec": {"limits": [{"type": "Pod", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]}}),
            "spec.limits[0].min[cpu]",
            "Invalid value: \"2\": min value 2 is greater than max value 1",
        ),
        (
            "/apis/networking.k8s.io/v1/ingressclasses",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "x"}, "spec": {}}),
            "spec.controller",
            "Required value",
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses",
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "x"}, "handler": "Bad_Handler"}),
            "handler",
            "",
        ),
        (
            "/apis/storage.k8s.io/v1/volumeattachments",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "x"}, "spec": {"attacher": "a.b", "nodeName": "n"}}),
            "spec.source",
            "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        ),
        (
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            bad_csr,
            "spec.signerName",
            "",
        ),
        (
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "x"}, "revision": 1}),
            "data",
            "Required value: data is mandatory",
        ),
    ];
    for (path, obj, field, message) in cases {
        let (code, status) = post(&c, path, &obj).await;
        assert_eq!(
            (code, status["reason"].as_str()),
            (422, Some("Invalid")),
            "{path}: {status}"
        );
        let (_, causes) = invalid(&status);
        assert_eq!(causes[0].0, field, "{path}: {status}");
        if !message.is_empty() {
            assert_eq!(causes[0].2, message, "{path}");
        }
    }
    // The controller of an IngressClass may not change.
    let class = json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "c"},
                       "spec": {"controller": "example.com/a"}});
    let (_, created) = post(&c, "/apis/networking.k8s.io/v1/ingressclasses", &class).await;
    let mut changed = created.clone();
    changed["spec"]["controller"] = json!("example.com/b");
    let (code, status) = put(&c, "/apis/networking.k8s.io/v1/ingressclasses/c", &changed).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        invalid(&status).1[0],
        (
            "spec.controller".to_owned(),
            "FieldValueInvalid".to_owned(),
            "Invalid value: \"example.com/b\": field is immutable".to_owned()
        )
    );
}

/// `kubectl certificate approve` goes through `approval`; `status` may not approve, and may set
/// the certificate; the main resource keeps the status.
#[tokio::test]
async fn csr_approval_and_status_subresources() {
    let s = start().await;
    let c = client(&s);
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let (code, created) = post(&c, csrs, &csr("node-csr")).await;
    assert_eq!((code, &created["status"]), (201, &json!({})));
    let mut approved = created.clone();
    approved["status"]["conditions"] =
        json!([{"type": "Approved", "status": "True", "reason": "Test"}]);
    let (code, status) = put(&c, &format!("{csrs}/node-csr/status"), &approved).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        invalid(&status).1[0].2,
        "Forbidden: updates may not add a condition of type \"Approved\""
    );
    let (code, written) = put(&c, &format!("{csrs}/node-csr/approval"), &approved).await;
    assert_eq!(code, 200, "{written}");
    let condition = &written["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert!(condition["lastUpdateTime"].is_string() && condition["lastTransitionTime"].is_string());
    // Issued through status.
    let cert = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    let mut issued = written.clone();
    issued["status"]["certificate"] = json!(cert);
    let (code, answer) = put(&c, &format!("{csrs}/node-csr/status"), &issued).await;
    assert_eq!(code, 200, "{answer}");
    let t = table(&c, csrs).await;
    assert_eq!(t["rows"][0]["cells"][5], "Approved,Issued");
    assert_eq!(t["rows"][0]["cells"][4], "60m");
    // The main resource keeps the status.
    let mut cleared = answer.clone();
    cleared["status"] = json!({});
    cleared["metadata"]["labels"] = json!({"a": "b"});
    let (code, kept) = put(&c, &format!("{csrs}/node-csr"), &cleared).await;
    assert_eq!((code, &kept["status"]["certificate"]), (200, &json!(cert)));
    assert_eq!(kept["metadata"]["labels"]["a"], "b");
}

#[test]
fn kubectl_approves_csrs_and_lists_the_cluster_kinds() {
    let Some((kc, server, dir)) = session("cluster-kinds") else {
        return;
    };
    let manifest = dir.join("csr.json");
    std::fs::write(&manifest, csr("kubectl-csr").to_string()).unwrap();
    let out = kubectl(&kc, &server, &["create", "-f", manifest.to_str().unwrap()]);
    assert!(out.contains("created"), "{out}");
    let out = kubectl(&kc, &server, &["certificate", "approve", "kubectl-csr"]);
    assert!(out.contains("approved"), "{out}");
    let condition = kubectl(
        &kc,
        &server,
        &[
            "get",
            "csr",
            "kubectl-csr",
            "-o",
            "jsonpath={.status.conditions[0].type}",
        ],
    );
    assert_eq!(condition, "Approved");
    let resources = kubectl(&kc, &server, &["api-resources", "-o", "name"]);
    for name in [
        "limitranges",
        "podtemplates",
        "controllerrevisions.apps",
        "ingressclasses.networking.k8s.io",
        "certificatesigningrequests.certificates.k8s.io",
        "runtimeclasses.node.k8s.io",
        "flowschemas.flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
        "csidrivers.storage.k8s.io",
        "csinodes.storage.k8s.io",
        "csistoragecapacities.storage.k8s.io",
        "volumeattachments.storage.k8s.io",
    ] {
        assert!(
            resources.lines().any(|l| l == name),
            "{name} in {resources}"
        );
    }
}
