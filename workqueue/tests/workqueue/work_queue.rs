//! Work-queue behaviours.

use std::sync::Arc;
use std::time::Duration;

use kcache_testkit::within;
use kcache_workqueue::{ItemFastSlowRateLimiter, WorkQueue, WorkQueueConfig};
use parking_lot::Mutex;

/// The queue's next item, or `None` once it shuts down: bounded.
pub(crate) async fn get<T: Eq + std::hash::Hash + Clone + Send + Sync + 'static>(
    q: &WorkQueue<T>,
) -> Option<T> {
    within("the queue's next item or its shutdown", q.get()).await
}

#[tokio::test]
async fn add_while_processing_requeues_on_done() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    let item = get(&q).await.unwrap();
    q.add("a");
    // Not handed out a second time while it is processed.
    assert_eq!(q.len(), 0);
    q.done(&item);
    assert_eq!(q.len(), 1);
    assert_eq!(get(&q).await, Some("a"));
}

#[tokio::test]
async fn collapse_while_processing() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    let item = get(&q).await.unwrap();
    q.add("a");
    q.add("a");
    q.done(&item);
    assert_eq!(q.len(), 1);
    let again = get(&q).await.unwrap();
    q.done(&again);
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn adding_an_item_already_dirty_does_nothing() {
    let q = WorkQueue::<u32>::new();
    q.add(1);
    q.add(2);
    q.add(1);
    assert_eq!(q.len(), 2);
    assert_eq!(get(&q).await, Some(1));
    assert_eq!(get(&q).await, Some(2));
}

#[tokio::test]
async fn add_is_ignored_after_shut_down_but_get_hands_out_remaining_items() {
    let q = WorkQueue::<u32>::new();
    q.add(1);
    q.shut_down();
    q.add(2);
    assert!(q.is_shutting_down());
    assert_eq!(get(&q).await, Some(1));
    assert_eq!(get(&q).await, None);
}

#[tokio::test]
async fn shut_down_unblocks_every_waiting_get() {
    let q = WorkQueue::<u32>::new();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { get(&q).await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shut_down();
    for w in workers {
        assert_eq!(w.await.unwrap(), None);
    }
}

#[tokio::test]
async fn drain_with_shut_down_with_drain_and_a_dirty_item() {
    let q = WorkQueue::<&str>::new();
    q.add("foo");
    let gotten = get(&q).await.unwrap();
    q.add("foo");
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { within("the drain", q.shut_down_with_drain()).await })
    };
    tokio::task::yield_now().await;
    // Shutting down and nothing waiting: `get` says so, the drain still waits for "foo".
    assert_eq!(get(&q).await, None);
    assert!(!drain.is_finished());
    // Done puts the dirty item back: it is handed out once more despite the shutdown.
    q.done(&gotten);
    let again = get(&q).await.unwrap();
    assert!(!drain.is_finished());
    q.done(&again);
    assert_eq!(get(&q).await, None);
    drain.await.unwrap();
}

#[tokio::test]
async fn shut_down_with_drain_waits_for_every_item_being_processed() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    q.add("b");
    let a = get(&q).await.unwrap();
    // "a" is processing and dirty again; "b" waits.
    q.add("a");
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { within("the drain", q.shut_down_with_drain()).await })
    };
    tokio::task::yield_now().await;
    assert!(!drain.is_finished());
    q.done(&a);
    // The dirty "a" was queued again on done; the worker keeps getting until None.
    let mut rest = Vec::new();
    while let Some(item) = get(&q).await {
        rest.push(item);
        q.done(&item);
    }
    rest.sort();
    assert_eq!(rest, ["a", "b"]);
    drain.await.unwrap();
    assert_eq!(q.processing(), 0);
}

#[tokio::test]
async fn shut_down_aborts_the_drain() {
    let q = WorkQueue::<u32>::new();
    q.add(1);
    let _held = get(&q).await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { within("the drain", q.shut_down_with_drain()).await })
    };
    tokio::task::yield_now().await;
    assert!(!drain.is_finished());
    q.shut_down();
    drain.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn add_after_adds_once_the_delay_has_passed() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::from_millis(50));
    assert_eq!(q.len(), 0);
    assert_eq!(q.delayed(), 1);
    tokio::time::advance(Duration::from_millis(49)).await;
    assert_eq!(q.len(), 0);
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(get(&q).await, Some(1));
}

