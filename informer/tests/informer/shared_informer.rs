//! SharedIndexInformer behaviours against the reflector's fake source, with paused time.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{
    InformerError, QueueMode, ResourceEventHandlerFuncs, SharedIndexInformer, wait_for_cache_sync,
};
use kcache_reflector::ListWatchError;
use kcache_store::{Indexers, Store, label_index_func};
use kcache_testkit::within;
use tokio_util::sync::CancellationToken;

use crate::common::{
    Cache, Recorder, Running, key, on_both_caches, pod, recv_n, sorted, source_with, take_n,
};

pub(crate) fn informer(
    source: &Arc<kcache_reflector::testing::FakeControllerSource<Pod>>,
    cache: Cache,
) -> SharedIndexInformer<Pod> {
    cache.builder(Arc::clone(source)).name("pods").build()
}

async fn initial_list_reaches_every_handler_as_initial_adds(cache: Cache) {
    let source = source_with(3);
    let informer = informer(&source, cache);
    let (a, mut rx_a) = Recorder::new();
    let (b, mut rx_b) = Recorder::new();
    let reg_a = informer.add_event_handler(a).unwrap();
    let reg_b = informer.add_event_handler(b).unwrap();
    assert!(!informer.has_synced());
    assert!(!reg_a.has_synced());
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    let expected: Vec<String> = (0..3).map(|i| format!("add {} true", key(i))).collect();
    assert_eq!(sorted(recv_n(&mut rx_a, 3).await), sorted(expected.clone()));
    assert_eq!(sorted(recv_n(&mut rx_b, 3).await), sorted(expected));
    assert!(
        within(
            "both registrations to sync",
            wait_for_cache_sync(&running.shutdown, &[&reg_a, &reg_b])
        )
        .await
    );
    assert_eq!(informer.indexer().len(), 3);
    assert_eq!(informer.last_sync_resource_version(), "3");
    running.stop().await;
}

async fn watch_events_reach_handlers_in_order(cache: Cache) {
    let source = source_with(1);
    let informer = informer(&source, cache);
    let (rec, mut rx) = Recorder::new();
    informer.add_event_handler(rec).unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    recv_n(&mut rx, 1).await;
    source.add(pod(1));
    let mut changed = pod(0);
    changed.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    source.modify(changed);
    source.delete(pod(1));
    assert_eq!(
        recv_n(&mut rx, 3).await,
        vec![
            format!("add {} false", key(1)),
            format!("update {} 1->3", key(0)),
            format!("delete {}", key(1))
        ]
    );
    running.stop().await;
}

async fn late_handler_gets_replay_then_synced(cache: Cache) {
    let source = source_with(3);
    let informer = informer(&source, cache);
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;

    let mut late = informer.event_stream().unwrap();
    assert!(
        !late.registration().has_synced(),
        "not synced before the replay is consumed"
    );
    let replay = take_n(&mut late, 3).await;
    let expected: Vec<String> = (0..3).map(|i| format!("add {} true", key(i))).collect();
    assert_eq!(sorted(replay), sorted(expected));
    assert!(late.registration().has_synced());

    // Then live events.
    source.add(pod(3));
    assert_eq!(
        take_n(&mut late, 1).await,
        vec![format!("add {} false", key(3))]
    );

    // A late callback handler too.
    let (rec, mut rx) = Recorder::new();
    let registration = informer.add_event_handler(rec).unwrap();
    assert_eq!(
        recv_n(&mut rx, 4)
            .await
            .iter()
            .filter(|e| e.ends_with(" true"))
            .count(),
        4
    );
    assert!(
        within(
            "the late registration to sync",
            wait_for_cache_sync(&running.shutdown, &[&registration])
        )
        .await
    );
    running.stop().await;
}

async fn add_after_stop_is_an_error(cache: Cache) {
    let source = source_with(1);
    let informer = informer(&source, cache);
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    running.stop().await;
    assert!(informer.is_stopped());
    let err = informer
        .add_event_handler(ResourceEventHandlerFuncs::new())
        .unwrap_err();
    assert!(matches!(err, InformerError::Stopped(_)), "{err}");
    assert!(matches!(
        informer.event_stream().unwrap_err(),
        InformerError::Stopped(_)
    ));
}

