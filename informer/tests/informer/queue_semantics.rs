//! client-go 1.36's queue semantics as an informer sees them: a popped batch applied with the
//! queue unlocked (`UnlockWhileProcessingFIFO`: the reflector keeps queueing while a handler is
//! slow, and nothing is lost or reordered per key) and the atomic relist (`AtomicFIFO`, the
//! default: the cache is replaced in one step before the relist's notifications go out).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::stream;
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{ResourceEventHandlerFuncs, new_informer, wait_for_cache_sync};
use kcache_reflector::{ListPage, ListWatch, WatchEvent, WatchStream, status};
use kcache_store::{Indexer, MaybeTombstone, Store};
use tokio_util::sync::CancellationToken;

use crate::common::{pod, source_with};
use kcache_testkit::{until, within};

fn rv(p: &Pod) -> String {
    p.metadata.resource_version.clone().unwrap_or_default()
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_keeps_writing_while_a_handler_is_slow_and_no_event_is_lost_or_reordered() {
    let source = source_with(0);
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some((entered_tx, release_rx)));
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
    let on_update = seen_tx.clone();
    let handler = ResourceEventHandlerFuncs::<Pod>::new()
        .add_func(move |p: &Arc<Pod>, _| {
            // The first add blocks the handler (and so the process loop) until released.
            if let Some((entered, release)) = gate.lock().unwrap().take() {
                entered.send(()).unwrap();
                release.recv().unwrap();
            }
            seen_tx.send((name(p), rv(p))).unwrap();
        })
        .update_func(move |_: &Arc<Pod>, p: &Arc<Pod>| {
            on_update.send((name(p), rv(p))).unwrap();
        });
    let (_indexer, controller) = new_informer(Arc::clone(&source), Duration::ZERO, handler);
    let controller = Arc::new(controller);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let (c, s) = (Arc::clone(&controller), shutdown.clone());
        async move { c.run(s).await }
    });
    assert!(
        within(
            "the controller to sync",
            wait_for_cache_sync(&shutdown, &[&*controller])
        )
        .await
    );
    until("the watch is open", || source.watchers() > 0).await;

    source.add(pod(0));
    within(
        "the handler to enter the first add",
        tokio::task::spawn_blocking(move || entered_rx.recv()),
    )
    .await
    .unwrap()
    .unwrap();
    // The handler is stuck inside a batch; the watch goes on.
    source.add(pod(1));
    source.add(pod(2));
    for round in 0..5 {
        for i in 0..3 {
            let mut p = pod(i);
            p.metadata.labels = Some([("round".to_string(), round.to_string())].into());
            source.modify(p);
        }
    }
    let last = source.resource_version();
    until("the reflector queued every event", || {
        controller.last_sync_resource_version() == last
    })
    .await;

    release_tx.send(()).unwrap();
    let mut per_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for _ in 0..18 {
        let (name, rv) = within("a handler notification", seen_rx.recv())
            .await
            .unwrap();
        per_key.entry(name).or_default().push(rv.parse().unwrap());
    }
    assert_eq!(per_key.len(), 3, "{per_key:?}");
    for (name, rvs) in &per_key {
        assert_eq!(rvs.len(), 6, "{name}: one add and five updates: {rvs:?}");
        assert!(rvs.is_sorted(), "{name} in the order written: {rvs:?}");
    }
    assert_eq!(per_key.values().flatten().max().unwrap().to_string(), last);
    shutdown.cancel();
    within("the controller to stop", task)
        .await
        .unwrap()
        .unwrap();
}

fn listed(name: &str, resource_version: &str) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.namespace = Some("ns".into());
    p.metadata.name = Some(name.into());
    p.metadata.resource_version = Some(resource_version.into());
    Arc::new(p)
}