#[tokio::test(start_paused = true)]
async fn waiting_get_wakes_when_a_delay_expires() {
    let q = WorkQueue::<u32>::new();
    let worker = {
        let q = q.clone();
        tokio::spawn(async move { get(&q).await })
    };
    tokio::task::yield_now().await;
    q.add_after(7, Duration::from_secs(10));
    q.add_after(8, Duration::from_secs(1));
    // Paused time auto-advances to the earliest timer.
    assert_eq!(worker.await.unwrap(), Some(8));
}

#[tokio::test(start_paused = true)]
async fn delaying_queue_dedup_keeps_the_earliest_time() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::from_secs(5));
    q.add_after(1, Duration::from_secs(1));
    q.add_after(1, Duration::from_secs(10));
    assert_eq!(q.delayed(), 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(get(&q).await, Some(1));
    tokio::time::advance(Duration::from_secs(20)).await;
    // The later times were absorbed: nothing comes back.
    assert_eq!(q.len(), 0);
    assert_eq!(q.delayed(), 0);
}

#[tokio::test(start_paused = true)]
async fn delayed_items_come_out_in_ready_time_order() {
    let q = WorkQueue::<u32>::new();
    for (item, ms) in [(1, 30), (2, 10), (3, 20)] {
        q.add_after(item, Duration::from_millis(ms));
    }
    tokio::time::advance(Duration::from_millis(30)).await;
    let mut out = Vec::new();
    while !q.is_empty() {
        out.push(get(&q).await.unwrap());
    }
    assert_eq!(out, [2, 3, 1]);
}

#[tokio::test(start_paused = true)]
async fn add_after_with_zero_delay_adds_at_once() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::ZERO);
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn add_after_is_ignored_after_shut_down_and_shut_down_drops_delayed_items() {
    let q = WorkQueue::<u32>::new();
    q.add_after(1, Duration::from_secs(1));
    q.shut_down();
    q.add_after(2, Duration::from_secs(1));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(get(&q).await, None);
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_for_the_limiter_and_forget_resets_num_requeues() {
    let limiter = Arc::new(ItemFastSlowRateLimiter::new(
        Duration::from_millis(5),
        Duration::from_secs(10),
        1,
    ));
    let q = WorkQueue::<u32>::with_config(WorkQueueConfig::default().rate_limiter(limiter));
    q.add_rate_limited(1);
    assert_eq!(q.num_requeues(&1), 1);
    tokio::time::advance(Duration::from_millis(5)).await;
    assert_eq!(q.len(), 1);
    let item = get(&q).await.unwrap();
    q.done(&item);
    q.add_rate_limited(1);
    assert_eq!(q.num_requeues(&1), 2);
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(q.len(), 0, "second attempt is slow");
    q.forget(&1);
    assert_eq!(q.num_requeues(&1), 0);
}

#[tokio::test]
async fn a_string_queue_counts_and_forgets_requeues_by_str() {
    let q = WorkQueue::<String>::new();
    q.add_rate_limited("default/web".to_string());
    q.add_rate_limited("default/web".to_string());
    assert_eq!(q.num_requeues("default/web"), 2);
    assert_eq!(q.num_requeues(&"default/web".to_string()), 2);
    assert_eq!(q.num_requeues("default/db"), 0);
    q.forget("default/web");
    assert_eq!(q.num_requeues("default/web"), 0);
}

#[tokio::test]
async fn a_dropped_get_loses_nothing() {
    let q = WorkQueue::<u32>::new();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { get(&q).await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.add(1);
    workers[0].abort();
    let [first, second]: [_; 2] = workers.try_into().unwrap();
    assert_eq!(second.await.unwrap(), Some(1));
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(q.processing(), 1);
}

#[tokio::test]
async fn done_accepts_a_borrowed_key() {
    let q = WorkQueue::<String>::new();
    q.add("default/web".to_string());
    let key = get(&q).await.unwrap();
    q.done(key.as_str());
    assert_eq!(q.processing(), 0);
}

#[tokio::test]
async fn work_item_drop_marks_the_item_done() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    let item = within("an item from the queue", q.next()).await.unwrap();
    q.add("a"); // added while processing: queued again on done
    assert_eq!((q.processing(), q.len()), (1, 0));
    drop(item);
    assert_eq!((q.processing(), q.len()), (0, 1));
}

#[tokio::test]
async fn a_panicking_worker_does_not_wedge_its_key() {
    let q = WorkQueue::<&str>::new();
    q.add("a");
    let worker = tokio::spawn({
        let q = q.clone();
        async move {
            let item = within("an item from the queue", q.next()).await.unwrap();
            if *item == "a" {
                panic!("reconcile bug");
            }
        }
    });
    assert!(worker.await.unwrap_err().is_panic());
    assert_eq!(q.processing(), 0);
    q.add("a");
    assert_eq!(get(&q).await, Some("a"));
}

#[derive(Debug)]
struct Failing;

impl std::fmt::Display for Failing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failing")
    }
}

