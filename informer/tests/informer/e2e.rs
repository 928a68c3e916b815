//! End-to-end: informers and the object cache against the kcache-apiserver through kube-client.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kcache_apiserver::TestServer;
use kcache_informer::{
    ObjectCache, ObjectCacheError, QueueMode, ResourceEventHandlerFuncs, SharedIndexInformer,
    wait_for_cache_sync,
};
use kcache_reflector::{
    KubeListerWatcher, ListFuture, ListOptions, ListerWatcher, ReflectorConfig, WatchFuture,
};
use kube_client::Api;
use kube_client::api::{DeleteParams, PostParams};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::common::{Cache, Recorder, on_both_caches, take_n};
use kcache_testkit::{until, within};

fn config_map(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("value".to_string(), value.to_string())]));
    cm
}

async fn put(api: &Api<ConfigMap>, name: &str, value: &str) -> ConfigMap {
    let mut cm = api.get(name).await.unwrap();
    cm.data = Some(BTreeMap::from([("value".to_string(), value.to_string())]));
    api.replace(name, &PostParams::default(), &cm)
        .await
        .unwrap()
}

async fn recv(rx: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    crate::common::recv_n(rx, n).await
}

struct Started {
    server: TestServer,
    informer: SharedIndexInformer<ConfigMap>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kcache_informer::InformerError>>,
}

impl Started {
    async fn sync(&self) {
        assert!(
            within(
                "informer sync",
                wait_for_cache_sync(&self.shutdown, &[&self.informer])
            )
            .await
        );
    }

    async fn stop(self) {
        self.shutdown.cancel();
        within("informer stop", self.task).await.unwrap().unwrap();
        drop(self.server);
    }
}

async fn server() -> (TestServer, Api<ConfigMap>) {
    let server = TestServer::start().await.unwrap();
    let api = Api::namespaced(server.client().unwrap(), "default");
    (server, api)
}

fn start_informer(server: TestServer, lw: impl ListerWatcher<ConfigMap>, cache: Cache) -> Started {
    run_informer(server, cache.builder(lw).name("configmaps").build())
}

fn run_informer(server: TestServer, informer: SharedIndexInformer<ConfigMap>) -> Started {
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(informer.run(shutdown.clone()));
    Started {
        server,
        informer,
        shutdown,
        task,
    }
}

fn key(name: &str) -> String {
    format!("default/{name}")
}

