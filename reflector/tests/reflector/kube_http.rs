//! [`KubeListerWatcher`] over HTTP against a small canned server on 127.0.0.1.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::{
    KubeListerWatcher, ListOptions, ListWatchError, ListerWatcher, Reflector, ReflectorConfig,
    WatchEvent, is_expired,
};
use kcache_store::testing::pod_json;
use kube_client::{Api, Client, Config};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::RecordingStore;
use kcache_testkit::within;

#[derive(Default)]
struct Server {
    queries: Mutex<Vec<String>>,
    watch_body: Mutex<Vec<String>>,
}

fn list_body(items: &[usize], rv: u64, continue_token: Option<&str>) -> String {
    let items: Vec<_> = items
        .iter()
        .map(|i| pod_json(*i, 3, *i as u64 + 1))
        .collect();
    json!({"kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": rv.to_string(), "continue": continue_token.unwrap_or("")},
        "items": items})
    .to_string()
}

async fn handle(State(server): State<Arc<Server>>, uri: Uri) -> Response {
    let query = uri.query().unwrap_or("").to_owned();
    server.queries.lock().push(query.clone());
    if query.contains("watch=true") {
        let lines: Vec<Result<String, std::convert::Infallible>> = server
            .watch_body
            .lock()
            .iter()
            .map(|l| Ok(format!("{l}\n")))
            .collect();
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from_stream(futures::stream::iter(lines)))
            .unwrap();
    }
    let body = if query.contains("continue=expired") {
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "continue expired", "reason": "Expired", "code": 410});
        return (
            StatusCode::GONE,
            [("content-type", "application/json")],
            status.to_string(),
        )
            .into_response();
    } else if query.contains("continue=proxy") {
        return (StatusCode::BAD_GATEWAY, "upstream unavailable\n").into_response();
    } else if query.contains("continue=page2") {
        list_body(&[2, 3], 10, Some("page3"))
    } else if query.contains("continue=page3") {
        list_body(&[4], 10, None)
    } else if query.contains("limit=2") {
        list_body(&[0, 1], 10, Some("page2"))
    } else {
        list_body(&[0, 1, 2, 3, 4], 10, None)
    };
    ([("content-type", "application/json")], body).into_response()
}

async fn start() -> (Arc<Server>, Client) {
    let server = Arc::new(Server::default());
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(Arc::clone(&server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let config = Config::new(format!("http://{addr}").parse().unwrap());
    (server, Client::try_from(config).unwrap())
}

fn event(kind: &str, object: serde_json::Value) -> String {
    json!({"type": kind, "object": object}).to_string()
}

#[tokio::test]
async fn kube_lister_watcher_lists_every_page_in_order() {
    let (server, client) = start().await;
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client))
        .tweak_list_options(|o| o.label_selector = Some("tier=web".into()));
    let mut options = ListOptions {
        limit: Some(2),
        resource_version: Some("0".into()),
        ..ListOptions::default()
    };
    let mut names = Vec::new();
    loop {
        let page = lw.list(&options).await.unwrap();
        assert_eq!(page.resource_version, "10");
        names.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
        match page.continue_token {
            Some(token) => {
                options.continue_token = Some(token);
                options.resource_version = None;
            }
            None => break,
        }
    }
    let expected: Vec<String> = (0..5)
        .map(|i| {
            pod_json(i, 3, 1)["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(names, expected);
    let queries = server.queries.lock().clone();
    assert_eq!(
        queries[0],
        "labelSelector=tier%3Dweb&limit=2&resourceVersion=0"
    );
    assert_eq!(
        queries.len(),
        3,
        "each page fetched once, prefetched or not: {queries:?}"
    );
}

#[tokio::test]
async fn kube_lister_watcher_maps_status_errors() {
    let (_server, client) = start().await;
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client));
    let options = ListOptions {
        continue_token: Some("expired".into()),
        ..ListOptions::default()
    };
    let err = lw.list(&options).await.unwrap_err();
    assert!(is_expired(&err), "{err:?}");
}

#[tokio::test]
async fn kube_lister_watcher_maps_a_non_status_error_body_to_its_http_code() {
    let (_server, client) = start().await;
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client));
    let options = ListOptions {
        continue_token: Some("proxy".into()),
        ..ListOptions::default()
    };
    match lw.list(&options).await.unwrap_err() {
        ListWatchError::Api(status) => {
            assert_eq!(status.code, 502);
            assert_eq!(status.message, "upstream unavailable");
        }
        other => panic!("expected the HTTP error as a Status, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_lister_watcher_watch_decodes_events_in_order() {
    let (server, client) = start().await;
    let mut lines: Vec<String> = (0..300)
        .map(|i| event("ADDED", pod_json(i, 3, i as u64 + 1)))
        .collect();
    lines.push(event(
        "ADDED",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "resourceVersion": "400"}}),
    ));
    lines.push(event(
        "BOOKMARK",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "500",
            "annotations": {"k8s.io/initial-events-end": "true"}}}),
    ));
    lines.push(event(
        "ERROR",
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410, "message": "too old"}),
    ));
    *server.watch_body.lock() = lines;
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client));
    let options = ListOptions {
        resource_version: Some("0".into()),
        allow_watch_bookmarks: true,
        timeout_seconds: Some(300),
        ..ListOptions::default()
    };
    let stream = lw.watch(&options).await.unwrap();
    let events: Vec<_> = within("the watch to end", stream.collect()).await;
    assert_eq!(events.len(), 302, "the ConfigMap is skipped");
    for (i, e) in events[..300].iter().enumerate() {
        let Ok(WatchEvent::Added(p)) = e else {
            panic!("event {i}: {e:?}")
        };
        assert_eq!(
            p.metadata.resource_version.as_deref(),
            Some((i + 1).to_string().as_str())
        );
    }
    assert!(
        matches!(&events[300], Ok(WatchEvent::Bookmark(b)) if b.is_initial_events_end() && b.resource_version == "500")
    );
    assert!(matches!(&events[301], Ok(WatchEvent::Error(s)) if s.code == 410));
    assert_eq!(
        server.queries.lock()[0],
        "watch=true&resourceVersion=0&timeoutSeconds=300&allowWatchBookmarks=true"
    );
}

