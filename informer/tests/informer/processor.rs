//! The processor: per-listener buffers and tasks (multi-threaded runtime: a handler blocks a
//! worker thread on purpose).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;

use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{ResourceEventHandlerFuncs, wait_for_cache_sync};
use parking_lot::Mutex;

use crate::common::{Cache, Recorder, Running, on_both_caches, pod, recv_n, source_with};
use kcache_testkit::{until, within};

/// A handler whose every add blocks until the test lets it through; counts calls.
fn gated_handler() -> (
    ResourceEventHandlerFuncs<Pod>,
    std_mpsc::Sender<()>,
    Arc<AtomicUsize>,
) {
    let (release, gate) = std_mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let calls = Arc::new(AtomicUsize::new(0));
    let handler = ResourceEventHandlerFuncs::new().add_func({
        let calls = Arc::clone(&calls);
        move |_: &Arc<Pod>, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            let _ = gate.lock().recv();
        }
    });
    (handler, release, calls)
}

async fn slow_handler_delays_nobody_else(cache: Cache) {
    let source = source_with(3);
    let informer = cache.builder(Arc::clone(&source)).build();
    let (slow, release, slow_calls) = gated_handler();
    let slow_reg = informer.add_event_handler(slow).unwrap();
    let (fast, mut rx) = Recorder::new();
    let fast_reg = informer.add_event_handler(fast).unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    // The fast handler gets everything, initial list and live events, while the slow one is
    // stuck in its first call.
    recv_n(&mut rx, 3).await;
    assert!(
        within(
            "the fast handler to sync",
            wait_for_cache_sync(&running.shutdown, &[&fast_reg])
        )
        .await
    );
    source.add(pod(3));
    recv_n(&mut rx, 1).await;
    assert_eq!(slow_calls.load(Ordering::SeqCst), 1);
    assert!(!slow_reg.has_synced());
    for _ in 0..4 {
        release.send(()).unwrap();
    }
    assert!(
        within(
            "the released slow handler to sync",
            wait_for_cache_sync(&running.shutdown, &[&slow_reg])
        )
        .await
    );
    // Synced means the three listed pods were handled; the live one may still be on its way.
    until("the slow handler got the live pod", || {
        slow_calls.load(Ordering::SeqCst) >= 4
    })
    .await;
    running.stop().await;
    assert_eq!(slow_calls.load(Ordering::SeqCst), 4);
}

async fn removed_handler_pending_notifications_dropped(cache: Cache) {
    let source = source_with(3);
    let informer = cache.builder(Arc::clone(&source)).build();
    let (slow, release, slow_calls) = gated_handler();
    let registration = informer.add_event_handler(slow).unwrap();
    let (other, mut rx) = Recorder::new();
    informer.add_event_handler(other).unwrap();
    let running = Running::start(Arc::clone(&source), informer.clone());
    running.wait_synced().await;
    recv_n(&mut rx, 3).await;
    // One call in progress, two notifications buffered behind it.
    informer.remove_event_handler(&registration);
    release.send(()).unwrap();
    drop(release);
    running.stop().await;
    assert_eq!(
        slow_calls.load(Ordering::SeqCst),
        1,
        "buffered notifications were dropped"
    );
}

on_both_caches!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    slow_handler_delays_nobody_else,
    removed_handler_pending_notifications_dropped
);
