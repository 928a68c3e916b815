//! Many producers and consumers on a multi-threaded runtime: nothing lost, nothing duplicated.

use std::collections::HashSet;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::{
    DeltaFifo, DeltaFifoOptions, PopError, ProcessError, Queue, RealFifo, RealFifoOptions,
};
use kcache_testkit::within;
use parking_lot::Mutex;

const PRODUCERS: usize = 4;
const PER_PRODUCER: usize = 200;

fn fixtures() -> Vec<Vec<Arc<Pod>>> {
    let all = kcache_store::testing::pods(PRODUCERS * PER_PRODUCER, 10);
    all.chunks(PER_PRODUCER).map(<[_]>::to_vec).collect()
}

fn expected_keys() -> Vec<String> {
    let mut keys: Vec<String> = fixtures()
        .into_iter()
        .flatten()
        .map(|p| kcache_store::meta_namespace_key(&*p).unwrap())
        .collect();
    keys.sort();
    keys
}

/// Runs `consumers` tasks calling `consume` until the queue is closed, while [`PRODUCERS`] tasks
/// add every fixture pod; returns the sorted keys the consumers saw.
async fn produce_and_consume<Q, C, Fut>(q: Arc<Q>, consumers: usize, consume: C) -> Vec<String>
where
    Q: Queue<Pod> + 'static,
    C: Fn(Arc<Q>) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = Result<Vec<String>, PopError<Infallible>>> + Send,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let consumers: Vec<_> = (0..consumers)
        .map(|_| {
            let (q, seen, consume) = (q.clone(), seen.clone(), consume.clone());
            tokio::spawn(async move {
                loop {
                    match consume(q.clone()).await {
                        Ok(k) => seen.lock().extend(k),
                        Err(PopError::Closed) => break,
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    let producers: Vec<_> = fixtures()
        .into_iter()
        .map(|pods| {
            let q = q.clone();
            tokio::spawn(async move {
                for p in pods {
                    q.add(p).unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for p in producers {
        within("a producer to add its pods", p).await.unwrap();
    }
    q.close();
    for c in consumers {
        within("a consumer to see the queue closed", c)
            .await
            .unwrap();
    }
    let mut seen = seen.lock().clone();
    seen.sort();
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delta_fifo_many_producers_and_consumers_lose_and_duplicate_nothing() {
    let q = Arc::new(DeltaFifo::<Pod>::new(DeltaFifoOptions::default()));
    let seen = produce_and_consume(q, 4, |q: Arc<DeltaFifo<Pod>>| async move {
        q.pop(|d, _| {
            assert_eq!(d.len(), 1);
            Ok::<_, ProcessError<Infallible>>(vec![q.key_of_deltas(d).unwrap()])
        })
        .await
    })
    .await;
    assert_eq!(seen, expected_keys());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn real_fifo_many_producers_and_batch_consumers_lose_and_duplicate_nothing() {
    let q = Arc::new(RealFifo::<Pod>::new(
        RealFifoOptions::default().batch_size(16),
    ));
    let seen = produce_and_consume(q, 3, |q: Arc<RealFifo<Pod>>| async move {
        q.pop_batch(|deltas, _| {
            let keys: Vec<String> = deltas
                .iter()
                .map(|d| q.key_of(d.object().unwrap()).unwrap())
                .collect();
            let unique: HashSet<&String> = keys.iter().collect();
            assert_eq!(unique.len(), keys.len());
            Ok::<_, ProcessError<Infallible>>(keys)
        })
        .await
    })
    .await;
    assert_eq!(seen, expected_keys());
}