async fn registrations_independent_removal_idempotent(cache: Cache) {
    let source = source_with(1);
    let informer = informer(&source, cache);
    let (rec, mut rx) = Recorder::new();
    let rec = Arc::new(rec);
    // The same handler twice: two registrations.
    let first = informer.add_event_handler(Arc::clone(&rec)).unwrap();
    let second = informer.add_event_handler(Arc::clone(&rec)).unwrap();
    assert_eq!(informer.handler_count(), 2);
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    assert_eq!(
        recv_n(&mut rx, 2).await,
        vec![format!("add {} true", key(0)); 2]
    );

    informer.remove_event_handler(&first);
    informer.remove_event_handler(&first);
    assert_eq!(informer.handler_count(), 1);
    assert!(second.has_synced());

    source.add(pod(1));
    assert_eq!(
        recv_n(&mut rx, 1).await,
        vec![format!("add {} false", key(1))]
    );
    running.stop().await;
    assert!(
        rx.try_recv().is_err(),
        "the removed registration got nothing"
    );
}

async fn relist_gives_is_in_initial_list_false(cache: Cache) {
    let source = source_with(1);
    let informer = informer(&source, cache);
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    assert_eq!(
        take_n(&mut events, 1).await,
        vec![format!("add {} true", key(0))]
    );

    // The watch is down while pod 1 is added, and the history is gone: a relist finds it.
    source.end_all_watches();
    source.add(pod(1));
    source.compact();
    assert_eq!(
        take_n(&mut events, 1).await,
        vec![format!("add {} false", key(1))]
    );
    running.stop().await;
}

async fn relist_deletions_are_tombstones_and_unchanged_objects_reach_only_listeners_due_a_resync(
    cache: Cache,
) {
    let source = source_with(3);
    let informer = informer(&source, cache);
    let mut a = informer.event_stream().unwrap();
    let mut b = informer.event_stream().unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    take_n(&mut a, 3).await;
    take_n(&mut b, 3).await;

    source.end_all_watches();
    let mut changed = pod(1);
    changed.metadata.labels = Some([("changed".to_string(), "yes".to_string())].into());
    source.modify(changed);
    source.delete(pod(2));
    source.compact();

    let expected = cache.deletion_first(
        QueueMode::default(),
        vec![
            format!("delete-tombstone {}", key(2)),
            format!("update {} 2->4", key(1)),
        ],
    );
    assert_eq!(take_n(&mut a, 2).await, expected);
    assert_eq!(take_n(&mut b, 2).await, expected);
    // Pod 0 is unchanged (same resource version): a resync that no listener is due.
    assert_eq!(a.queued(), 0);
    assert_eq!(b.queued(), 0);
    running.stop().await;
}

async fn list_errors_reach_the_error_handler(cache: Cache) {
    let source = source_with(1);
    source.fail_next_list(ListWatchError::Connection("connection refused".into()));
    let informer = informer(&source, cache);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    informer
        .set_watch_error_handler(move |err| {
            let _ = tx.send(err.to_string());
        })
        .unwrap();
    let running = Running::start(source, informer);
    let reported = within("the list error's report", rx.recv()).await.unwrap();
    assert!(reported.contains("failed to list"), "{reported}");
    running.wait_synced().await;
    running.stop().await;
}

async fn set_transform_and_error_handler_fail_after_start(cache: Cache) {
    let source = source_with(1);
    let informer = informer(&source, cache);
    informer.set_transform(Arc::new(Ok)).unwrap();
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    assert!(matches!(
        informer.set_transform(Arc::new(Ok)),
        Err(InformerError::AlreadyStarted {
            what: "transform",
            ..
        })
    ));
    assert!(matches!(
        informer.set_watch_error_handler(|_| {}),
        Err(InformerError::AlreadyStarted { .. })
    ));
    running.stop().await;
}

async fn transform_runs_before_cache_and_handlers(cache: Cache) {
    let source = source_with(1);
    let informer = informer(&source, cache);
    informer
        .set_transform(Arc::new(|pod: Arc<Pod>| {
            let mut pod = Arc::unwrap_or_clone(pod);
            pod.metadata.managed_fields = None;
            Ok(Arc::new(pod))
        }))
        .unwrap();
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    let event = within("the transformed add", events.next()).await.unwrap();
    assert!(event.object().metadata.managed_fields.is_none());
    let cached = informer.indexer().get_by_key(&key(0)).unwrap();
    assert!(cached.metadata.managed_fields.is_none());
    match cache {
        Cache::Shared => assert!(
            Arc::ptr_eq(&cached, event.object()),
            "the handler and the cache share the object"
        ),
        // The compact cache decodes a fresh object on every read.
        Cache::Compact => assert_eq!(&cached, event.object()),
    }
    running.stop().await;
}

