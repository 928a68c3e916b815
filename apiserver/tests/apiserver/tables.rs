//! Server-side Tables (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): columns as
//! Kubernetes' printers (`pkg/printers/internalversion/printers.go`), `includeObject`, the
//! v1beta1 form, and Table watch events.

use kcache_testkit::within;
use serde_json::{Value, json};

use crate::support::*;

const PODS: &str = "/api/v1/namespaces/default/pods";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

async fn table(c: &kube_client::Client, path: &str, accept: &str) -> Value {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())
        .unwrap();
    c.request(req).await.unwrap()
}

fn column_names(table: &Value, priority: i64) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["priority"] == priority)
        .filter_map(|c| c["name"].as_str())
        .collect()
}

#[tokio::test]
async fn pod_tables_have_kubectl_columns_and_wide_ones_at_priority_1() {
    let s = start().await;
    let c = client(&s);
    create_pod(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let t = table(&c, PODS, TABLE).await;
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        column_names(&t, 0),
        ["Name", "Ready", "Status", "Restarts", "Age"]
    );
    assert_eq!(
        column_names(&t, 1),
        ["IP", "Node", "Nominated Node", "Readiness Gates"]
    );
    let cells = t["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(
        cells[..4],
        [json!("a"), json!("0/1"), json!("Running"), json!("0")]
    );
    assert_eq!(
        cells[5..],
        [
            json!("<none>"),
            json!("n1"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[tokio::test]
async fn include_object_chooses_what_rows_carry() {
    let s = start().await;
    let c = client(&s);
    post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        &configmap("cm", "1"),
    )
    .await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let t = table(&c, &format!("{cms}?includeObject=None"), TABLE).await;
    assert!(t["rows"][0].get("object").is_none());
    let t = table(&c, &format!("{cms}?includeObject=Object"), TABLE).await;
    assert_eq!(t["rows"][0]["object"]["data"], json!({"v": "1"}));
    let t = table(&c, &format!("{cms}/cm"), TABLE).await;
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let req = http::Request::get(format!("{cms}?includeObject=Everything"))
        .header("accept", TABLE)
        .body(Vec::new())
        .unwrap();
    let err = c.request::<Value>(req).await.unwrap_err();
    assert!(
        matches!(err, kube_client::Error::Api(ref s) if s.code == 422),
        "{err}"
    );
}

#[tokio::test]
async fn v1beta1_tables_are_answered_in_v1beta1() {
    let s = start().await;
    let c = client(&s);
    let t = table(
        &c,
        "/api/v1/namespaces",
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
    )
    .await;
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(column_names(&t, 0), ["Name", "Status", "Age"]);
}

#[tokio::test]
async fn watch_events_carry_tables_with_the_columns_in_the_first_only() {
    let s = start().await;
    let c = client(&s);
    let cms = "/api/v1/namespaces/default/configmaps";
    post(&c, cms, &configmap("a", "1")).await;
    post(&c, cms, &configmap("b", "1")).await;
    let req = http::Request::get(format!("{cms}?watch=1"))
        .header("accept", TABLE)
        .body(Vec::new())
        .unwrap();
    let mut lines = c.request_stream(req).await.unwrap().lines();
    use futures::{AsyncBufReadExt, StreamExt};
    let mut next = async || -> Value {
        serde_json::from_str(
            &within("the next watch line", lines.next())
                .await
                .unwrap()
                .unwrap(),
        )
        .unwrap()
    };
    let first = next().await;
    assert_eq!(
        (first["type"].as_str(), first["object"]["kind"].as_str()),
        (Some("ADDED"), Some("Table"))
    );
    assert_eq!(column_names(&first["object"], 0), ["Name", "Data", "Age"]);
    let second = next().await;
    assert_eq!(second["object"]["columnDefinitions"], Value::Null);
    assert_eq!(second["object"]["rows"][0]["cells"][0], "b");
}