async fn kube_client_changes_reach_every_handler_in_order_per_object(cache: Cache) {
    let (server, api) = server().await;
    let lw = KubeListerWatcher::new(api.clone());
    let s = start_informer(server, lw, cache);
    let (a, mut rx_a) = Recorder::new();
    let (b, mut rx_b) = Recorder::new();
    s.informer.add_event_handler(a).unwrap();
    s.informer.add_event_handler(b).unwrap();
    s.sync().await;

    api.create(&PostParams::default(), &config_map("one", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("two", "1"))
        .await
        .unwrap();
    put(&api, "one", "2").await;
    api.delete("two", &DeleteParams::default()).await.unwrap();
    put(&api, "one", "3").await;

    for rx in [&mut rx_a, &mut rx_b] {
        let events = recv(rx, 5).await;
        let mut per_object: HashMap<String, Vec<String>> = HashMap::new();
        for e in events {
            let kind = e.split(' ').next().unwrap().to_owned();
            let object = e.split(' ').nth(1).unwrap().to_owned();
            per_object.entry(object).or_default().push(kind);
        }
        assert_eq!(per_object[&key("one")], ["add", "update", "update"]);
        assert_eq!(per_object[&key("two")], ["add", "delete"]);
    }
    let cached = s.informer.lister().namespace("default").get("one").unwrap();
    assert_eq!(cached.data.as_ref().unwrap()["value"], "3");
    s.stop().await;
}

/// A lister-watcher whose watch calls wait while the gate is closed.
struct Gated {
    inner: KubeListerWatcher<ConfigMap>,
    closed: AtomicBool,
    opened: Notify,
    waiting: Notify,
    /// Watches the server answered.
    established: AtomicUsize,
}

impl ListerWatcher<ConfigMap> for Gated {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, ConfigMap> {
        self.inner.list(options)
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, ConfigMap> {
        let options = options.clone();
        Box::pin(async move {
            loop {
                let opened = self.opened.notified();
                if !self.closed.load(Ordering::SeqCst) {
                    break;
                }
                self.waiting.notify_one();
                opened.await;
            }
            let watch = self.inner.watch(&options).await;
            if watch.is_ok() {
                self.established.fetch_add(1, Ordering::SeqCst);
            }
            watch
        })
    }
}

async fn relist_after_compaction_gives_tombstones_and_no_add_for_known_objects(cache: Cache) {
    let (server, api) = server().await;
    for name in ["kept", "changed", "deleted"] {
        api.create(&PostParams::default(), &config_map(name, "1"))
            .await
            .unwrap();
    }
    let gated = Arc::new(Gated {
        inner: KubeListerWatcher::new(api.clone()),
        closed: AtomicBool::new(false),
        opened: Notify::new(),
        waiting: Notify::new(),
        established: AtomicUsize::new(0),
    });
    let s = start_informer(server, Arc::clone(&gated), cache);
    let mut events = s.informer.event_stream().unwrap();
    s.sync().await;
    within("initial adds", take_n(&mut events, 3)).await;

    // Once the informer's watch is established, end every watch; the informer's next watch waits at the gate while two changes happen
    // and the history is compacted, so it can only catch up by relisting.
    until("the first watch", || {
        gated.established.load(Ordering::SeqCst) > 0
    })
    .await;
    gated.closed.store(true, Ordering::SeqCst);
    s.server.end_all_watches();
    within("the re-watch", gated.waiting.notified()).await;
    put(&api, "changed", "2").await;
    api.delete("deleted", &DeleteParams::default())
        .await
        .unwrap();
    within(
        "the server's watch caches to sync",
        s.server.wait_caches_synced(),
    )
    .await
    .unwrap();
    s.server.compact_now().await.unwrap();
    gated.closed.store(false, Ordering::SeqCst);
    gated.opened.notify_waiters();

    let got = within("relist events", take_n(&mut events, 2)).await;
    let got = cache.deletion_first(QueueMode::default(), got);
    assert_eq!(got[0], format!("delete-tombstone {}", key("deleted")));
    assert!(
        got[1].starts_with(&format!("update {} ", key("changed"))),
        "{got:?}"
    );
    // "kept" did not change: its relisted copy is a resync no listener is due.
    assert_eq!(events.queued(), 0);
    assert!(got.iter().all(|e| !e.starts_with("add")));

    // Live events flow again after the relist.
    api.create(&PostParams::default(), &config_map("new", "1"))
        .await
        .unwrap();
    assert_eq!(
        within("live add", take_n(&mut events, 1)).await,
        vec![format!("add {} false", key("new"))]
    );
    s.stop().await;
}

/// A lister-watcher for a server that reports its current resource version on continued list
/// pages, and where a config map is created while the list is paged. Its first page is a
/// consistent list (resource version ""), which the server pages.
struct ChangesBetweenPages {
    inner: KubeListerWatcher<ConfigMap>,
    api: Api<ConfigMap>,
    created: AtomicBool,
}

impl ListerWatcher<ConfigMap> for ChangesBetweenPages {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, ConfigMap> {
        let mut options = options.clone();
        Box::pin(async move {
            if options.continue_token.is_none() {
                options.resource_version = None;
                return self.inner.list(&options).await;
            }
            let mut current = None;
            if !self.created.swap(true, Ordering::SeqCst) {
                let created = self
                    .api
                    .create(&PostParams::default(), &config_map("between-pages", "1"))
                    .await
                    .map_err(|e| kcache_reflector::ListWatchError::Other(Box::new(e)))?;
                current = created.metadata.resource_version;
            }
            let mut page = self.inner.list(&options).await?;
            if let Some(rv) = current {
                page.resource_version = rv;
            }
            Ok(page)
        })
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, ConfigMap> {
        self.inner.watch(options)
    }
}

async fn paginated_list_syncs_at_the_first_pages_resource_version_end_to_end(cache: Cache) {
    let (server, api) = server().await;
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &config_map(name, "1"))
            .await
            .unwrap();
    }
    let lw = ChangesBetweenPages {
        inner: KubeListerWatcher::new(api.clone()),
        api: api.clone(),
        created: AtomicBool::new(false),
    };
    let informer = cache
        .builder(lw)
        .name("configmaps")
        .reflector(ReflectorConfig::default().page_size(1))
        .build();
    // Subscribed before the informer runs: a late subscriber would get the cache replayed, with
    // the object created between pages as an initial add if it was already applied.
    let mut events = informer.event_stream().unwrap();
    let started = run_informer(server, informer);
    let got = within(
        "the listed config maps, then the one created between pages",
        take_n(&mut events, 3),
    )
    .await;
    assert_eq!(
        got,
        [
            format!("add {} true", key("a")),
            format!("add {} true", key("b")),
            format!("add {} false", key("between-pages")),
        ]
    );
    started.stop().await;
}

async fn late_handler_gets_the_replay_then_live_events(cache: Cache) {
    let (server, api) = server().await;
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &config_map(name, "1"))
            .await
            .unwrap();
    }
    let s = start_informer(server, KubeListerWatcher::new(api.clone()), cache);
    s.sync().await;
    let (late, mut rx) = Recorder::new();
    let registration = s.informer.add_event_handler(late).unwrap();
    let mut replay = recv(&mut rx, 2).await;
    replay.sort();
    assert_eq!(
        replay,
        vec![
            format!("add {} true", key("a")),
            format!("add {} true", key("b"))
        ]
    );
    assert!(
        within(
            "handler sync",
            wait_for_cache_sync(&s.shutdown, &[&registration])
        )
        .await
    );
    api.create(&PostParams::default(), &config_map("c", "1"))
        .await
        .unwrap();
    assert_eq!(
        recv(&mut rx, 1).await,
        vec![format!("add {} false", key("c"))]
    );
    s.stop().await;
}