async fn add_indexers_while_running_covers_cached_objects(cache: Cache) {
    let source = source_with(4);
    let informer = informer(&source, cache);
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    informer
        .add_indexers(Indexers::from_iter([(
            "by-tier".to_string(),
            label_index_func("tier"),
        )]))
        .unwrap();
    let tier = pod(0).metadata.labels.unwrap()["tier"].clone();
    assert!(
        !informer
            .indexer()
            .by_index("by-tier", &tier)
            .unwrap()
            .is_empty()
    );
    // A conflicting name is refused.
    assert!(
        informer
            .add_indexers(Indexers::from_iter([(
                "by-tier".to_string(),
                label_index_func("x")
            )]))
            .is_err()
    );
    running.stop().await;
}

async fn add_index_while_running_serves_namespace_lister_by_index(cache: Cache) {
    let source = source_with(4);
    let informer = informer(&source, cache);
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    informer
        .add_index("by-tier", label_index_func("tier"))
        .unwrap();
    let first = pod(0);
    let tier = first.metadata.labels.as_ref().unwrap()["tier"].clone();
    let namespace = first.metadata.namespace.clone().unwrap();
    let all = informer.lister().by_index("by-tier", &tier).unwrap();
    let in_namespace = informer
        .lister()
        .namespace(&namespace)
        .by_index("by-tier", &tier)
        .unwrap();
    assert!(!in_namespace.is_empty());
    assert_eq!(
        in_namespace.len(),
        all.len(),
        "fixture pods share one namespace"
    );
    assert!(
        informer
            .lister()
            .namespace("elsewhere")
            .by_index("by-tier", &tier)
            .unwrap()
            .is_empty()
    );
    assert!(
        informer
            .add_index("by-tier", label_index_func("x"))
            .is_err()
    );
    running.stop().await;
}

async fn run_twice_is_an_error_and_stop_joins_every_task(cache: Cache) {
    let source = source_with(2);
    let informer = informer(&source, cache);
    let (rec, _rx) = Recorder::new();
    informer.add_event_handler(rec).unwrap();
    let mut stream = informer.event_stream().unwrap();
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    let second = within(
        "the second run's refusal",
        informer.run(CancellationToken::new()),
    )
    .await;
    assert!(matches!(second, Err(InformerError::AlreadyRun(_))));
    running.stop().await;
    assert!(informer.is_stopped());
    assert_eq!(informer.handler_count(), 0);
    // The stream hands out what it buffered, then ends.
    take_n(&mut stream, 2).await;
    assert!(within("the stream's end", stream.next()).await.is_none());
}

async fn every_queue_mode_turns_a_relist_into_tombstones(cache: Cache) {
    for mode in [
        QueueMode::RealFifo,
        QueueMode::AtomicRealFifo,
        QueueMode::DeltaFifo,
    ] {
        let source = source_with(2);
        let informer = cache.builder(Arc::clone(&source)).queue_mode(mode).build();
        let mut events = informer.event_stream().unwrap();
        let running = Running::start(Arc::clone(&source), informer.clone());
        running.wait_synced().await;
        assert_eq!(
            sorted(take_n(&mut events, 2).await),
            vec![
                format!("add {} true", key(0)),
                format!("add {} true", key(1))
            ]
        );
        source.end_all_watches();
        source.delete(pod(1));
        source.add(pod(2));
        source.compact();
        let got = cache.deletion_first(mode, take_n(&mut events, 2).await);
        assert_eq!(
            got,
            vec![
                format!("delete-tombstone {}", key(1)),
                format!("add {} false", key(2))
            ],
            "{mode:?}"
        );
        assert_eq!(informer.indexer().len(), 2, "{mode:?}");
        running.stop().await;
    }
}

on_both_caches!(
    #[tokio::test(start_paused = true)]
    initial_list_reaches_every_handler_as_initial_adds,
    watch_events_reach_handlers_in_order,
    late_handler_gets_replay_then_synced,
    add_after_stop_is_an_error,
    registrations_independent_removal_idempotent,
    relist_gives_is_in_initial_list_false,
    relist_deletions_are_tombstones_and_unchanged_objects_reach_only_listeners_due_a_resync,
    list_errors_reach_the_error_handler,
    set_transform_and_error_handler_fail_after_start,
    transform_runs_before_cache_and_handlers,
    add_indexers_while_running_covers_cached_objects,
    add_index_while_running_serves_namespace_lister_by_index,
    run_twice_is_an_error_and_stop_joins_every_task,
    every_queue_mode_turns_a_relist_into_tombstones
);
