//! Hostile client bodies: a server answering what no well-behaved API server would (a Status
//! with 200, truncated JSON, wrong types, garbage or unknown events in a watch). Every case is a
//! typed error and leaves the store as it was.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::{
    DEFAULT_MAX_WATCH_LINE_BYTES, KubeListerWatcher, ListOptions, ListWatchError, ListerWatcher,
    Reflector, ReflectorConfig, ReflectorError, WatchEvent,
};
use kcache_store::Store;
use kcache_store::testing::pod_json;
use kube_client::{Api, Client, Config};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::support::{RecordingStore, pod, run};
use kcache_testkit::within;

type Answer = (StatusCode, String);

/// What the canned server answers: lists in turn (the last one again and again), and one watch
/// body to every watch.
struct Canned {
    lists: Mutex<VecDeque<Answer>>,
    watch: Vec<u8>,
}

async fn answer(State(canned): State<Arc<Canned>>, uri: Uri) -> Response {
    if uri.query().unwrap_or("").contains("watch=true") {
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(canned.watch.clone()))
            .unwrap_or_default();
    }
    let (code, body) = {
        let mut lists = canned.lists.lock();
        if lists.len() > 1 {
            lists.pop_front()
        } else {
            lists.front().cloned()
        }
    }
    .unwrap_or((StatusCode::NOT_FOUND, String::new()));
    (code, [("content-type", "application/json")], body).into_response()
}

async fn serve(lists: impl IntoIterator<Item = Answer>, watch: impl Into<Vec<u8>>) -> Client {
    let canned = Canned {
        lists: Mutex::new(lists.into_iter().collect()),
        watch: watch.into(),
    };
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(Arc::new(canned));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Client::try_from(Config::new(format!("http://{addr}").parse().unwrap())).unwrap()
}

fn good_list(rv: u64) -> String {
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv.to_string()},
        "items": [pod_json(0, 3, rv)]})
    .to_string()
}

fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "no", "reason": reason, "code": code})
}

/// What a failed round reported, in a form that can leave the error handler.
#[derive(Debug)]
#[allow(dead_code, reason = "the fields are shown by assertion messages")]
enum Seen {
    /// The list failed with this error.
    List(Failure),
    /// The watch failed with this error.
    Watch(Failure),
    Other(String),
}

#[derive(Debug)]
#[allow(dead_code, reason = "the fields are shown by assertion messages")]
enum Failure {
    Api(Box<kube_core::Status>),
    Decode(String),
    WatchLineTooLarge(usize),
    Other(String),
}

fn seen(err: &ReflectorError) -> Seen {
    let failure = |e: &ListWatchError| match e {
        ListWatchError::Api(s) => Failure::Api(s.clone()),
        ListWatchError::Decode { what, .. } => Failure::Decode(what.to_string()),
        ListWatchError::WatchLineTooLarge { limit } => Failure::WatchLineTooLarge(*limit),
        other => Failure::Other(other.to_string()),
    };
    match err {
        ReflectorError::List { source, .. } => Seen::List(failure(source)),
        ReflectorError::Watch { source, .. } => Seen::Watch(failure(source)),
        other => Seen::Other(other.to_string()),
    }
}

/// Runs a reflector against the canned answers into a store already holding pod "cached" at
/// resource version 1, until its first failed round; returns what failed and the store.
async fn first_error(list: Answer) -> (Seen, Arc<RecordingStore>) {
    let client = serve([list], "").await;
    let store = cached_store();
    let (errors_tx, mut errors) = mpsc::unbounded();
    let reflector = Arc::new(Reflector::new(
        KubeListerWatcher::new(Api::<Pod>::all(client)),
        Arc::clone(&store),
        ReflectorConfig::default().watch_error_handler(move |e| {
            let _ = errors_tx.unbounded_send(seen(e));
        }),
    ));
    let running = run(&reflector);
    // Bounds the wait: a body wrongly accepted fails the test instead of hanging it.
    let seen = tokio::time::timeout(Duration::from_secs(20), errors.next())
        .await
        .unwrap_or_else(|_| panic!("no error; the store did {:?}", store.ops()))
        .unwrap();
    running.stop().await;
    (seen, store)
}

/// A store holding pod "cached" at resource version 1.
fn cached_store() -> Arc<RecordingStore> {
    let store = Arc::new(RecordingStore::default());
    store.inner.add(Arc::new(pod("cached", "1"))).unwrap();
    store
}

/// The names and resource versions held.
fn held(store: &RecordingStore) -> Vec<String> {
    let mut held: Vec<String> = store
        .inner
        .list()
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p.metadata.name.as_deref().unwrap_or(""),
                p.metadata.resource_version.as_deref().unwrap_or("")
            )
        })
        .collect();
    held.sort();
    held
}

/// A list answered with `body` fails as `expected` says and never touches the store.
async fn assert_list_rejected(code: StatusCode, body: String, expected: impl Fn(&Failure) -> bool) {
    let (seen, store) = first_error((code, body.clone())).await;
    assert!(
        matches!(&seen, Seen::List(f) if expected(f)),
        "{body:.200}: {seen:?}"
    );
    assert_eq!(held(&store), ["cached 1"], "{body:.200}");
    assert!(store.ops().is_empty(), "{body:.200}: {:?}", store.ops());
}

