//! Shared helpers: a recording handler, fixtures and waiting helpers.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{
    EventStream, InformerEvent, QueueMode, ResourceEventHandler, SharedIndexInformer,
    SharedIndexInformerBuilder,
};
use kcache_reflector::ListerWatcher;
use kcache_reflector::testing::FakeControllerSource;
use kcache_store::{MaybeTombstone, meta_namespace_key};
use kcache_testkit::within;
use kube_core::Resource;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The cache an informer scenario runs with: every scenario of the shared informer runs on both
/// (see [`on_both_caches`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cache {
    /// The default cache: the decoded `Arc`s.
    Shared,
    /// `compact_cache()`: compressed JSON, decoded on read.
    Compact,
}

impl Cache {
    /// An informer builder over `lister_watcher` with this cache.
    pub(crate) fn builder<K>(
        self,
        lister_watcher: impl ListerWatcher<K>,
    ) -> SharedIndexInformerBuilder<K>
    where
        K: Resource + serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        let builder = SharedIndexInformer::builder(lister_watcher);
        match self {
            Cache::Shared => builder,
            Cache::Compact => builder.compact_cache(),
        }
    }
}

impl Cache {
    /// The two notifications of a relist (one deletion, one listed object) as received in
    /// `mode`, deletion first: the DeltaFifo queues a relist's deletions after the listed
    /// objects, and so does a compact informer's in-order queue, which takes the relist page by
    /// page and knows its deletions only at the end.
    pub(crate) fn deletion_first(self, mode: QueueMode, mut pair: Vec<String>) -> Vec<String> {
        if mode == QueueMode::DeltaFifo || matches!(self, Cache::Compact) {
            pair.reverse();
        }
        pair
    }
}

/// Runs each named scenario (an `async fn(Cache)`) as two tests, `<scenario>::shared_cache` and
/// `<scenario>::compact_cache`, with the given test attribute.
macro_rules! on_both_caches {
    (#[$test:meta] $($scenario:ident),+ $(,)?) => {
        $(
            mod $scenario {
                use crate::common::Cache;

                #[$test]
                async fn shared_cache() {
                    super::$scenario(Cache::Shared).await
                }

                #[$test]
                async fn compact_cache() {
                    super::$scenario(Cache::Compact).await
                }
            }
        )+
    };
}
pub(crate) use on_both_caches;

/// A fixture pod `i` (single namespace).
pub(crate) fn pod(i: usize) -> Pod {
    kcache_store::testing::pod(i, 1)
}

/// The key of fixture pod `i`.
pub(crate) fn key(i: usize) -> String {
    meta_namespace_key(&pod(i)).unwrap()
}

/// A short description of an event: `add <key> <initial>`, `update <key> <old rv>-><new rv>`,
/// `delete <key>` or `delete-tombstone <key>`.
pub(crate) fn describe<K: Resource>(event: &InformerEvent<K>) -> String {
    let k = |p: &K| meta_namespace_key(p).unwrap();
    let rv = |p: &K| p.meta().resource_version.clone().unwrap_or_default();
    match event {
        InformerEvent::Add {
            obj,
            is_in_initial_list,
        } => format!("add {} {}", k(obj), is_in_initial_list),
        InformerEvent::Update { old, new } => format!("update {} {}->{}", k(new), rv(old), rv(new)),
        InformerEvent::Delete(MaybeTombstone::Object(o)) => format!("delete {}", k(o)),
        InformerEvent::Delete(MaybeTombstone::Tombstone(t)) => {
            format!("delete-tombstone {}", t.key)
        }
    }
}

/// A handler sending a description of every notification to a channel.
pub(crate) struct Recorder {
    tx: mpsc::UnboundedSender<String>,
}

impl Recorder {
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }
}

impl<K: Resource + Send + Sync> ResourceEventHandler<K> for Recorder {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = self.tx.send(describe(&InformerEvent::Add {
            obj: obj.clone(),
            is_in_initial_list,
        }));
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = self.tx.send(describe(&InformerEvent::Update {
            old: old.clone(),
            new: new.clone(),
        }));
    }
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        let _ = self.tx.send(describe(&InformerEvent::Delete(obj.clone())));
    }
}

/// Receives `n` descriptions.
pub(crate) async fn recv_n(rx: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let what = format!("handler notification {} of {n}", i + 1);
        out.push(within(&what, rx.recv()).await.expect("channel closed"));
    }
    out
}

/// Takes `n` events from a stream, described.
pub(crate) async fn take_n<K: Resource>(stream: &mut EventStream<K>, n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let what = format!("stream event {} of {n}", i + 1);
        out.push(describe(
            &within(&what, stream.next()).await.expect("stream ended"),
        ));
    }
    out
}

/// Sorted copy (for sets of events whose order is not specified).
pub(crate) fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// A running informer over a fake source.
pub(crate) struct Running {
    pub(crate) informer: SharedIndexInformer<Pod>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) task: tokio::task::JoinHandle<Result<(), kcache_informer::InformerError>>,
}

impl Running {
    pub(crate) fn start(
        _source: Arc<FakeControllerSource<Pod>>,
        informer: SharedIndexInformer<Pod>,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(informer.run(shutdown.clone()));
        Self {
            informer,
            shutdown,
            task,
        }
    }

    pub(crate) async fn wait_synced(&self) {
        let synced = [&self.informer as &dyn kcache_informer::HasSynced];
        let waiting = kcache_informer::wait_for_cache_sync(&self.shutdown, &synced);
        assert!(within("the informer to sync", waiting).await);
    }

    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        within("the informer to stop", self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

/// A source holding fixture pods `0..n`.
pub(crate) fn source_with(n: usize) -> Arc<FakeControllerSource<Pod>> {
    let source = Arc::new(FakeControllerSource::new());
    source.add_all((0..n).map(pod));
    source
}
