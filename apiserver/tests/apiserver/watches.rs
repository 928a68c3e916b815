//! Watch rules of the reference: resource versions, 410 inside 200, selectors, bookmarks,
//! watch-list, timeouts.

use kcache_apiserver::TestServer;
use kcache_testkit::within;
use kube_client::Client;
use serde_json::{Value, json};

use crate::support::*;

const PODS: &str = "/api/v1/namespaces/default/pods";

/// A server with pod "a" on node n1.
async fn pod_a() -> (TestServer, Client, Value) {
    let s = start().await;
    let c = client(&s);
    let (_, a) = post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    (s, c, a)
}

/// A watch of `path_and_query` (ending in `&` or `?`) from `obj`'s resource version.
async fn watch_after(c: &Client, path_and_query: &str, obj: &Value) -> WatchLines {
    watch(c, &format!("{path_and_query}resourceVersion={}", rv(obj))).await
}

#[tokio::test]
async fn watch_from_rv_n_gets_only_events_after_n() {
    let s = start().await;
    let c = client(&s);
    let (_, a) = post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let (_, b) = post(&c, PODS, &pod("default", "b", "n1", "Running", "web")).await;
    let mut w = watch(&c, &format!("{PODS}?watch=true&resourceVersion={}", rv(&a))).await;
    let e = next_change(&mut w).await;
    assert_eq!(e["type"], "ADDED");
    assert_eq!(e["object"]["metadata"]["name"], "b");
    assert_eq!(rv(&e["object"]), rv(&b));
}

#[tokio::test]
async fn watch_from_empty_rv_sends_the_full_state_as_added_then_changes() {
    let s = start().await;
    let c = client(&s);
    post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let mut w = watch(&c, &format!("{PODS}?watch=1")).await;
    let e = next_change(&mut w).await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("a"))
    );
    post(&c, PODS, &pod("default", "b", "n1", "Running", "web")).await;
    let e = next_change(&mut w).await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("b"))
    );
}

#[tokio::test]
async fn watch_from_zero_sends_the_cached_state_then_changes() {
    let s = start().await;
    let c = client(&s);
    post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    within("the watch caches to sync", s.wait_caches_synced())
        .await
        .unwrap();
    let mut w = watch(&c, &format!("{PODS}?watch=1&resourceVersion=0")).await;
    assert_eq!(next_change(&mut w).await["object"]["metadata"]["name"], "a");
    // A pod bound to a node would stay for its grace period: none.
    c.request_text(
        http::Request::delete(format!("{PODS}/a?gracePeriodSeconds=0"))
            .body(Vec::new())
            .unwrap(),
    )
    .await
    .unwrap();
    let e = next_change(&mut w).await;
    assert_eq!(e["type"], "DELETED");
}

#[tokio::test]
async fn too_old_watch_is_an_error_event_410_inside_a_200_stream() {
    let s = start().await;
    let c = client(&s);
    let (_, a) = post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    post(&c, PODS, &pod("default", "b", "n1", "Running", "web")).await;
    within("the watch caches to sync", s.wait_caches_synced())
        .await
        .unwrap();
    s.compact_now().await.unwrap();
    let mut w = watch(&c, &format!("{PODS}?watch=1&resourceVersion={}", rv(&a))).await;
    let e = next_event(&mut w).await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(
        e["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version")
    );
    assert!(ends(&mut w).await);
}

#[tokio::test]
async fn watch_list_from_a_future_rv_waits_then_an_error_event_504_inside_a_200_stream() {
    let s = start().await;
    let c = client(&s);
    let mut w = watch(
        &c,
        &format!("{PODS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=999999"),
    )
    .await;
    let e = next_event(&mut w).await;
    assert_eq!(e["type"], "ERROR");
    let status = &e["object"];
    assert_eq!(status["code"], 504);
    assert_eq!(status["reason"], "Timeout");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("Too large resource version")
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    assert!(ends(&mut w).await);
}

#[tokio::test]
async fn plain_watch_from_a_future_rv_is_established_and_gets_only_events_after_it() {
    let (_s, c, a) = pod_a().await;
    let future = rv(&a) + 2;
    let mut w = watch(
        &c,
        &format!("{PODS}?watch=1&allowWatchBookmarks=true&resourceVersion={future}"),
    )
    .await;
    for name in ["b", "c", "d"] {
        post(&c, PODS, &pod("default", name, "n1", "Running", "web")).await;
    }
    let e = loop {
        let e = next_event(&mut w).await;
        if e["type"] != "BOOKMARK" {
            break e;
        }
        assert!(rv(&e["object"]) >= future, "no bookmark before the RV");
    };
    assert_eq!(e["type"], "ADDED");
    assert_eq!(e["object"]["metadata"]["name"], "d");
    assert_eq!(rv(&e["object"]), future + 1);
}