#[tokio::test(start_paused = true)]
async fn atomic_relist_replaces_the_cache_in_one_step_before_notifying() {
    let lists = Arc::new(AtomicUsize::new(0));
    let watches = Arc::new(AtomicUsize::new(0));
    let lw = ListWatch::<Pod>::new(
        move |_| {
            let first = lists.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                let (items, resource_version) = if first {
                    (vec![listed("a", "1"), listed("b", "1")], "10")
                } else {
                    (vec![listed("b", "2")], "11")
                };
                Ok(ListPage {
                    items,
                    resource_version: resource_version.into(),
                    continue_token: None,
                    remaining_item_count: None,
                })
            }
        },
        move |_| {
            let first = watches.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                let events: WatchStream<Pod> = if first {
                    // The first watch expires: the informer relists.
                    Box::pin(stream::iter([Ok(WatchEvent::Error(status::expired(
                        "too old resource version",
                    )))]))
                } else {
                    Box::pin(stream::pending())
                };
                Ok(events)
            }
        },
    );
    let cache: Arc<OnceLock<Arc<Indexer<Pod>>>> = Arc::default();
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let view = {
        let cache = Arc::clone(&cache);
        move || {
            let cache = cache.get().unwrap();
            let mut held: Vec<String> = cache
                .list()
                .iter()
                .map(|p| format!("{}@{}", name(p), rv(p)))
                .collect();
            held.sort();
            held.join(",")
        }
    };
    let (on_add, on_update, on_delete) = (seen_tx.clone(), seen_tx.clone(), seen_tx);
    let (view_update, view_delete) = (view.clone(), view);
    let handler = ResourceEventHandlerFuncs::<Pod>::new()
        .add_func(move |p: &Arc<Pod>, initial| {
            on_add.send(format!("add {} {initial}", name(p))).unwrap();
        })
        .update_func(move |old: &Arc<Pod>, new: &Arc<Pod>| {
            let held = view_update();
            on_update
                .send(format!(
                    "update {} {}->{} [{held}]",
                    name(new),
                    rv(old),
                    rv(new)
                ))
                .unwrap();
        })
        .delete_func(move |gone: &MaybeTombstone<Pod>| {
            let held = view_delete();
            on_delete
                .send(format!("delete {} [{held}]", name(gone.object())))
                .unwrap();
        });
    let (indexer, controller) = new_informer(lw, Duration::ZERO, handler);
    cache.set(Arc::clone(&indexer)).unwrap();
    let shutdown = CancellationToken::new();
    let controller = Arc::new(controller);
    let task = tokio::spawn({
        let (c, s) = (Arc::clone(&controller), shutdown.clone());
        async move { c.run(s).await }
    });
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(
            within("a handler notification", seen_rx.recv())
                .await
                .unwrap(),
        );
    }
    assert_eq!(
        got,
        [
            "add a true",
            "add b true",
            // The relist: the cache already holds exactly the new list at its first notification.
            "delete a [b@2]",
            "update b 1->2 [b@2]",
        ]
    );
    assert_eq!(indexer.last_store_sync_resource_version(), "11");
    shutdown.cancel();
    within("the controller to stop", task)
        .await
        .unwrap()
        .unwrap();
}

/// The process loop yields after each popped batch, so a handler's task runs while a backlog is
/// applied and not only once it is gone: its notifications hold the objects they replaced until
/// it has run. 3,000 deltas queued at once (a relist in `RealFifo` mode, one delta per object)
/// are popped in batches of at most 1,000, and the handler first runs after the first of them.
#[tokio::test]
async fn handlers_run_between_the_batches_of_a_backlog() {
    let source = source_with(3_000);
    let informer = kcache_informer::SharedIndexInformer::builder(Arc::clone(&source))
        .queue_mode(kcache_informer::QueueMode::RealFifo)
        .build();
    let stored_at_first_call = Arc::new(OnceLock::new());
    let indexer = informer.indexer();
    informer
        .add_event_handler(ResourceEventHandlerFuncs::new().add_func({
            let stored_at_first_call = Arc::clone(&stored_at_first_call);
            move |_, _| {
                stored_at_first_call.get_or_init(|| indexer.len());
            }
        }))
        .unwrap();
    let running = crate::common::Running::start(source, informer);
    running.wait_synced().await;
    let stored = *stored_at_first_call.get().expect("the handler ran");
    assert!(
        stored <= 1_000,
        "the handler first ran with {stored} objects stored: after the whole backlog"
    );
    running.stop().await;
}