#[tokio::test]
async fn list_answered_200_with_a_failure_status_is_that_error_and_the_store_is_unchanged() {
    assert_list_rejected(
        StatusCode::OK,
        status(500, "InternalError").to_string(),
        |f| matches!(f, Failure::Api(s) if s.code == 500 && s.reason == "InternalError"),
    )
    .await;
    let success = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200});
    assert_list_rejected(StatusCode::OK, success.to_string(), |f| {
        matches!(f, Failure::Decode(_))
    })
    .await;
}

#[tokio::test]
async fn malformed_list_bodies_are_decode_errors_and_the_store_is_unchanged() {
    let good = good_list(10);
    for body in [
        good[..good.len() / 2].to_owned(),
        String::new(),
        "null".into(),
        "[1,2,3]".into(),
        r#"{"kind":"PodList","metadata":{"resourceVersion":7},"items":[]}"#.into(),
        r#"{"kind":"PodList","metadata":{},"items":[{"metadata":{"name":["x"]}}]}"#.into(),
        r#"{"kind":"PodList","metadata":{},"items":[1]}"#.into(),
        r#"{"kind":"PodList","metadata":{},"items":{"a":1}}"#.into(),
        "<html>502 Bad Gateway</html>".into(),
    ] {
        assert_list_rejected(StatusCode::OK, body, |f| matches!(f, Failure::Decode(_))).await;
    }
}

#[tokio::test]
async fn list_error_codes_with_any_body_are_api_errors_and_the_store_is_unchanged() {
    for (code, body) in [
        (StatusCode::FORBIDDEN, status(403, "Forbidden").to_string()),
        (StatusCode::INTERNAL_SERVER_ERROR, "{\"kind\":".into()),
        (StatusCode::NOT_FOUND, String::new()),
    ] {
        let http = code.as_u16();
        assert_list_rejected(
            code,
            body,
            |f| matches!(f, Failure::Api(s) if s.code == http),
        )
        .await;
    }
}

/// The items of one watch over a body of `lines`.
async fn watch_lines(lines: &[&[u8]]) -> Vec<Result<WatchEvent<Pod>, ListWatchError>> {
    let client = serve([(StatusCode::OK, good_list(1))], lines.join(&b'\n')).await;
    let stream = KubeListerWatcher::new(Api::<Pod>::all(client))
        .watch(&ListOptions::default())
        .await
        .unwrap();
    within("the watch to end", stream.collect()).await
}

fn added(i: usize, rv: u64) -> Vec<u8> {
    json!({"type": "ADDED", "object": pod_json(i, 3, rv)})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn garbage_in_a_watch_stream_is_a_decode_error_after_the_events_before_it() {
    let bare_status = status(500, "InternalError").to_string();
    let wrong_types = r#"{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":5}}}"#;
    let garbage: [&[u8]; 9] = [
        br#"{"type":"ADDED","object":{"metadata":{"name":"#,
        b"[1,2]",
        b"\xff\xfe\x00garbage",
        wrong_types.as_bytes(),
        br#"{"type":"EXPLODED","object":{}}"#,
        br#"{"type":"ADDED"}"#,
        br#"{"object":{}}"#,
        bare_status.as_bytes(),
        br#"{"type":"ERROR","object":{"code":"not a number"}}"#,
    ];
    let (first, last) = (added(0, 2), added(1, 3));
    for line in garbage {
        let events = watch_lines(&[&first, line, &last]).await;
        let shown = String::from_utf8_lossy(line);
        assert_eq!(events.len(), 2, "{shown}: {events:?}");
        assert!(matches!(events[0], Ok(WatchEvent::Added(_))), "{shown}");
        assert!(
            matches!(events[1], Err(ListWatchError::Decode { .. })),
            "{shown}: {events:?}"
        );
    }
}

#[tokio::test]
async fn a_huge_watch_line_is_a_typed_error_after_the_events_before_it() {
    let mut huge = br#"{"type":"ADDED","object":{"metadata":{"name":""#.to_vec();
    huge.resize(DEFAULT_MAX_WATCH_LINE_BYTES + 10, b'x');
    let events = watch_lines(&[&added(0, 2), &huge, &added(1, 3)]).await;
    assert_eq!(events.len(), 2);
    assert!(matches!(events[0], Ok(WatchEvent::Added(_))));
    assert!(matches!(
        events[1],
        Err(ListWatchError::WatchLineTooLarge {
            limit: DEFAULT_MAX_WATCH_LINE_BYTES
        })
    ));
}

#[tokio::test]
async fn a_garbage_watch_is_not_applied_and_the_reflector_relists() {
    let client = serve(
        [
            (StatusCode::OK, good_list(10)),
            (StatusCode::OK, good_list(20)),
        ],
        b"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":[]}}}\n".to_vec(),
    )
    .await;
    let store = cached_store();
    let reflector = Arc::new(Reflector::new(
        KubeListerWatcher::new(Api::<Pod>::all(client)),
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    store.wait_for("replace 1 20").await;
    running.stop().await;
    assert_eq!(
        store.ops(),
        ["replace 1 10", "replace 1 20"],
        "nothing from the watch applied"
    );
    let name = pod_json(0, 3, 1)["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(held(&store), [format!("{name} 20")]);
}
