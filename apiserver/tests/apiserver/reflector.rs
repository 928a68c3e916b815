//! kcache-reflector's kube-client lister-watcher against the server.

use kcache_testkit::within;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kcache_apiserver::{Object, TestServer};
use kcache_reflector::{KubeListerWatcher, Reflector, ReflectorConfig};
use kcache_store::{Indexer, Store};
use kube_client::Api;
use kube_client::api::{DeleteParams, PostParams};
use tokio_util::sync::CancellationToken;

use crate::support::*;

type Cms = Arc<Indexer<ConfigMap>>;

fn contents(store: &Cms) -> BTreeMap<String, String> {
    store
        .list()
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                cm.data
                    .as_ref()
                    .and_then(|d| d.get("v").cloned())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits (up to 20 s) until the store holds exactly `expected` name → value pairs.
async fn converges(store: &Cms, expected: &[(&str, &str)]) {
    let expected: BTreeMap<String, String> = expected
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while contents(store) != expected {
        assert!(
            tokio::time::Instant::now() < deadline,
            "store {:?} never became {expected:?}",
            contents(store)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

struct Running {
    store: Cms,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn run(server: &TestServer, watch_list: bool, tweak: Option<&'static str>) -> Running {
    let api: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let mut lw = KubeListerWatcher::new(api);
    if let Some(selector) = tweak {
        lw = lw.tweak_list_options(move |o| o.label_selector = Some(selector.to_owned()));
    }
    let store: Cms = Arc::new(Indexer::default());
    let reflector = Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorConfig::default()
            .page_size(2)
            .use_watch_list(watch_list),
    );
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move { reflector.run(token).await });
    Running { store, stop }
}

async fn seed(server: &TestServer, names: &[&str]) {
    let objects = names
        .iter()
        .map(|n| Object::from_value(configmap(n, "0")).unwrap());
    server.seed(objects).await.unwrap();
}

async fn kcache_reflector_lists_in_pages_then_follows_every_change(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    seed(&s, &["a", "b", "c", "d", "e"]).await;
    let r = run(&s, false, None);
    converges(
        &r.store,
        &[("a", "0"), ("b", "0"), ("c", "0"), ("d", "0"), ("e", "0")],
    )
    .await;
    let api: Api<ConfigMap> = Api::default_namespaced(s.client().unwrap());
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let mut b = api.get("b").await.unwrap();
    b.data.as_mut().unwrap().insert("v".into(), "1".into());
    api.replace("b", &PostParams::default(), &b).await.unwrap();
    converges(&r.store, &[("b", "1"), ("c", "0"), ("d", "0"), ("e", "0")]).await;
}

async fn kcache_reflector_resumes_after_the_server_ends_watches(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    seed(&s, &["a"]).await;
    let r = run(&s, false, None);
    converges(&r.store, &[("a", "0")]).await;
    s.end_all_watches();
    seed(&s, &["b"]).await;
    converges(&r.store, &[("a", "0"), ("b", "0")]).await;
}

async fn kcache_reflector_relists_after_a_410_from_compaction(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    seed(&s, &["a"]).await;
    let r = run(&s, false, None);
    converges(&r.store, &[("a", "0")]).await;
    // Keep the reflector from re-watching while history moves on and is compacted: its resume
    // from the old resource version then gets 410 Expired and it must relist.
    s.fail_next_requests(u32::MAX, 500);
    s.end_all_watches();
    seed(&s, &["b"]).await;
    within("the watch caches to sync", s.wait_caches_synced())
        .await
        .unwrap();
    s.compact_now().await.unwrap();
    s.fail_next_requests(0, 500);
    converges(&r.store, &[("a", "0"), ("b", "0")]).await;
}

async fn kcache_reflector_watch_list_syncs_through_the_initial_events_end_bookmark(
    backend: Backend,
) {
    let Some(s) = backend.server().await else {
        return;
    };
    seed(&s, &["a", "b", "c"]).await;
    let r = run(&s, true, None);
    converges(&r.store, &[("a", "0"), ("b", "0"), ("c", "0")]).await;
    seed(&s, &["d"]).await;
    converges(&r.store, &[("a", "0"), ("b", "0"), ("c", "0"), ("d", "0")]).await;
}

async fn kcache_reflector_with_a_label_selector_sees_objects_enter_and_leave_it(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    seed(&s, &["a", "b"]).await;
    let r = run(&s, false, Some("team=blue"));
    let c = client(&s);
    let path = "/api/v1/namespaces/default/configmaps/a";
    let label = |team: &str| serde_json::json!({"metadata": {"labels": {"team": team}}});
    patch(&c, path, "application/merge-patch+json", &label("blue")).await;
    converges(&r.store, &[("a", "0")]).await;
    patch(&c, path, "application/merge-patch+json", &label("red")).await;
    converges(&r.store, &[]).await;
}

on_every_backend!(
    kcache_reflector_lists_in_pages_then_follows_every_change,
    kcache_reflector_resumes_after_the_server_ends_watches,
    kcache_reflector_relists_after_a_410_from_compaction,
    kcache_reflector_watch_list_syncs_through_the_initial_events_end_bookmark,
    kcache_reflector_with_a_label_selector_sees_objects_enter_and_leave_it,
);

/// etcd killed and started again while a client watches the server: the Cacher's storage watch
/// resumes where it was (or its reflector relists), the client's watch continues or relists,
/// and every write made before and after the restart reaches the client's store.
#[cfg(feature = "etcd")]
#[tokio::test]
async fn kcache_reflector_loses_nothing_when_etcd_restarts_mid_watch() {
    let Some(mut s) = Backend::Etcd.server().await else {
        return;
    };
    seed(&s, &["a", "b"]).await;
    let r = run(&s, false, None);
    converges(&r.store, &[("a", "0"), ("b", "0")]).await;
    let api: Api<ConfigMap> = Api::default_namespaced(s.client().unwrap());
    let etcd = s.etcd.as_mut().unwrap();
    etcd.kill().await.unwrap();
    assert!(
        api.delete("a", &DeleteParams::default()).await.is_err(),
        "etcd is down"
    );
    etcd.restart().await.unwrap();
    // The etcd client reconnects on its own; no signal tells when, so poll (bounded).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Err(e) = api.delete("a", &DeleteParams::default()).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "etcd never came back: {e}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seed(&s, &["c"]).await;
    let mut b = api.get("b").await.unwrap();
    b.data.as_mut().unwrap().insert("v".into(), "1".into());
    api.replace("b", &PostParams::default(), &b).await.unwrap();
    converges(&r.store, &[("b", "1"), ("c", "0")]).await;
}
