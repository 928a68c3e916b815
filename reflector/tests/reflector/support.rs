//! Shared helpers: a recording store, a scripted lister-watcher and a running reflector.

use std::sync::Arc;

use futures::channel::mpsc;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::{Call, FakeControllerSource};
use kcache_reflector::{
    ListOptions, ListPage, ListWatch, ListWatchError, ListerWatcher, Reflector, ReflectorConfig,
    ReflectorStore, WatchEvent, WatchStream,
};
use kcache_store::{Indexer, Store, StoreError};
use kcache_testkit::within;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A pod named `name` in namespace "ns" at resource version `rv`.
pub(crate) fn pod(name: &str, rv: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("ns".into());
    if !rv.is_empty() {
        p.metadata.resource_version = Some(rv.into());
    }
    p
}

/// A page of `items` at `rv`.
pub(crate) fn page(items: Vec<Pod>, rv: &str, continue_token: Option<&str>) -> ListPage<Pod> {
    ListPage {
        items: items.into_iter().map(Arc::new).collect(),
        resource_version: rv.into(),
        continue_token: continue_token.map(Into::into),
        remaining_item_count: None,
    }
}

/// A watch stream that never ends.
pub(crate) fn pending_stream() -> WatchStream<Pod> {
    stream::pending().boxed()
}

/// A watch stream of `events`, then open forever.
pub(crate) fn events_then_pending(events: Vec<WatchEvent<Pod>>) -> WatchStream<Pod> {
    stream::iter(events.into_iter().map(Ok))
        .chain(stream::pending())
        .boxed()
}

/// A watch stream of `events`, then closed.
pub(crate) fn events_then_close(events: Vec<WatchEvent<Pod>>) -> WatchStream<Pod> {
    stream::iter(events.into_iter().map(Ok)).boxed()
}

/// A watch script whose every watch ends at once with 410 Expired, so each is followed by a
/// relist.
pub(crate) fn expired_watch(_: usize, _: &ListOptions) -> Result<WatchStream<Pod>, ListWatchError> {
    Ok(events_then_close(vec![WatchEvent::Error(
        kcache_reflector::status::expired("too old"),
    )]))
}

/// A [`Store`] over an [`Indexer`] that records every call as a line ("add ns/a 5", ...).
#[derive(Debug, Default)]
pub(crate) struct RecordingStore {
    pub(crate) inner: Indexer<Pod>,
    pub(crate) ops: Mutex<Vec<String>>,
    changed: Notify,
}

fn name_rv(obj: &Pod) -> String {
    format!(
        "{} {}",
        obj.metadata.name.as_deref().unwrap_or(""),
        obj.metadata.resource_version.as_deref().unwrap_or("")
    )
}

impl RecordingStore {
    fn record(&self, op: String) {
        self.ops.lock().push(op);
        self.changed.notify_waiters();
    }

    pub(crate) fn ops(&self) -> Vec<String> {
        self.ops.lock().clone()
    }

    /// The recorded operations starting with `prefix`.
    pub(crate) fn ops_starting(&self, prefix: &str) -> Vec<String> {
        self.ops()
            .into_iter()
            .filter(|o| o.starts_with(prefix))
            .collect()
    }

    /// Waits until an operation equal to `op` has been recorded.
    pub(crate) async fn wait_for(&self, op: &str) {
        let recorded = async {
            loop {
                let notified = self.changed.notified();
                if self.ops.lock().iter().any(|o| o == op) {
                    return;
                }
                notified.await;
            }
        };
        within(&format!("the store operation {op:?}"), recorded).await;
    }
}

impl ReflectorStore<Pod> for RecordingStore {
    fn add(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        self.record(format!("add {}", name_rv(&obj)));
        Store::add(&self.inner, obj)
    }
    fn update(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        self.record(format!("update {}", name_rv(&obj)));
        Store::update(&self.inner, obj)
    }
    fn delete(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        self.record(format!("delete {}", name_rv(&obj)));
        Store::delete(&self.inner, obj)
    }
    fn replace(&self, items: Vec<Arc<Pod>>, resource_version: &str) -> Result<(), StoreError> {
        self.record(format!("replace {} {resource_version}", items.len()));
        Store::replace(&self.inner, items, resource_version)
    }
    fn resync(&self) -> Result<(), StoreError> {
        self.record("resync".into());
        Ok(())
    }
    fn bookmark(&self, resource_version: &str) {
        self.record(format!("bookmark {resource_version}"));
        Store::bookmark(&self.inner, resource_version);
    }
    fn update_resource_version(&self, resource_version: &str) {
        self.record(format!("rv {resource_version}"));
    }
}

