//! Server-side Tables of the kinds of the API groups beyond core and apps, with the columns and
//! cells of Kubernetes' `pkg/printers/internalversion/printers.go` (printStorageClass,
//! printPersistentVolume, printPersistentVolumeClaim, printHorizontalPodAutoscaler with
//! formatHPAMetrics, printPodDisruptionBudget, printNetworkPolicy, printEndpointSlice,
//! printEvent for events.k8s.io).

use serde_json::{Value, json};

use crate::support::*;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// The column names (priority 0, then 1) and the first row's cells.
async fn printed(c: &kube_client::Client, path: &str) -> (Vec<String>, Vec<String>, Vec<Value>) {
    let req = http::Request::get(path)
        .header("accept", TABLE)
        .body(Vec::new())
        .unwrap();
    let t: Value = c.request(req).await.unwrap();
    let names = |priority: i64| {
        t["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["priority"] == priority)
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    let cells = t["rows"][0]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (names(0), names(1), cells)
}

async fn create(c: &kube_client::Client, path: &str, body: Value) {
    let (code, created) = post(c, path, &body).await;
    assert_eq!(code, 201, "{created}");
}

#[tokio::test]
async fn storage_tables_print_classes_volumes_and_claims() {
    let s = start().await;
    let c = client(&s);
    create(&c, "/apis/storage.k8s.io/v1/storageclasses", json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "example.com/disk", "allowVolumeExpansion": true})).await;
    let (columns, _, cells) = printed(&c, "/apis/storage.k8s.io/v1/storageclasses").await;
    assert_eq!(
        columns,
        [
            "Name",
            "Provisioner",
            "ReclaimPolicy",
            "VolumeBindingMode",
            "AllowVolumeExpansion",
            "Age"
        ]
    );
    assert_eq!(
        cells[..5],
        [
            json!("std (default)"),
            json!("example.com/disk"),
            json!("Delete"),
            json!("Immediate"),
            json!(true)
        ]
    );
    create(&c, "/api/v1/persistentvolumes", json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "hostPath": {"path": "/d"},
                 "storageClassName": "std", "claimRef": {"namespace": "default", "name": "data"}}})).await;
    let (columns, wide, cells) = printed(&c, "/api/v1/persistentvolumes").await;
    assert_eq!(
        columns,
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age"
        ]
    );
    assert_eq!(wide, ["VolumeMode"]);
    assert_eq!(
        cells[..9],
        [
            json!("pv1"),
            json!("5Gi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Pending"),
            json!("default/data"),
            json!("std"),
            json!("<unset>"),
            json!("")
        ]
    );
    assert_eq!(cells[10], "Filesystem");
    create(&c, "/api/v1/namespaces/default/persistentvolumeclaims", json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})).await;
    let (columns, _, cells) =
        printed(&c, "/api/v1/namespaces/default/persistentvolumeclaims").await;
    assert_eq!(
        columns,
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age"
        ]
    );
    assert_eq!(
        cells[..7],
        [
            json!("data"),
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!(""),
            json!("<unset>")
        ]
    );
}

#[tokio::test]
async fn autoscaler_and_budget_tables_print_targets_and_budgets() {
    let s = start().await;
    let c = client(&s);
    let hpas = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    create(&c, hpas, json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]}})).await;
    let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    // Lists and gets through either version print the stored object.
    for path in [
        hpas.to_owned(),
        v1.to_owned(),
        format!("{hpas}/web"),
        format!("{v1}/web"),
    ] {
        let (columns, _, cells) = printed(&c, &path).await;
        assert_eq!(
            columns,
            [
                "Name",
                "Reference",
                "Targets",
                "MinPods",
                "MaxPods",
                "Replicas",
                "Age"
            ]
        );
        assert_eq!(
            cells[..6],
            [
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: <unknown>/60%, memory: <unknown>/500Mi + 1 more..."),
                json!("1"),
                json!(5),
                json!(0)
            ],
            "{path}"
        );
    }
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    create(&c, pdbs, json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}})).await;
    let (columns, _, cells) = printed(&c, pdbs).await;
    assert_eq!(
        columns,
        [
            "Name",
            "Min Available",
            "Max Unavailable",
            "Allowed Disruptions",
            "Age"
        ]
    );
    assert_eq!(
        cells[..4],
        [json!("web"), json!("50%"), json!("N/A"), json!(0)]
    );
}

#[tokio::test]
async fn network_and_event_tables_print_selectors_endpoints_and_events() {
    let s = start().await;
    let c = client(&s);
    let nps = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies";
    create(&c, nps, json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}}})).await;
    let (columns, _, cells) = printed(&c, nps).await;
    assert_eq!(columns, ["Name", "Pod-Selector", "Age"]);
    assert_eq!(cells[..2], [json!("np"), json!("app=web")]);
    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    create(&c, slices, json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "es"},
        "addressType": "IPv4", "ports": [{"port": 80}, {"name": "https"}],
        "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]})).await;
    let (columns, _, cells) = printed(&c, slices).await;
    assert_eq!(
        columns,
        ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    );
    assert_eq!(
        cells[..4],
        [
            json!("es"),
            json!("IPv4"),
            json!("80,https"),
            json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...")
        ]
    );
    let events = "/apis/events.k8s.io/v1/namespaces/default/events";
    create(&c, events, json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "type": "Normal", "reason": "Started", "action": "Start", "note": "started ",
        "reportingController": "kubelet", "reportingInstance": "node-1"})).await;
    let (columns, _, cells) = printed(&c, events).await;
    // printEvent's columns: no leading Name; the name last, at priority 1.
    assert_eq!(
        columns,
        ["Last Seen", "Type", "Reason", "Object", "Message"]
    );
    assert_eq!(
        cells[1..4],
        [json!("Normal"), json!("Started"), json!("pod/p")]
    );
    assert_eq!(cells[5], "kubelet, node-1");
    assert_eq!(cells[6], "started");
    assert_eq!(cells[9], "e1");
}