#[tokio::test(start_paused = true)]
async fn run_workers_rate_limits_failures_and_forgets_on_success() {
    let limiter = Arc::new(ItemFastSlowRateLimiter::new(
        Duration::from_millis(5),
        Duration::from_secs(1),
        10,
    ));
    let q = WorkQueue::<u32>::with_config(WorkQueueConfig::default().rate_limiter(limiter));
    let attempts = Arc::new(Mutex::new(Vec::new()));
    q.add(1);
    let workers = q.run_workers(3, {
        let (q, attempts) = (q.clone(), attempts.clone());
        move |item: u32| {
            let (q, attempts) = (q.clone(), attempts.clone());
            async move {
                let mut seen = attempts.lock();
                seen.push((item, q.num_requeues(&item)));
                if seen.len() < 3 {
                    return Err(Failing);
                }
                q.shut_down();
                Ok(())
            }
        }
    });
    within("the workers to return", workers).await;
    // Two failures retried through the limiter (requeue count 1, 2), then success forgets it.
    assert_eq!(*attempts.lock(), [(1, 0), (1, 1), (1, 2)]);
    assert_eq!(q.num_requeues(&1), 0);
    assert_eq!(q.processing(), 0);
}

#[tokio::test(start_paused = true)]
async fn run_workers_survives_a_panicking_reconcile_and_retries_the_item() {
    let q = WorkQueue::<u32>::new();
    let calls = Arc::new(Mutex::new(0));
    q.add(1);
    let workers = q.run_workers(1, {
        let (q, calls) = (q.clone(), calls.clone());
        move |_item: u32| {
            let (q, calls) = (q.clone(), calls.clone());
            async move {
                let first = {
                    let mut calls = calls.lock();
                    *calls += 1;
                    *calls == 1
                };
                if first {
                    panic!("reconcile bug");
                }
                q.shut_down();
                Ok::<(), Failing>(())
            }
        }
    });
    within("the workers to return", workers).await;
    assert_eq!(*calls.lock(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_workers_returns_once_the_queue_is_drained_after_shut_down() {
    let q = WorkQueue::<u32>::new();
    for i in 0..100 {
        q.add(i);
    }
    let done = Arc::new(Mutex::new(Vec::new()));
    let workers = tokio::spawn(q.run_workers(4, {
        let done = done.clone();
        move |item: u32| {
            let done = done.clone();
            async move {
                tokio::task::yield_now().await;
                done.lock().push(item);
                Ok::<(), Failing>(())
            }
        }
    }));
    within("the drain", q.shut_down_with_drain()).await;
    within("the workers to return", workers).await.unwrap();
    let mut done = done.lock().clone();
    done.sort_unstable();
    assert_eq!(done, (0..100).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_workers_until_drains_the_queue_when_shutdown_completes() {
    let q = WorkQueue::<u32>::new();
    let done = Arc::new(Mutex::new(Vec::new()));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let workers = tokio::spawn(q.run_workers_until(
        async {
            let _ = stop_rx.await;
        },
        3,
        {
            let done = done.clone();
            move |item: u32| {
                let done = done.clone();
                async move {
                    done.lock().push(item);
                    Ok::<(), Failing>(())
                }
            }
        },
    ));
    for i in 0..50 {
        q.add(i);
    }
    stop_tx.send(()).unwrap();
    within("the workers to return", workers).await.unwrap();
    assert!(q.is_shutting_down());
    assert_eq!((q.len(), q.processing()), (0, 0));
    let mut done = done.lock().clone();
    done.sort_unstable();
    assert_eq!(
        done,
        (0..50).collect::<Vec<_>>(),
        "everything queued before the stop was reconciled"
    );
}