#[tokio::test]
async fn kube_lister_watcher_malformed_line_ends_the_stream_with_a_decode_error() {
    let (server, client) = start().await;
    *server.watch_body.lock() = vec![
        event("ADDED", pod_json(0, 3, 1)),
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":".into(),
        event("ADDED", pod_json(1, 3, 2)),
    ];
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client));
    let events = watch_all(&lw).await;
    assert_eq!(events.len(), 2);
    assert!(matches!(events[0], Ok(WatchEvent::Added(_))));
    assert!(matches!(events[1], Err(ListWatchError::Decode { .. })));
    let source = events[1].as_ref().err().and_then(std::error::Error::source);
    let parser = source.and_then(|e| e.downcast_ref::<serde_json::Error>());
    assert!(
        parser.is_some_and(serde_json::Error::is_eof),
        "the parser's error is the source: {source:?}"
    );
}

#[tokio::test]
async fn kube_lister_watcher_connection_error_keeps_the_io_error_as_its_source() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener); // nothing listens there any more
    let config = Config::new(format!("http://{addr}").parse().unwrap());
    let lw = KubeListerWatcher::new(Api::<Pod>::all(Client::try_from(config).unwrap()));
    let err = lw.list(&ListOptions::default()).await.err().unwrap();
    assert!(matches!(err, ListWatchError::Connection(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "connection error",
        "the cause is not repeated"
    );
    let mut chain = std::error::Error::source(&err);
    let mut refused = false;
    while let Some(e) = chain {
        refused |= e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
        chain = e.source();
    }
    assert!(refused, "the chain reaches the refused connect: {err:?}");
}

/// Every item of a watch with default options, to its end.
async fn watch_all(lw: &KubeListerWatcher<Pod>) -> Vec<Result<WatchEvent<Pod>, ListWatchError>> {
    let stream = lw.watch(&ListOptions::default()).await.unwrap();
    within("the watch to end", stream.collect()).await
}

/// A pod whose JSON is about `bytes` long (an annotation carries the bulk).
fn big_pod(i: usize, rv: u64, bytes: usize) -> serde_json::Value {
    let mut pod = pod_json(i, 3, rv);
    pod["metadata"]["annotations"] = json!({"big": "x".repeat(bytes)});
    pod
}

#[tokio::test]
async fn kube_lister_watcher_delivers_watch_lines_larger_than_the_read_ahead_bound() {
    let (server, client) = start().await;
    // 6 MiB events: past the 4 MiB read-ahead, under the default line bound.
    *server.watch_body.lock() = vec![
        event("ADDED", big_pod(0, 1, 6 << 20)),
        event("ADDED", big_pod(1, 2, 6 << 20)),
    ];
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client));
    let events = watch_all(&lw).await;
    assert_eq!(
        events.len(),
        2,
        "{:?}",
        events.iter().map(|e| e.as_ref().err()).collect::<Vec<_>>()
    );
    for (i, e) in events.iter().enumerate() {
        let Ok(WatchEvent::Added(p)) = e else {
            panic!("event {i}: {e:?}")
        };
        assert_eq!(
            p.metadata.annotations.as_ref().unwrap()["big"].len(),
            6 << 20
        );
    }
}