type ListScript =
    Box<dyn Fn(usize, &ListOptions) -> Result<ListPage<Pod>, ListWatchError> + Send + Sync>;
type WatchScript =
    Box<dyn Fn(usize, &ListOptions) -> Result<WatchStream<Pod>, ListWatchError> + Send + Sync>;

/// A lister-watcher answering from two scripts (given the call's index among lists or watches)
/// and reporting every call on a channel.
pub(crate) fn scripted(
    list: impl Fn(usize, &ListOptions) -> Result<ListPage<Pod>, ListWatchError> + Send + Sync + 'static,
    watch: impl Fn(usize, &ListOptions) -> Result<WatchStream<Pod>, ListWatchError>
    + Send
    + Sync
    + 'static,
) -> (ListWatch<Pod>, mpsc::UnboundedReceiver<Call>) {
    let (tx, rx) = mpsc::unbounded();
    let list: Arc<ListScript> = Arc::new(Box::new(list));
    let watch: Arc<WatchScript> = Arc::new(Box::new(watch));
    let lists = Arc::new(Mutex::new(0usize));
    let watches = Arc::new(Mutex::new(0usize));
    let tx2 = tx.clone();
    let lw = ListWatch::new(
        move |options: ListOptions| {
            let n = {
                let mut l = lists.lock();
                *l += 1;
                *l - 1
            };
            let result = list(n, &options);
            let _ = tx.unbounded_send(Call::List(options));
            async move { result }
        },
        move |options: ListOptions| {
            let n = {
                let mut w = watches.lock();
                *w += 1;
                *w - 1
            };
            let result = watch(n, &options);
            let _ = tx2.unbounded_send(Call::Watch(options));
            async move { result }
        },
    );
    (lw, rx)
}

/// Receives the next `n` calls.
pub(crate) async fn next_calls(rx: &mut mpsc::UnboundedReceiver<Call>, n: usize) -> Vec<Call> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let what = format!("lister-watcher call {} of {n}", out.len() + 1);
        out.push(
            within(&what, rx.next())
                .await
                .expect("lister-watcher dropped"),
        );
    }
    out
}

/// The resource versions of the list calls among `calls`.
pub(crate) fn list_rvs(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .filter(|c| matches!(c, Call::List(_)))
        .map(|c| c.resource_version().to_owned())
        .collect()
}

/// A reflector running in a task until [`Running::stop`].
pub(crate) struct Running {
    pub(crate) shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        within("the reflector to stop", self.task).await.unwrap();
    }
}

/// Runs `reflector` in a task.
pub(crate) fn run<L, S>(reflector: &Arc<Reflector<Pod, L, S>>) -> Running
where
    L: ListerWatcher<Pod>,
    S: ReflectorStore<Pod> + ?Sized + 'static,
{
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let (reflector, shutdown) = (Arc::clone(reflector), shutdown.clone());
        async move { reflector.run(shutdown).await }
    });
    Running { shutdown, task }
}

/// A "connection refused" error.
pub(crate) fn connection_refused() -> ListWatchError {
    ListWatchError::Connection("tcp connect error: Connection refused (os error 111)".into())
}

/// The options of a call.
pub(crate) fn opts(call: &Call) -> &ListOptions {
    call.options()
}

/// Whether a call is a list.
pub(crate) fn is_list(call: &Call) -> bool {
    matches!(call, Call::List(_))
}

/// A reflector over `source` into a [`RecordingStore`], running and past its first list and
/// watch.
pub(crate) async fn watching(
    source: &Arc<FakeControllerSource<Pod>>,
) -> (
    Arc<RecordingStore>,
    Arc<Reflector<Pod, Arc<FakeControllerSource<Pod>>, RecordingStore>>,
    Running,
) {
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(source),
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    within("the list and the watch", source.wait_for_calls(2)).await;
    (store, reflector, running)
}
