//! Helpers shared by the tests: raw requests, watch line readers, pod JSON, and [`skip`] for
//! tests that need a real client or server that is not installed.
//!
//! # Real clients and servers
//!
//! Some tests run real programs: kubectl, etcd, the official Python client, the JavaScript
//! client. `cargo xtask ci` finds them before the tests start (xtask/src/tools.rs; it installs
//! the Python and JavaScript clients under the target directory when python3 and npm exist) and
//! hands them over as environment variables, which are all these tests read:
//!
//! - `KUBECTL`: a kubectl binary (else `kubectl` on the `PATH`);
//! - `ETCD`: an etcd binary (else `etcd` on the `PATH`; see `TestEtcd`);
//! - `KCACHE_PYTHON`: a Python interpreter that imports `kubernetes` (else `python3`);
//! - `KCACHE_JS_CLIENT`: a folder whose `node_modules` holds `@kubernetes/client-node`
//!   (`node` on the `PATH` runs it);
//! - `KCACHE_STRICT=1` (`cargo xtask ci --strict`, as CI runs it): a test that would skip for
//!   want of one of them fails instead;
//! - `KCACHE_SKIP_LOG`: where each skip is recorded for xtask's closing summary.
//!
//! A test that cannot find what it needs calls [`skip`] (`kcache_apiserver::skip`, the one skip
//! path of every crate's tests) and returns.

use std::sync::Arc;
use std::time::Duration;

use futures::io::Lines;
use futures::{AsyncBufRead, AsyncBufReadExt, StreamExt};
pub(crate) use kcache_apiserver::skip;
use kcache_apiserver::{
    ApiServer, ApiServerBuilder, CacheConfig, MemoryStorage, ServerConfig, Storage, TestServer,
};
use kube_client::Client;
use serde_json::{Value, json};

/// A server with short freshness timeouts and bookmark intervals for tests.
pub(crate) fn test_builder() -> ApiServerBuilder {
    let config = ServerConfig {
        cache: CacheConfig {
            freshness_timeout: Duration::from_millis(300),
            bookmark_interval: Duration::from_millis(200),
            bookmark_tick: Duration::from_millis(50),
            ..CacheConfig::default()
        },
        ..ServerConfig::default()
    };
    ApiServer::builder().config(config)
}

pub(crate) async fn start() -> TestServer {
    TestServer::start_with(test_builder()).await.unwrap()
}

/// Sends a request; returns the HTTP status and the JSON body (Null when empty or not JSON).
pub(crate) async fn request(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
) -> (u16, Value) {
    let (code, body, _) = request_warned(client, method, path, body).await;
    (code, body)
}

/// [`request`], also returning the `Warning` headers of the answer.
pub(crate) async fn request_warned(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
) -> (u16, Value, Vec<String>) {
    let mut req = http::Request::builder().method(method).uri(path);
    let bytes = match body {
        Some((ct, b)) => {
            req = req.header("content-type", ct);
            b
        }
        None => Vec::new(),
    };
    let resp = client
        .send(req.body(kube_client::client::Body::from(bytes)).unwrap())
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let bytes = resp.into_body().collect_bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, body, warnings)
}

pub(crate) async fn get(client: &Client, path: &str) -> (u16, Value) {
    request(client, "GET", path, None).await
}

pub(crate) async fn post(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    request(
        client,
        "POST",
        path,
        Some(("application/json", body.to_string().into_bytes())),
    )
    .await
}

pub(crate) async fn put(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    request(
        client,
        "PUT",
        path,
        Some(("application/json", body.to_string().into_bytes())),
    )
    .await
}

pub(crate) async fn patch(
    client: &Client,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value) {
    request(
        client,
        "PATCH",
        path,
        Some((content_type, body.to_string().into_bytes())),
    )
    .await
}

/// The lines of a watch response.
pub(crate) type WatchLines = Lines<Box<dyn AsyncBufRead + Unpin + Send>>;

pub(crate) async fn watch(client: &Client, path: &str) -> WatchLines {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let stream = client.request_stream(req).await.unwrap();
    let boxed: Box<dyn AsyncBufRead + Unpin + Send> = Box::new(stream);
    boxed.lines()
}

/// The next event of a watch as JSON (fails the test after 10 s without one).
pub(crate) async fn next_event(lines: &mut WatchLines) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next())
        .await
        .expect("no watch event within 10 s")
        .expect("the watch stream ended")
        .unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad watch line {line:?}: {e}"))
}

