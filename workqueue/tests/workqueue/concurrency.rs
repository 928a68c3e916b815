//! Many producers and workers on a multi-threaded runtime: nothing lost, nothing shared.

use std::collections::HashSet;
use std::sync::Arc;

use kcache_testkit::within;
use kcache_workqueue::WorkQueue;
use parking_lot::Mutex;

const PRODUCERS: usize = 4;
const PER_PRODUCER: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn work_queue_many_producers_and_workers_never_share_an_item_and_lose_nothing() {
    let q = WorkQueue::<u32>::new();
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let processed = Arc::new(Mutex::new(HashSet::new()));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (q, in_flight, processed) = (q.clone(), in_flight.clone(), processed.clone());
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    assert!(
                        in_flight.lock().insert(item),
                        "{item} handed to two workers"
                    );
                    tokio::task::yield_now().await;
                    processed.lock().insert(item);
                    in_flight.lock().remove(&item);
                    q.done(&item);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS as u32)
        .map(|p| {
            let q = q.clone();
            tokio::spawn(async move {
                // Overlapping ranges: many adds collapse or land while the item is processed.
                for i in 0..PER_PRODUCER as u32 {
                    q.add(p * 50 + i);
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for p in producers {
        within("a producer to add its items", p).await.unwrap();
    }
    within("the drain", q.shut_down_with_drain()).await;
    for w in workers {
        within("a worker to see the queue shut down", w)
            .await
            .unwrap();
    }
    let expected: HashSet<u32> = (0..PRODUCERS as u32)
        .flat_map(|p| (0..PER_PRODUCER as u32).map(move |i| p * 50 + i))
        .collect();
    assert_eq!(*processed.lock(), expected);
    assert!(q.is_empty());
    assert_eq!(q.processing(), 0);
}
