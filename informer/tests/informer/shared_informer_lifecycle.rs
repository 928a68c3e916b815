//! SharedIndexInformer's failures and lifecycle against the reflector's fake source, with
//! paused time: panicking handlers and index functions, sync signals, stopping by dropping the
//! run future, the watch-list mode.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{InformerError, ResourceEventHandlerFuncs, wait_for_cache_sync};
use kcache_reflector::ReflectorConfig;
use kcache_testkit::within;
use tokio_util::sync::CancellationToken;

use crate::common::{
    Cache, Recorder, Running, describe, key, on_both_caches, pod, recv_n, sorted, source_with,
    take_n,
};
use crate::shared_informer::informer;

async fn handler_panic_logged_and_survived(cache: Cache) {
    crate::logs::capture();
    let source = source_with(2);
    let informer = cache
        .builder(Arc::clone(&source))
        .name(format!("panicky-pods-{cache:?}"))
        .build();
    let panicking = ResourceEventHandlerFuncs::<Pod>::new().add_func(|pod, _| {
        if pod.metadata.resource_version.as_deref() == Some("1") {
            panic!("handler bug");
        }
    });
    let (after, mut after_rx) = Recorder::new();
    let bad = informer
        .add_event_handler(kcache_informer::FilteringResourceEventHandler::new(
            |_: &Pod| true,
            panicking,
        ))
        .unwrap();
    let (rec, mut rx) = Recorder::new();
    let good = informer.add_event_handler(rec).unwrap();
    informer.add_event_handler(after).unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    assert!(
        within(
            "both handlers to sync",
            wait_for_cache_sync(&running.shutdown, &[&bad, &good])
        )
        .await,
        "a panicking handler still syncs"
    );
    assert_eq!(recv_n(&mut rx, 2).await.len(), 2);
    recv_n(&mut after_rx, 2).await;
    source.add(pod(2));
    recv_n(&mut rx, 1).await;
    running.stop().await;
    let logs = crate::logs::lines_with(&format!("panicky-pods-{cache:?}"));
    assert_eq!(
        logs.len(),
        1,
        "one panic logged with the informer's name: {logs:?}"
    );
    assert!(logs[0].contains("event handler panicked"), "{logs:?}");
    assert!(logs[0].contains("handler bug"), "{logs:?}");
}

async fn has_synced_false_before_start_and_event_streams_sync_when_consumed(cache: Cache) {
    let source = source_with(2);
    let informer = informer(&source, cache);
    let mut events = informer.event_stream().unwrap();
    assert!(!informer.has_synced());
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    assert!(!events.registration().has_synced(), "nothing consumed yet");
    let first = within("the first initial add", events.next())
        .await
        .unwrap();
    assert!(describe(&first).ends_with(" true"));
    assert!(!events.registration().has_synced());
    within("the second initial add", events.next())
        .await
        .unwrap();
    assert!(events.registration().has_synced());
    running.stop().await;
}

async fn dropping_the_run_future_stops_the_informer(cache: Cache) {
    let source = source_with(1);
    let informer = informer(&source, cache);
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    take_n(&mut events, 1).await;
    running.task.abort();
    let aborted = within("the aborted run", running.task).await;
    assert!(aborted.unwrap_err().is_cancelled());
    assert!(informer.is_stopped());
    assert!(
        within("the stream's end", events.next()).await.is_none(),
        "streams end"
    );
    assert!(matches!(
        informer.add_event_handler(ResourceEventHandlerFuncs::new()),
        Err(InformerError::Stopped(_))
    ));
}

async fn watch_list_mode_syncs_from_one_watch_and_follows(cache: Cache) {
    let source = source_with(2);
    let informer = cache
        .builder(Arc::clone(&source))
        .reflector(ReflectorConfig::default().use_watch_list(true))
        .build();
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    assert!(source.list_calls().is_empty(), "no list in watch-list mode");
    assert_eq!(
        sorted(take_n(&mut events, 2).await),
        vec![
            format!("add {} true", key(0)),
            format!("add {} true", key(1))
        ]
    );
    source.add(pod(2));
    assert_eq!(
        take_n(&mut events, 1).await,
        vec![format!("add {} false", key(2))]
    );
    running.stop().await;
}

async fn panicking_index_function_fails_the_batch_not_the_informer(cache: Cache) {
    let source = source_with(1);
    let informer = cache
        .builder(Arc::clone(&source))
        .index(
            "boom",
            Arc::new(|pod: &Pod| {
                if pod
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("boom"))
                {
                    panic!("index function bug");
                }
                Ok(Default::default())
            }),
        )
        .build();
    let mut events = informer.event_stream().unwrap();
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    take_n(&mut events, 1).await;
    let mut bad = pod(1);
    bad.metadata.labels = Some([("boom".to_string(), "yes".to_string())].into());
    source.add(bad);
    source.add(pod(2));
    assert_eq!(
        take_n(&mut events, 1).await,
        vec![format!("add {} false", key(2))]
    );
    running.stop().await;
}

/// A [`kcache_informer::HasSynced`] that claims to signal and counts how often it is asked.
struct CountingSignal(std::sync::atomic::AtomicUsize);

impl kcache_informer::HasSynced for CountingSignal {
    fn has_synced(&self) -> bool {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        false
    }
    fn signals_sync(&self) -> bool {
        true
    }
}

async fn wait_for_cache_sync_wakes_on_the_signal_and_does_not_poll(cache: Cache) {
    let check = CountingSignal(std::sync::atomic::AtomicUsize::new(0));
    let shutdown = CancellationToken::new();
    let checks: [&dyn kcache_informer::HasSynced; 1] = [&check];
    let waiting = wait_for_cache_sync(&shutdown, &checks);
    tokio::pin!(waiting);
    tokio::select! {
        _ = &mut waiting => panic!("nothing synced"),
        () = tokio::time::sleep(std::time::Duration::from_secs(10)) => {}
    }
    assert_eq!(
        check.0.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "checked once, then waited for a signal instead of polling"
    );
    shutdown.cancel();
    assert!(!within("the cancelled wait", waiting).await);

    // A real informer wakes it when it syncs.
    let source = source_with(3);
    let informer = informer(&source, cache);
    let running = Running::start(Arc::clone(&source), informer.clone());
    assert!(
        within(
            "the informer's sync signal",
            wait_for_cache_sync(&CancellationToken::new(), &[&informer])
        )
        .await
    );

    running.stop().await;
}

on_both_caches!(
    #[tokio::test(start_paused = true)]
    handler_panic_logged_and_survived,
    has_synced_false_before_start_and_event_streams_sync_when_consumed,
    dropping_the_run_future_stops_the_informer,
    watch_list_mode_syncs_from_one_watch_and_follows,
    panicking_index_function_fails_the_batch_not_the_informer,
    wait_for_cache_sync_wakes_on_the_signal_and_does_not_poll
);