#[tokio::test]
async fn object_leaving_the_label_selector_becomes_deleted_stamped_with_the_event_rv() {
    let (_s, c, a) = pod_a().await;
    let mut w = watch_after(&c, &format!("{PODS}?watch=1&labelSelector=app%3Dweb&"), &a).await;
    let (_, updated) = patch(
        &c,
        &format!("{PODS}/a"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"app": "db"}}}),
    )
    .await;
    let e = next_change(&mut w).await;
    assert_eq!(e["type"], "DELETED");
    assert_eq!(
        e["object"]["metadata"]["labels"]["app"], "web",
        "the previous object"
    );
    assert_eq!(
        rv(&e["object"]),
        rv(&updated),
        "stamped with the event's resource version"
    );
    patch(
        &c,
        &format!("{PODS}/a"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .await;
    assert_eq!(next_change(&mut w).await["type"], "ADDED");
}

#[tokio::test]
async fn node_name_watchers_see_a_pod_created_on_their_node_and_leaving_it() {
    let (_s, c, a) = pod_a().await;
    let mut n1 = watch_after(
        &c,
        "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&",
        &a,
    )
    .await;
    // A pod gets its node when created with one or through `pods/binding` (not served here):
    // an update may not set or change it (ValidatePodUpdate).
    post(&c, PODS, &pod("default", "b", "n1", "Pending", "web")).await;
    let e = next_change(&mut n1).await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("b"))
    );
    let mut moved = a.clone();
    moved["spec"]["nodeName"] = json!("n3");
    let (code, _) = put(&c, &format!("{PODS}/a"), &moved).await;
    assert_eq!(code, 422, "a bound pod does not move");
    // Without a grace period (a bound pod would otherwise stay for 30 s).
    let (code, _) = request(
        &c,
        "DELETE",
        &format!("{PODS}/a?gracePeriodSeconds=0"),
        None,
    )
    .await;
    assert_eq!(code, 200);
    let e = next_change(&mut n1).await;
    assert_eq!(e["type"], "DELETED");
    assert_eq!(
        (
            e["object"]["metadata"]["name"].as_str(),
            e["object"]["spec"]["nodeName"].as_str()
        ),
        (Some("a"), Some("n1"))
    );
}

#[tokio::test]
async fn status_phase_field_selector_filters_watches() {
    let s = start().await;
    let c = client(&s);
    create_pod(&c, PODS, &pod("default", "running", "n1", "Running", "web")).await;
    create_pod(&c, PODS, &pod("default", "pending", "n1", "Pending", "web")).await;
    let mut w = watch(
        &c,
        &format!("{PODS}?watch=1&fieldSelector=status.phase%21%3DRunning"),
    )
    .await;
    assert_eq!(
        next_change(&mut w).await["object"]["metadata"]["name"],
        "pending"
    );
}

#[tokio::test]
async fn bookmarks_come_at_the_interval_with_kind_api_version_and_rv() {
    let (_s, c, a) = pod_a().await;
    let mut w = watch_after(&c, &format!("{PODS}?watch=1&allowWatchBookmarks=true&"), &a).await;
    let e = next_event(&mut w).await;
    assert_eq!(e["type"], "BOOKMARK");
    assert_eq!(e["object"]["kind"], "Pod");
    assert_eq!(e["object"]["apiVersion"], "v1");
    assert!(rv(&e["object"]) >= rv(&a));
}

#[tokio::test]
async fn watches_without_allow_bookmarks_get_none() {
    let s = start().await;
    let c = client(&s);
    let (_, a) = post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let mut w = watch(
        &c,
        &format!("{PODS}?watch=1&timeoutSeconds=1&resourceVersion={}", rv(&a)),
    )
    .await;
    assert!(
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            futures::StreamExt::next(&mut w)
        )
        .await
        .unwrap()
        .is_none()
    );
}

#[tokio::test]
async fn watch_list_sends_the_state_then_the_initial_events_end_bookmark() {
    let s = start().await;
    let c = client(&s);
    post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    post(&c, PODS, &pod("default", "b", "n1", "Running", "web")).await;
    let mut w = watch(
        &c,
        &format!("{PODS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!(next_change(&mut w).await["object"]["metadata"]["name"], "a");
    assert_eq!(next_change(&mut w).await["object"]["metadata"]["name"], "b");
    let end = next_event(&mut w).await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    post(&c, PODS, &pod("default", "c", "n1", "Running", "web")).await;
    assert_eq!(next_change(&mut w).await["object"]["metadata"]["name"], "c");
}

#[tokio::test]
async fn watch_list_validation_errors_are_422() {
    let s = start().await;
    let c = client(&s);
    for query in [
        "watch=1&sendInitialEvents=true&allowWatchBookmarks=true",
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        "watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1",
    ] {
        let (code, status) = get(&c, &format!("{PODS}?{query}")).await;
        assert_eq!(code, 422, "{query}");
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["kind"], "ListOptions");
    }
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let s = start().await;
    let c = client(&s);
    let mut w = watch(&c, &format!("{PODS}?watch=1&timeoutSeconds=1")).await;
    assert!(ends(&mut w).await);
}

#[tokio::test]
async fn timeout_seconds_zero_means_the_default_timeout() {
    let s = start().await;
    let c = client(&s);
    let mut w = watch(&c, &format!("{PODS}?watch=1&timeoutSeconds=0")).await;
    let (_, a) = post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let e = next_change(&mut w).await;
    assert_eq!((e["type"].as_str(), &e["object"]), (Some("ADDED"), &a));
}

#[tokio::test]
async fn events_are_encoded_with_their_resource_version() {
    let s = start().await;
    let c = client(&s);
    let mut w = watch(&c, &format!("{PODS}?watch=1")).await;
    let (_, a) = post(&c, PODS, &pod("default", "a", "n1", "Running", "web")).await;
    let e = next_change(&mut w).await;
    assert_eq!(e["object"], a);
}