/// The next event that is not a bookmark.
pub(crate) async fn next_change(lines: &mut WatchLines) -> Value {
    loop {
        let e = next_event(lines).await;
        if e["type"] != "BOOKMARK" {
            return e;
        }
    }
}

/// Whether the stream ends (after skipping bookmarks) within 10 s.
pub(crate) async fn ends(lines: &mut WatchLines) -> bool {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), lines.next()).await {
            Ok(None) => return true,
            Ok(Some(Ok(line))) if line.contains("\"BOOKMARK\"") => continue,
            _ => return false,
        }
    }
}

pub(crate) fn pod(ns: &str, name: &str, node: &str, phase: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "img:1"}]},
        "status": {"phase": phase}
    })
}

/// Creates a pod and then writes its status through `/status` (a create resets the status of
/// a pod to `Pending`, as on a real API server); returns the pod as stored.
pub(crate) async fn create_pod(client: &Client, pods: &str, pod: &Value) -> Value {
    let (code, created) = post(client, pods, pod).await;
    assert_eq!(code, 201, "{created}");
    let name = created["metadata"]["name"].as_str().unwrap_or_default();
    let mut with_status = created.clone();
    with_status["status"] = pod["status"].clone();
    let (code, stored) = put(client, &format!("{pods}/{name}/status"), &with_status).await;
    assert_eq!(code, 200, "{stored}");
    stored
}

pub(crate) fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}})
}

pub(crate) fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

pub(crate) fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A client of `s` that does not retry 429, 503 and 504 answers.
pub(crate) fn client(s: &TestServer) -> Client {
    let mut config = s.config().unwrap();
    config.default_retry = false;
    Client::try_from(config).unwrap()
}

/// A storage backend the tests run against.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    /// [`kcache_apiserver::MemoryStorage`].
    Memory,
    /// `EtcdStorage` on a [`kcache_apiserver::TestEtcd`] started for the test.
    Etcd,
}

/// A storage, with the etcd it runs on (kept alive as long as the storage).
pub(crate) struct Backed<T> {
    pub(crate) inner: T,
    #[cfg(feature = "etcd")]
    pub(crate) etcd: Option<kcache_apiserver::TestEtcd>,
}

impl<T> std::ops::Deref for Backed<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner
    }
}

impl Backend {
    /// A new, empty storage of this backend; `None` (after [`skip`]) when it cannot run here (no
    /// etcd binary, or built without the `etcd` feature).
    pub(crate) async fn storage(self) -> Option<Backed<Arc<dyn Storage>>> {
        match self {
            Backend::Memory => Some(Backed {
                inner: Arc::new(MemoryStorage::default()),
                #[cfg(feature = "etcd")]
                etcd: None,
            }),
            #[cfg(feature = "etcd")]
            Backend::Etcd => {
                let Some(etcd) = kcache_apiserver::TestEtcd::start().await.unwrap() else {
                    skip(
                        "etcd storage test",
                        "no etcd binary (set ETCD, or apt-get install etcd-server)",
                    );
                    return None;
                };
                let storage = etcd.storage().await.unwrap();
                Some(Backed {
                    inner: Arc::new(storage),
                    etcd: Some(etcd),
                })
            }
            #[cfg(not(feature = "etcd"))]
            Backend::Etcd => {
                skip(
                    "etcd storage test",
                    "built without the etcd feature (--features etcd)",
                );
                None
            }
        }
    }

    /// A test server (see [`test_builder`]) on a new storage of this backend.
    pub(crate) async fn server(self) -> Option<Backed<TestServer>> {
        let storage = self.storage().await?;
        let server = TestServer::start_with(test_builder().storage(Arc::clone(&storage.inner)))
            .await
            .unwrap();
        Some(Backed {
            inner: server,
            #[cfg(feature = "etcd")]
            etcd: storage.etcd,
        })
    }
}

/// Runs each named `async fn(Backend)` of the enclosing module as one test per backend:
/// `memory::name` and `etcd::name`.
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::support::Backend::Memory).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::support::Backend::Etcd).await;
                }
            )*
        }
    };
}
pub(crate) use on_every_backend;

/// A 422 body's message and its causes as (field, reason, message).
pub(crate) fn invalid(status: &Value) -> (String, Vec<(String, String, String)>) {
    let causes = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or("").to_owned();
            (text("field"), text("reason"), text("message"))
        })
        .collect();
    (status["message"].as_str().unwrap_or("").to_owned(), causes)
}

/// The `ownerReferences` of a dependent of `owner` (its controller), blocking the owner's
/// Foreground deletion when `block`.
pub(crate) fn owner_ref(owner: &Value, block: bool) -> Value {
    json!([{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": block,
    }])
}
