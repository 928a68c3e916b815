//! List rules of the reference: resource versions, pagination, validation, selectors.

use kcache_testkit::within;
use serde_json::json;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn seeded(n: usize) -> (kcache_apiserver::TestServer, kube_client::Client, Vec<u64>) {
    let s = start().await;
    let c = client(&s);
    let mut rvs = Vec::new();
    for i in 0..n {
        let (code, cm) = post(&c, CMS, &configmap(&format!("cm-{i:02}"), "x")).await;
        assert_eq!(code, 201);
        rvs.push(rv(&cm));
    }
    (s, c, rvs)
}

#[tokio::test]
async fn list_body_has_kind_api_version_rv_and_items() {
    let (_s, c, rvs) = seeded(2).await;
    let (code, list) = get(&c, CMS).await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    assert!(
        list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= rvs[1]
    );
    assert_eq!(names(&list), ["cm-00", "cm-01"]);
    let (_, empty) = get(&c, "/api/v1/namespaces/other/configmaps").await;
    assert_eq!(empty["items"], json!([]));
}

#[tokio::test]
async fn limit_and_continue_paginate_with_remaining_item_count() {
    let (_s, c, _) = seeded(5).await;
    let (_, page1) = get(&c, &format!("{CMS}?limit=2")).await;
    assert_eq!(names(&page1), ["cm-00", "cm-01"]);
    assert_eq!(page1["metadata"]["remainingItemCount"], 3);
    let token = page1["metadata"]["continue"].as_str().unwrap().to_owned();
    post(&c, CMS, &configmap("cm-99", "late")).await;
    let (_, page2) = get(&c, &format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(names(&page2), ["cm-02", "cm-03"]);
    assert_eq!(
        page2["metadata"]["resourceVersion"], page1["metadata"]["resourceVersion"],
        "one consistent snapshot"
    );
    let token = page2["metadata"]["continue"].as_str().unwrap().to_owned();
    let (_, page3) = get(&c, &format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(
        names(&page3),
        ["cm-04"],
        "the object created after the first page is not in the snapshot"
    );
    assert!(page3["metadata"].get("continue").is_none());
}

#[tokio::test]
async fn remaining_item_count_is_absent_with_a_selector() {
    let (_s, c, _) = seeded(3).await;
    let (_, page) = get(
        &c,
        &format!("{CMS}?limit=1&fieldSelector=metadata.name%21%3Dcm-00"),
    )
    .await;
    assert_eq!(names(&page), ["cm-01"]);
    assert!(page["metadata"]["continue"].is_string());
    assert!(page["metadata"].get("remainingItemCount").is_none());
}

#[tokio::test]
async fn expired_continue_token_is_410() {
    let (s, c, _) = seeded(3).await;
    let (_, page) = get(&c, &format!("{CMS}?limit=1")).await;
    post(&c, CMS, &configmap("later", "x")).await;
    s.compact_now().await.unwrap();
    let (code, status) = get(
        &c,
        &format!(
            "{CMS}?limit=1&continue={}",
            page["metadata"]["continue"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(code, 410);
    assert_eq!(status["reason"], "Expired");
}

#[tokio::test]
async fn continue_with_a_resource_version_is_400_and_garbage_continue_is_400() {
    let (_s, c, rvs) = seeded(2).await;
    let (_, page) = get(&c, &format!("{CMS}?limit=1")).await;
    let token = page["metadata"]["continue"].as_str().unwrap();
    let (code, _) = get(
        &c,
        &format!("{CMS}?limit=1&continue={token}&resourceVersion={}", rvs[0]),
    )
    .await;
    assert_eq!(code, 400);
    let (code, status) = get(&c, &format!("{CMS}?limit=1&continue=garbage")).await;
    assert_eq!(code, 400);
    assert_eq!(status["reason"], "BadRequest");
}

#[tokio::test]
async fn rv_zero_serves_the_cache_and_ignores_limit() {
    let (s, c, _) = seeded(3).await;
    within("the watch caches to sync", s.wait_caches_synced())
        .await
        .unwrap();
    let (_, list) = get(&c, &format!("{CMS}?limit=1&resourceVersion=0")).await;
    assert_eq!(names(&list).len(), 3);
    assert!(list["metadata"].get("continue").is_none());
}

#[tokio::test]
async fn exact_rv_lists_the_old_state_and_410_once_compacted() {
    let (s, c, rvs) = seeded(3).await;
    let (_, list) = get(
        &c,
        &format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
            rvs[0]
        ),
    )
    .await;
    assert_eq!(names(&list), ["cm-00"]);
    assert_eq!(list["metadata"]["resourceVersion"], rvs[0].to_string());
    let (_, legacy) = get(&c, &format!("{CMS}?resourceVersion={}&limit=10", rvs[1])).await;
    assert_eq!(
        names(&legacy),
        ["cm-00", "cm-01"],
        "N with a limit is exact (legacy)"
    );
    s.compact_now().await.unwrap();
    let (code, status) = get(
        &c,
        &format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
            rvs[0]
        ),
    )
    .await;
    assert_eq!(code, 410);
    assert_eq!(status["reason"], "Expired");
}

#[tokio::test]
async fn not_older_than_waits_for_the_cache_then_504() {
    let (_s, c, rvs) = seeded(2).await;
    let (code, list) = get(
        &c,
        &format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=NotOlderThan",
            rvs[1]
        ),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(names(&list).len(), 2);
    let (code, list) = get(&c, &format!("{CMS}?resourceVersion={}", rvs[1])).await;
    assert_eq!((code, names(&list).len()), (200, 2));
    let (code, status) = get(
        &c,
        &format!("{CMS}?resourceVersion=99999&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!(code, 504);
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test]
async fn list_option_validation_errors_are_422_list_options() {
    let (_s, c, _) = seeded(1).await;
    for query in [
        "sendInitialEvents=true",
        "resourceVersionMatch=Exact",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersion=1&resourceVersionMatch=Sometimes",
    ] {
        let (code, status) = get(&c, &format!("{CMS}?{query}")).await;
        assert_eq!(code, 422, "{query}");
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["kind"], "ListOptions");
    }
}

#[tokio::test]
async fn bad_selectors_are_400() {
    let (_s, c, _) = seeded(1).await;
    for query in [
        "labelSelector=app%20in%20web",
        "fieldSelector=spec.unknown%3Dx",
        "fieldSelector=garbage",
    ] {
        let (code, status) = get(&c, &format!("{CMS}?{query}")).await;
        assert_eq!(code, 400, "{query}");
        assert_eq!(status["reason"], "BadRequest");
    }
}

#[tokio::test]
async fn label_and_pod_field_selectors_filter_lists() {
    let s = start().await;
    let c = client(&s);
    let pods = "/api/v1/namespaces/default/pods";
    create_pod(&c, pods, &pod("default", "a", "n1", "Running", "web")).await;
    create_pod(&c, pods, &pod("default", "b", "n2", "Pending", "web")).await;
    create_pod(&c, pods, &pod("default", "c", "n1", "Running", "db")).await;
    let (_, l) = get(&c, &format!("{pods}?labelSelector=app%3Dweb")).await;
    assert_eq!(names(&l), ["a", "b"]);
    let (_, l) = get(
        &c,
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,status.phase%3DRunning",
    )
    .await;
    assert_eq!(names(&l), ["a", "c"]);
    let (_, l) = get(
        &c,
        &format!("{pods}?fieldSelector=metadata.name%3Db&limit=5"),
    )
    .await;
    assert_eq!(names(&l), ["b"]);
}

#[tokio::test]
async fn table_form_of_configmaps_has_name_data_and_age_columns() {
    let (_s, c, _) = seeded(2).await;
    let req = http::Request::get(CMS)
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let table: serde_json::Value = c.request(req).await.unwrap();
    assert_eq!(table["kind"], "Table");
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Data", "Age"]);
    assert_eq!(table["rows"][1]["cells"][0], "cm-01");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

#[tokio::test]
async fn a_continue_token_carrying_revision_0_is_400() {
    let (_s, c, _) = seeded(2).await;
    // {"v":"meta.k8s.io/v1","rv":0,"start":"default/cm-01"} in URL-safe base64.
    let token = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJkZWZhdWx0L2NtLTAxIn0";
    let (code, status) = get(&c, &format!("{CMS}?limit=1&continue={token}")).await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        status["message"],
        "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
    );
}