async fn panicking_handler_does_not_stop_the_others(cache: Cache) {
    let (server, api) = server().await;
    let s = start_informer(server, KubeListerWatcher::new(api.clone()), cache);
    let panics = Arc::new(AtomicUsize::new(0));
    s.informer
        .add_event_handler(ResourceEventHandlerFuncs::<ConfigMap>::new().add_func({
            let panics = Arc::clone(&panics);
            move |_, _| {
                panics.fetch_add(1, Ordering::SeqCst);
                panic!("always fails");
            }
        }))
        .unwrap();
    let (good, mut rx) = Recorder::new();
    s.informer.add_event_handler(good).unwrap();
    s.sync().await;
    for name in ["x", "y", "z"] {
        api.create(&PostParams::default(), &config_map(name, "1"))
            .await
            .unwrap();
    }
    assert_eq!(recv(&mut rx, 3).await.len(), 3);
    s.stop().await;
    assert!(
        panics.load(Ordering::SeqCst) >= 1,
        "the panicking handler kept being called"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_cache_follows_a_config_map_until_immutable() {
    let (server, api) = server().await;
    api.create(&PostParams::default(), &config_map("settings", "1"))
        .await
        .unwrap();
    let client = server.client().unwrap();
    let cache = ObjectCache::new("configmaps", move |ns: &str| {
        Arc::new(KubeListerWatcher::new(Api::<ConfigMap>::namespaced(
            client.clone(),
            ns,
        ))) as Arc<dyn ListerWatcher<ConfigMap>>
    })
    .immutable_when(|cm: &ConfigMap| cm.immutable == Some(true))
    .sync_timeout(kcache_testkit::PATIENCE);

    assert!(matches!(
        cache.get("default", "settings").await,
        Err(ObjectCacheError::NotRegistered { .. })
    ));
    cache.add_reference("default", "settings", "pod-1").unwrap();
    cache.add_reference("default", "settings", "pod-2").unwrap();
    cache.add_reference("default", "missing", "pod-1").unwrap();
    assert_eq!(cache.len(), 2);
    let value = |cm: &ConfigMap| cm.data.as_ref().unwrap()["value"].clone();
    assert_eq!(value(&cache.get("default", "settings").await.unwrap()), "1");
    assert!(matches!(
        cache.get("default", "missing").await,
        Err(ObjectCacheError::NotFound { .. })
    ));

    // Follows changes.
    put(&api, "settings", "2").await;
    within("the cache to follow", async {
        while value(&cache.get("default", "settings").await.unwrap()) != "2" {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(cache.is_watching("default", "settings"));

    // Becomes immutable: the cache stops watching and keeps serving the last state.
    let mut cm = api.get("settings").await.unwrap();
    cm.immutable = Some(true);
    cm.data = Some(BTreeMap::from([("value".to_string(), "3".to_string())]));
    api.replace("settings", &PostParams::default(), &cm)
        .await
        .unwrap();
    within("the immutable state", async {
        while value(&cache.get("default", "settings").await.unwrap()) != "3" {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(!cache.is_watching("default", "settings"));
    assert_eq!(value(&cache.get("default", "settings").await.unwrap()), "3");

    // References are counted.
    cache.delete_reference("default", "settings", "pod-1");
    assert_eq!(cache.len(), 2);
    cache.delete_reference("default", "settings", "pod-2");
    cache.delete_reference("default", "missing", "pod-1");
    assert!(cache.is_empty());
    within("object cache shutdown", cache.shutdown()).await;
    drop(server);
}

on_both_caches!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    kube_client_changes_reach_every_handler_in_order_per_object,
    relist_after_compaction_gives_tombstones_and_no_add_for_known_objects,
    paginated_list_syncs_at_the_first_pages_resource_version_end_to_end,
    late_handler_gets_the_replay_then_live_events,
    panicking_handler_does_not_stop_the_others
);
