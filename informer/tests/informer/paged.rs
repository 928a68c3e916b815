//! A compact informer's list applied page by page: objects handed out while the list goes on,
//! the initial sync only after the last page, a relist's deletions at its end.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::SharedIndexInformer;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{ListFuture, ListOptions, ListerWatcher, ReflectorConfig, WatchFuture};
use kcache_store::Store;
use tokio::sync::Semaphore;

use crate::common::{Cache, Running, key, pod, sorted, source_with, take_n};
use kcache_testkit::within;

/// The fake source, whose list call number `gate_at` (from 0) waits for a permit of `gate`.
struct Gated {
    source: Arc<FakeControllerSource<Pod>>,
    calls: AtomicUsize,
    gate_at: usize,
    gate: Arc<Semaphore>,
}

impl ListerWatcher<Pod> for Gated {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, Pod> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let options = options.clone();
        async move {
            if call == self.gate_at {
                let _permit = self.gate.acquire().await;
            }
            self.source.list(&options).await
        }
        .boxed()
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, Pod> {
        self.source.watch(options)
    }
}

/// A compact informer over `lister_watcher` listing in pages of two.
fn paged_informer(lister_watcher: impl ListerWatcher<Pod>) -> SharedIndexInformer<Pod> {
    Cache::Compact
        .builder(lister_watcher)
        .reflector(ReflectorConfig::default().page_size(2))
        .build()
}

#[tokio::test(start_paused = true)]
async fn a_compact_informer_hands_out_the_first_pages_before_the_list_ends_and_syncs_after_the_last()
 {
    let source = source_with(5);
    let gate = Arc::new(Semaphore::new(0));
    let informer = paged_informer(Gated {
        source: Arc::clone(&source),
        calls: AtomicUsize::new(0),
        gate_at: 2,
        gate: Arc::clone(&gate),
    });
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(Arc::clone(&source), informer.clone());
    // The third page is held back: the first two are applied and notified meanwhile.
    let first = within("the first four events", take_n(&mut events, 4)).await;
    assert_eq!(
        sorted(first),
        (0..4)
            .map(|i| format!("add {} true", key(i)))
            .collect::<Vec<_>>()
    );
    assert_eq!(informer.indexer().len(), 4);
    assert!(!informer.has_synced(), "synced before the last page");
    gate.add_permits(1);
    running.wait_synced().await;
    assert_eq!(
        within("the fifth event", take_n(&mut events, 1)).await,
        vec![format!("add {} true", key(4))]
    );
    assert_eq!(informer.indexer().len(), 5);
    assert_eq!(informer.indexer().last_store_sync_resource_version(), "5");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_compact_informer_lists_first_at_the_most_recent_state_so_that_a_server_pages_it() {
    let source = source_with(3);
    let informer = Cache::Compact.builder(Arc::clone(&source)).build();
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    let first = source.list_calls().into_iter().next().expect("a list");
    // resourceVersion=0 would be answered whole, whatever the limit.
    assert_eq!(first.resource_version, None);
    assert_eq!(first.limit, Some(500));
    running.stop().await;

    // The default cache lists as client-go does.
    let source = source_with(3);
    let informer = Cache::Shared.builder(Arc::clone(&source)).build();
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    let first = source.list_calls().into_iter().next().expect("a list");
    assert_eq!(first.resource_version.as_deref(), Some("0"));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_relist_in_pages_notifies_changes_then_deletes_the_keys_not_listed() {
    let source = source_with(5);
    let informer = paged_informer(Arc::clone(&source));
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    within("the five events of the list", take_n(&mut events, 5)).await;

    // The watch is down while pods change, and the history is gone: a relist finds them.
    source.end_all_watches();
    let mut changed = pod(3);
    changed.metadata.labels = Some([("changed".to_string(), "yes".to_string())].into());
    source.modify(changed);
    source.delete(pod(1));
    source.add(pod(5));
    source.compact();

    // Unchanged objects reach nobody (no resync due); the vanished one is a tombstone at the end.
    assert_eq!(
        within("the three events of the relist", take_n(&mut events, 3)).await,
        vec![
            format!("update {} 4->6", key(3)),
            format!("add {} false", key(5)),
            format!("delete-tombstone {}", key(1)),
        ]
    );
    assert!(informer.has_synced());
    let mut keys: Vec<String> = informer
        .indexer()
        .list_keys()
        .iter()
        .map(ToString::to_string)
        .collect();
    keys.sort();
    assert_eq!(keys, sorted([0, 2, 3, 4, 5].map(key).to_vec()));
    assert_eq!(informer.indexer().last_store_sync_resource_version(), "8");
    running.stop().await;
}
