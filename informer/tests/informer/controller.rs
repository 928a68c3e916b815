//! The controller, delta processing and the `new_informer` family.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::{Delta, DeltaType};
use kcache_informer::{
    Controller, ControllerConfig, InformerError, InformerQueue, ProcessFunc, QueueMode,
    new_indexer_informer, new_informer, process_deltas, wait_for_cache_sync,
};
use kcache_store::{
    DeletedFinalStateUnknown, Indexer, Indexers, KnownObjects, MaybeTombstone, Store,
    label_index_func,
};
use kcache_testkit::{until, within};
use tokio_util::sync::CancellationToken;

use crate::common::{Recorder, key, pod, recv_n, source_with};

fn at(i: usize, rv: &str) -> Arc<Pod> {
    let mut p = pod(i);
    p.metadata.resource_version = Some(rv.into());
    Arc::new(p)
}

type Task = tokio::task::JoinHandle<Result<(), InformerError>>;

/// Runs a controller in a task.
fn spawn(controller: Controller<Pod>) -> (Arc<Controller<Pod>>, CancellationToken, Task) {
    let controller = Arc::new(controller);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let (c, s) = (Arc::clone(&controller), shutdown.clone());
        async move { c.run(s).await }
    });
    (controller, shutdown, task)
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

#[test]
fn process_deltas_adds_updates_and_deletes() {
    let indexer = Indexer::<Pod>::default();
    let (rec, mut rx) = Recorder::new();
    let deltas = [
        Delta::new(DeltaType::Added, at(0, "1")),
        Delta::new(DeltaType::Replaced, at(1, "2")),
        Delta::new(DeltaType::Updated, at(0, "3")),
        Delta::new(DeltaType::Sync, at(0, "3")),
        Delta::new(DeltaType::Deleted, at(0, "4")),
        Delta::with_payload(
            DeltaType::Deleted,
            MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
                key: key(1),
                obj: at(1, "2"),
            }),
        ),
    ];
    process_deltas(&rec, &indexer, &deltas, true).unwrap();
    assert_eq!(
        drain(&mut rx),
        vec![
            format!("add {} true", key(0)),
            format!("add {} true", key(1)),
            format!("update {} 1->3", key(0)),
            format!("update {} 3->3", key(0)),
            format!("delete {}", key(0)),
            format!("delete-tombstone {}", key(1)),
        ]
    );
    assert!(indexer.is_empty());
}

#[test]
fn replaced_all_deletes_first_then_replaces_then_notifies_in_list_order() {
    let indexer = Indexer::<Pod>::default();
    indexer.add(at(0, "1")).unwrap();
    indexer.add(at(1, "2")).unwrap();
    let (rec, mut rx) = Recorder::new();
    let objects: Arc<[Arc<Pod>]> = vec![at(2, "5"), at(1, "4")].into();
    let delta = Delta::ReplacedAll {
        resource_version: "5".into(),
        objects,
    };
    process_deltas(&rec, &indexer, &[delta], false).unwrap();
    assert_eq!(
        drain(&mut rx),
        vec![
            format!("delete-tombstone {}", key(0)),
            format!("add {} false", key(2)),
            format!("update {} 2->4", key(1))
        ]
    );
    assert_eq!(indexer.len(), 2);
    assert_eq!(indexer.last_store_sync_resource_version(), "5");
}

#[test]
fn sync_all_updates_every_object_with_itself_and_bookmark_sets_the_resource_version() {
    let indexer = Indexer::<Pod>::default();
    indexer.add(at(0, "1")).unwrap();
    let (rec, mut rx) = Recorder::new();
    process_deltas(
        &rec,
        &indexer,
        &[
            Delta::SyncAll,
            Delta::Bookmark {
                resource_version: "9".into(),
            },
        ],
        false,
    )
    .unwrap();
    assert_eq!(drain(&mut rx), vec![format!("update {} 1->1", key(0))]);
    assert_eq!(indexer.last_store_sync_resource_version(), "9");
}