#[tokio::test]
async fn kube_lister_watcher_watch_line_past_the_bound_is_a_typed_error_not_a_clean_end() {
    let (server, client) = start().await;
    *server.watch_body.lock() = vec![
        event("ADDED", pod_json(0, 3, 1)),
        event("ADDED", big_pod(1, 2, 2 << 20)),
        event("ADDED", pod_json(2, 3, 3)),
    ];
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client)).max_watch_line_bytes(1 << 20);
    let events = watch_all(&lw).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(events[0], Ok(WatchEvent::Added(_))));
    assert!(matches!(
        events[1],
        Err(ListWatchError::WatchLineTooLarge { limit }) if limit == 1 << 20
    ));
}

#[tokio::test]
async fn reflector_over_kube_lister_watcher_syncs_the_store() {
    let (server, client) = start().await;
    *server.watch_body.lock() = vec![event("MODIFIED", pod_json(0, 3, 11))];
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        KubeListerWatcher::new(Api::<Pod>::all(client)),
        Arc::clone(&store),
        ReflectorConfig::default().page_size(2),
    ));
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let (r, s) = (Arc::clone(&reflector), shutdown.clone());
        async move { r.run(s).await }
    });
    store.wait_for("replace 5 10").await;
    store.wait_for("rv 11").await;
    shutdown.cancel();
    within("the reflector to stop", task).await.unwrap();
    let name = pod_json(0, 3, 1)["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let stored = kcache_store::Store::get_by_key(&store.inner, &format!("ns-0/{name}")).unwrap();
    assert_eq!(stored.metadata.resource_version.as_deref(), Some("11"));
}

#[tokio::test]
async fn kube_lister_watcher_dynamic_and_metadata_only() {
    let (server, client) = start().await;
    let resource = kube_core::ApiResource::erase::<Pod>(&());
    let dynamic = KubeListerWatcher::dynamic(Api::all_with(client.clone(), &resource), &resource);
    let page = dynamic.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 5);
    assert_eq!(page.items[0].types.as_ref().unwrap().kind, "Pod");

    let metadata = KubeListerWatcher::metadata(Api::<Pod>::all(client));
    let page = metadata.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 5);
    assert!(page.items[0].metadata.name.is_some());
    assert_eq!(server.queries.lock().len(), 2);
}

#[tokio::test]
async fn kube_lister_watcher_reuses_known_objects_with_the_same_resource_version() {
    let (_server, client) = start().await;
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client));
    // The full list holds pods 0..5, pod i at resource version i + 1.
    let known = Arc::new(kcache_store::Indexer::<Pod>::default());
    let same: Pod = serde_json::from_value(pod_json(0, 3, 1)).unwrap();
    let older: Pod = serde_json::from_value(pod_json(1, 3, 1)).unwrap();
    let (same, older) = (Arc::new(same), Arc::new(older));
    kcache_store::Store::add(&*known, Arc::clone(&same)).unwrap();
    kcache_store::Store::add(&*known, Arc::clone(&older)).unwrap();
    let lw =
        Box::new(lw).making_objects(kcache_reflector::ObjectMaking::default().known_objects(known));
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 5);
    assert!(
        Arc::ptr_eq(&page.items[0], &same),
        "unchanged: the known Arc"
    );
    assert!(
        !Arc::ptr_eq(&page.items[1], &older),
        "changed: decoded anew"
    );
    assert_eq!(
        page.items[1].metadata.resource_version.as_deref(),
        Some("2")
    );
}

#[tokio::test]
async fn kube_lister_watcher_transforms_each_decoded_list_item_and_watch_event() {
    let (server, client) = start().await;
    *server.watch_body.lock() = vec![event("MODIFIED", pod_json(0, 3, 11))];
    let calls = Arc::new(AtomicUsize::new(0));
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client)).transform({
        let calls = Arc::clone(&calls);
        Arc::new(move |mut pod: Arc<Pod>| {
            calls.fetch_add(1, Ordering::Relaxed);
            Arc::make_mut(&mut pod).metadata.managed_fields = None;
            Ok(pod)
        })
    });
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 5);
    assert!(
        page.items
            .iter()
            .all(|p| p.metadata.managed_fields.is_none())
    );
    assert!(
        page.items.iter().all(|p| Arc::strong_count(p) == 1),
        "the transform edits the decoded object in place, no copy is left behind"
    );
    let events = watch_all(&lw).await;
    let Some(Ok(WatchEvent::Modified(pod))) = events.first() else {
        panic!("expected a MODIFIED event, got {events:?}")
    };
    assert!(pod.metadata.managed_fields.is_none());
    assert_eq!(calls.load(Ordering::Relaxed), 6, "once per decoded object");
}

#[tokio::test]
async fn kube_lister_watcher_list_fails_with_a_typed_error_when_the_transform_rejects_an_item() {
    let (_server, client) = start().await;
    let lw = KubeListerWatcher::new(Api::<Pod>::all(client))
        .transform(Arc::new(|_: Arc<Pod>| Err("rejected".into())));
    let err = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(matches!(err, ListWatchError::Transform(_)), "{err:?}");
}
