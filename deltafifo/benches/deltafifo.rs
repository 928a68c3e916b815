//! Benchmarks of the queues: add+pop throughput, replace against known objects, batched pops,
//! and `list_keys`.
//!
//! `cargo bench -p kcache-deltafifo`; medians are in the crate's README.md.

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::convert::Infallible;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_deltafifo::{
    DeltaFifo, DeltaFifoOptions, Fifo, ProcessError, Queue, RealFifo, RealFifoOptions,
};
use kcache_store::{KeyFunc, KnownObjects, ObjectKey, Store};

/// 100 realistic fixture pods shared by every object, so that 100k distinct keys cost 100k small
/// allocations rather than 100k full pods.
fn fixture_pods() -> Vec<Arc<Pod>> {
    kcache_store::testing::pods(100, 10)
}

/// A queued object: a key and a shared fixture pod.
#[derive(Debug)]
struct Obj {
    key: String,
    _pod: Arc<Pod>,
}

fn objs(n: usize, pods: &[Arc<Pod>]) -> Vec<Arc<Obj>> {
    (0..n)
        .map(|i| {
            Arc::new(Obj {
                key: format!("ns-{}/obj-{i:06}", i % 10),
                _pod: pods[i % pods.len()].clone(),
            })
        })
        .collect()
}

/// The downstream objects of a replace: a plain map (an indexer holds the same keys).
#[derive(Debug)]
struct Known(std::collections::HashMap<ObjectKey, Arc<Obj>>);

impl KnownObjects<Obj> for Known {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.keys().cloned().collect()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<Obj>> {
        self.0.get(key).cloned()
    }
}

fn key_func() -> KeyFunc<Obj> {
    Arc::new(|o: &Obj| Ok(o.key.clone()))
}

fn delta_fifo(known: Option<Arc<dyn KnownObjects<Obj>>>) -> DeltaFifo<Obj> {
    let options = DeltaFifoOptions::with_key_func(key_func());
    DeltaFifo::new(match known {
        Some(known) => options.known_objects(known),
        None => options,
    })
}

fn real_fifo() -> RealFifo<Obj> {
    RealFifo::new(RealFifoOptions::with_key_func(key_func()))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

async fn drain<Q: Queue<Obj>>(q: &Q, n: usize)
where
    Q::Item: NonEmpty,
{
    for _ in 0..n {
        q.pop(|item, _| Ok::<_, ProcessError<Infallible>>(black_box(item).is_some_and_nonempty()))
            .await
            .unwrap();
    }
}

/// Lets `drain` accept any queue item.
trait NonEmpty {
    fn is_some_and_nonempty(&self) -> bool;
}
impl NonEmpty for Arc<Obj> {
    fn is_some_and_nonempty(&self) -> bool {
        !self.key.is_empty()
    }
}
impl NonEmpty for kcache_deltafifo::Deltas<Obj> {
    fn is_some_and_nonempty(&self) -> bool {
        !self.is_empty()
    }
}

async fn churn<Q: Queue<Obj>>(q: &Q, obj: &Arc<Obj>, n: usize)
where
    Q::Item: NonEmpty,
{
    for _ in 0..n {
        q.update(obj.clone()).unwrap();
        q.pop(|item, _| Ok::<_, ProcessError<Infallible>>(black_box(item).is_some_and_nonempty()))
            .await
            .unwrap();
    }
}

async fn fill_and_drain<Q: Queue<Obj>>(q: &Q, objs: &[Arc<Obj>])
where
    Q::Item: NonEmpty,
{
    for o in objs {
        q.add(o.clone()).unwrap();
    }
    drain(q, objs.len()).await;
}

fn add_pop(c: &mut Criterion) {
    let pods = fixture_pods();
    let rt = rt();
    let one = objs(1, &pods).remove(0);
    let distinct = objs(100_000, &pods);
    let mut g = c.benchmark_group("add_pop");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("fifo/single_key_churn_10k", |b| {
        b.iter(|| rt.block_on(churn(&Fifo::with_key_func(key_func()), &one, 10_000)))
    });
    g.bench_function("delta_fifo/single_key_churn_10k", |b| {
        b.iter(|| rt.block_on(churn(&delta_fifo(None), &one, 10_000)))
    });
    g.bench_function("real_fifo/single_key_churn_10k", |b| {
        b.iter(|| rt.block_on(churn(&real_fifo(), &one, 10_000)))
    });
    g.bench_function("fifo/distinct_keys_100k", |b| {
        b.iter(|| rt.block_on(fill_and_drain(&Fifo::with_key_func(key_func()), &distinct)))
    });
    g.bench_function("delta_fifo/distinct_keys_100k", |b| {
        b.iter(|| rt.block_on(fill_and_drain(&delta_fifo(None), &distinct)))
    });
    g.bench_function("real_fifo/distinct_keys_100k", |b| {
        b.iter(|| rt.block_on(fill_and_drain(&real_fifo(), &distinct)))
    });
    g.finish();
}

fn replace(c: &mut Criterion) {
    let pods = fixture_pods();
    let all = objs(100_000, &pods);
    let indexer = Arc::new(Known(
        all.iter()
            .map(|o| (ObjectKey::from(o.key.as_str()), o.clone()))
            .collect(),
    ));
    // 1% of the known objects are gone from the relist.
    let listed: Vec<Arc<Obj>> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 100 != 0)
        .map(|(_, o)| o.clone())
        .collect();
    let known: Arc<dyn KnownObjects<Obj>> = indexer;
    let mut g = c.benchmark_group("replace");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("delta_fifo/100k_against_100k_known_1pct_deleted", |b| {
        b.iter_batched(
            || (delta_fifo(Some(known.clone())), listed.clone()),
            |(q, items)| {
                q.replace(items, "2").unwrap();
                q
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("real_fifo/100k_against_100k_known_1pct_deleted", |b| {
        b.iter_batched(
            || {
                let q = RealFifo::new(
                    RealFifoOptions::with_key_func(key_func()).known_objects(known.clone()),
                );
                (q, listed.clone())
            },
            |(q, items)| {
                q.replace(items, "2").unwrap();
                q
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn pop_batch(c: &mut Criterion) {
    let pods = fixture_pods();
    let rt = rt();
    let distinct = objs(100_000, &pods);
    let filled = || {
        let q = real_fifo();
        for o in &distinct {
            q.add(o.clone()).unwrap();
        }
        q
    };
    let mut g = c.benchmark_group("real_fifo_drain_100k");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("pop", |b| {
        b.iter_batched(
            filled,
            |q| rt.block_on(drain(&q, distinct.len())),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("pop_batch", |b| {
        b.iter_batched(
            filled,
            |q| {
                rt.block_on(async {
                    let mut n = 0;
                    while n < distinct.len() {
                        n += q
                            .pop_batch(|d, _| Ok::<_, ProcessError<Infallible>>(black_box(d).len()))
                            .await
                            .unwrap();
                    }
                })
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// client-go's BenchmarkDeltaFIFOListKeys: `list_keys` of a queue holding 20,000 keys.
fn list_keys(c: &mut Criterion) {
    let pods = fixture_pods();
    let q = delta_fifo(None);
    for o in objs(20_000, &pods) {
        q.add(o).unwrap();
    }
    let mut g = c.benchmark_group("delta_fifo_list_keys");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    g.bench_function("20k", |b| b.iter(|| black_box(q.list_keys())));
    g.finish();
}

criterion_group!(benches, add_pop, replace, pop_batch, list_keys);
criterion_main!(benches);