#[tokio::test(start_paused = true)]
async fn new_informer_fills_the_store_and_calls_the_handler() {
    let source = source_with(2);
    let (rec, mut rx) = Recorder::new();
    let (store, controller) = new_indexer_informer(
        Arc::clone(&source),
        Duration::ZERO,
        rec,
        Indexers::from_iter([("tier".to_string(), label_index_func("tier"))]),
    );
    let (controller, shutdown, task) = spawn(controller);
    assert!(
        within(
            "the controller to sync",
            wait_for_cache_sync(&shutdown, &[&*controller])
        )
        .await
    );
    assert_eq!(
        recv_n(&mut rx, 2)
            .await
            .iter()
            .filter(|e| e.ends_with("true"))
            .count(),
        2
    );
    assert_eq!(store.len(), 2);
    source.delete(pod(0));
    assert_eq!(recv_n(&mut rx, 1).await, vec![format!("delete {}", key(0))]);
    assert_eq!(controller.last_sync_resource_version(), "3");
    // A controller runs once.
    assert!(matches!(
        within("the second run's refusal", controller.run(shutdown.clone())).await,
        Err(InformerError::AlreadyRun(_))
    ));
    shutdown.cancel();
    within("the controller to stop", task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn new_informer_handler_panic_does_not_stop_the_controller() {
    let source = source_with(2);
    let seen = Arc::new(AtomicUsize::new(0));
    let handler = kcache_informer::ResourceEventHandlerFuncs::<Pod>::new().add_func({
        let seen = Arc::clone(&seen);
        move |_, _| {
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("first add fails");
            }
        }
    });
    let (store, controller) = new_informer(Arc::clone(&source), Duration::ZERO, handler);
    let (controller, shutdown, task) = spawn(controller);
    assert!(
        within(
            "the controller to sync",
            wait_for_cache_sync(&shutdown, &[&*controller])
        )
        .await
    );
    assert_eq!(store.len(), 2);
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    shutdown.cancel();
    within("the controller to stop", task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn retry_on_error_requeues_failed_deltas() {
    let source = source_with(1);
    let indexer = Arc::new(Indexer::<Pod>::default());
    let known: Arc<dyn KnownObjects<Pod>> = indexer.clone();
    let queue = InformerQueue::new(QueueMode::DeltaFifo, known);
    let attempts = Arc::new(AtomicUsize::new(0));
    let process: ProcessFunc<Pod> = Arc::new({
        let (attempts, indexer) = (Arc::clone(&attempts), Arc::clone(&indexer));
        move |deltas, initial| {
            if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err("transient".into());
            }
            process_deltas(
                &kcache_informer::ResourceEventHandlerFuncs::new(),
                &indexer,
                deltas,
                initial,
            )?;
            Ok(())
        }
    });
    let config =
        ControllerConfig::new(queue, Arc::new(Arc::clone(&source)), process).retry_on_error(true);
    let (controller, shutdown, task) = spawn(Controller::new(config));
    assert!(
        within(
            "the controller to sync",
            wait_for_cache_sync(&shutdown, &[&*controller])
        )
        .await
    );
    until("the retried delta to reach the indexer", || {
        !indexer.is_empty()
    })
    .await;
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    shutdown.cancel();
    within("the controller to stop", task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn every_informer_queue_holds_its_watch_back_past_256_queued_events_until_half_are_applied() {
    use futures::FutureExt;
    use kcache_reflector::ReflectorStore;

    for mode in [
        QueueMode::AtomicRealFifo,
        QueueMode::RealFifo,
        QueueMode::DeltaFifo,
    ] {
        let indexer = Arc::new(Indexer::<Pod>::default());
        let known: Arc<dyn KnownObjects<Pod>> = indexer;
        let queue = InformerQueue::new(mode, known);
        for i in 0..256 {
            ReflectorStore::add(&queue, at(i, "1")).unwrap();
        }
        assert!(
            queue.room().is_none(),
            "{mode:?}: 256 queued events leave room"
        );
        ReflectorStore::add(&queue, at(256, "1")).unwrap();
        let mut room = queue
            .room()
            .unwrap_or_else(|| panic!("{mode:?}: no room past 256 queued events"));
        loop {
            let before = queue.len();
            if room.as_mut().now_or_never().is_some() {
                assert!(before <= 128, "{mode:?}: room with {before} queued");
                break;
            }
            assert!(before > 128, "{mode:?}: no room with {before} queued");
            within(
                "a queued event",
                queue.pop::<std::convert::Infallible>(|_, _| Ok(())),
            )
            .await
            .unwrap();
        }
    }
}
