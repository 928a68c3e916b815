//! Read-your-writes (client-go 1.36, KEP-5647): a controller that writes and then reads its
//! informer's cache acts twice when the watch delivers its write late, unless it checks that
//! the cache has caught up with the write's resource version.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kcache_informer::{InformerError, SharedIndexInformer, wait_for_cache_sync};
use kcache_reflector::{ListPage, ListWatch, WatchEvent, WatchStream};
use kcache_workqueue::WorkQueue;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(10);

/// A server whose writes get resource versions at once but whose watch delivers them only
/// when the test says so (a delayed watch).
struct DelayedServer {
    next_rv: Mutex<u64>,
    /// Written, not yet delivered on the watch.
    undelivered: Mutex<Vec<Arc<ConfigMap>>>,
    watch: mpsc::UnboundedSender<WatchEvent<ConfigMap>>,
    creations: Mutex<usize>,
}

impl DelayedServer {
    /// Creates a ConfigMap; returns the resource version the write got.
    fn create(&self, name: &str) -> String {
        let mut rv = self.next_rv.lock();
        *rv += 1;
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("default".into());
        cm.metadata.name = Some(name.into());
        cm.metadata.resource_version = Some(rv.to_string());
        self.undelivered.lock().push(Arc::new(cm));
        *self.creations.lock() += 1;
        rv.to_string()
    }

    /// The watch finally delivers every write.
    fn deliver(&self) {
        for obj in self.undelivered.lock().drain(..) {
            let _ = self.watch.send(WatchEvent::Added(obj));
        }
    }
}

/// An informer over the delayed server, listed empty at resource version 5, and the server.
fn informer_over_delayed_watch() -> (SharedIndexInformer<ConfigMap>, Arc<DelayedServer>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server = Arc::new(DelayedServer {
        next_rv: Mutex::new(5),
        undelivered: Mutex::new(Vec::new()),
        watch: tx,
        creations: Mutex::new(0),
    });
    let rx = Arc::new(Mutex::new(Some(rx)));
    let lw = ListWatch::<ConfigMap>::new(
        |_| async {
            Ok(ListPage {
                items: vec![],
                resource_version: "5".into(),
                continue_token: None,
                remaining_item_count: None,
            })
        },
        move |_| {
            let rx = rx.lock().take();
            async move {
                Ok(match rx {
                    Some(rx) => UnboundedReceiverStream::new(rx).map(Ok).boxed(),
                    None => stream::pending().boxed(),
                } as WatchStream<ConfigMap>)
            }
        },
    );
    (SharedIndexInformer::builder(lw).build(), server)
}

/// A running informer over the delayed server, synced.
struct Running {
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), InformerError>>,
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

async fn started() -> (SharedIndexInformer<ConfigMap>, Arc<DelayedServer>, Running) {
    let (informer, server) = informer_over_delayed_watch();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(informer.run(shutdown.clone()));
    assert!(wait_for_cache_sync(&shutdown, &[&informer]).await);
    (informer, server, Running { shutdown, task })
}

/// The controller: for parent key `k`, makes sure ConfigMap `k-child` exists. With `check`, it
/// first requeues `k` as stale while the cache is behind what it wrote for `k`.
struct Controller {
    check: bool,
    informer: SharedIndexInformer<ConfigMap>,
    server: Arc<DelayedServer>,
    queue: WorkQueue<String>,
    written: HashMap<String, String>,
}

impl Controller {
    /// Takes the next key (waiting for a delayed one) and reconciles it.
    async fn reconcile_next(&mut self) {
        let key = tokio::time::timeout(DEADLINE, self.queue.get())
            .await
            .unwrap()
            .unwrap();
        self.reconcile(&key);
        self.queue.done(&key);
    }

    fn reconcile(&mut self, key: &str) {
        if self.check
            && let Some(rv) = self.written.get(key)
            && !self.informer.has_caught_up_to(rv)
        {
            self.queue.requeue_stale(key.to_owned());
            return;
        }
        let child = format!("{key}-child");
        if self
            .informer
            .lister()
            .namespace("default")
            .get(&child)
            .is_none()
        {
            let rv = self.server.create(&child);
            self.written.insert(key.to_owned(), rv);
        }
    }
}

/// Two reconciles of one key with the controller's write still undelivered, then the watch
/// delivers it and the queue drains. Returns how many children the controller created.
async fn creations_with_delayed_watch(check: bool) -> usize {
    let (informer, server, running) = started().await;
    let mut controller = Controller {
        check,
        informer: informer.clone(),
        server: Arc::clone(&server),
        queue: WorkQueue::new(),
        written: HashMap::new(),
    };
    // An event for the parent, then another (its status changed) before the watch caught up.
    for _ in 0..2 {
        controller.queue.add("parent".to_owned());
        controller.reconcile_next().await;
    }
    server.deliver();
    informer
        .wait_for_resource_version("6", DEADLINE)
        .await
        .unwrap();
    // A requeued (stale) key comes back after its delay and is reconciled from the caught-up cache.
    while controller.queue.len() + controller.queue.delayed() > 0 {
        controller.reconcile_next().await;
    }
    running.stop().await;
    *server.creations.lock()
}

#[tokio::test(start_paused = true)]
async fn controller_without_the_check_acts_twice_on_a_delayed_watch() {
    assert_eq!(creations_with_delayed_watch(false).await, 2);
}

#[tokio::test(start_paused = true)]
async fn controller_with_the_check_acts_once_on_a_delayed_watch() {
    assert_eq!(creations_with_delayed_watch(true).await, 1);
}

#[tokio::test(start_paused = true)]
async fn wait_for_resource_version_wakes_when_the_write_arrives() {
    let (informer, server, running) = started().await;
    let rv = server.create("a");
    assert_eq!(rv, "6");
    assert!(!informer.has_caught_up_to(&rv));
    let waiting = tokio::spawn({
        let (informer, rv) = (informer.clone(), rv.clone());
        async move { informer.wait_for_resource_version(&rv, DEADLINE).await }
    });
    tokio::task::yield_now().await;
    server.deliver();
    waiting.await.unwrap().unwrap();
    assert!(informer.has_caught_up_to(&rv));
    assert_eq!(informer.last_store_sync_resource_version(), "6");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_resource_version_past_its_deadline_is_stale_cache() {
    let (informer, server, running) = started().await;
    let rv = server.create("a"); // never delivered
    let start = tokio::time::Instant::now();
    let err = informer
        .wait_for_resource_version(&rv, Duration::from_secs(3))
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    match err {
        InformerError::StaleCache { wanted, cache, .. } => {
            assert_eq!((wanted.as_str(), cache.as_str()), ("6", "5"));
        }
        other => panic!("unexpected {other:?}"),
    }
    running.stop().await;
}
