//! Benchmarks of the work queue: add+get+done throughput with many workers, and delayed adds.
//!
//! `cargo bench -p kcache-workqueue`; medians are in the crate's README.md.

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kcache_workqueue::WorkQueue;

fn work_queue(c: &mut Criterion) {
    const ITEMS: u32 = 10_000;
    let mut g = c.benchmark_group("work_queue_add_get_done_10k");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for workers in [1usize, 2, 8] {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        g.bench_with_input(
            BenchmarkId::from_parameter(workers),
            &workers,
            |b, &workers| {
                b.iter(|| {
                    rt.block_on(async {
                        let q = WorkQueue::<u32>::new();
                        let tasks: Vec<_> = (0..workers)
                            .map(|_| {
                                let q = q.clone();
                                tokio::spawn(async move {
                                    while let Some(item) = q.get().await {
                                        q.done(black_box(&item));
                                    }
                                })
                            })
                            .collect();
                        for i in 0..ITEMS {
                            q.add(i);
                        }
                        q.shut_down_with_drain().await;
                        for t in tasks {
                            t.await.unwrap();
                        }
                    })
                })
            },
        );
    }
    g.finish();
}

fn add_after(c: &mut Criterion) {
    const ITEMS: u32 = 10_000;
    // Deterministic pseudo-random delays in [0, 10 s).
    let delays: Vec<Duration> = (0..ITEMS)
        .scan(0x2545_F491_4F6C_DD1Du64, |s, _| {
            *s ^= *s << 13;
            *s ^= *s >> 7;
            *s ^= *s << 17;
            Some(Duration::from_micros(*s % 10_000_000))
        })
        .collect();
    let mut g = c.benchmark_group("work_queue_add_after");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("10k_random_delays_then_drain", |b| {
        b.iter(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            rt.block_on(async {
                let q = WorkQueue::<u32>::new();
                for (i, d) in delays.iter().enumerate() {
                    q.add_after(i as u32, *d);
                }
                for _ in 0..ITEMS {
                    let item = q.get().await.unwrap();
                    q.done(&item);
                }
            })
        })
    });
    g.finish();
}

criterion_group!(benches, work_queue, add_after);
criterion_main!(benches);
