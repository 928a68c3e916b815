//! kcache-store benches, each side by side with kube-runtime's reflector `Store`/`Writer` where
//! the operation exists there, so ratios are read off one run.
//!
//! `cargo bench -p kcache-store` (set `KCACHE_BENCH_LARGE=1` to add the 100k-object sizes).

// criterion_group! generates undocumented public items; a bench binary has no public API.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_store::{
    IndexFunc, IndexValues, Indexer, Indexers, NAMESPACE_INDEX, Store, namespace_index_func,
    owner_uid_index_func, testing,
};
use kube_runtime::reflector::{self, ObjectRef};
use kube_runtime::watcher::Event;

/// Namespaces the fixture pods are spread over: each holds 1% of them.
const NAMESPACES: usize = 100;

/// The largest size run against kube-runtime. Its writer deep-copies every object (≈72 KB in
/// memory per fixture pod), so at 100k the fixture, its events and its store would need three
/// copies (≈22 GB), which does not fit this 24 GB machine; kcache shares the one copy.
const KUBE_RUNTIME_MAX: usize = 10_000;

fn sizes() -> Vec<usize> {
    if std::env::var_os("KCACHE_BENCH_LARGE").is_some() {
        vec![10_000, 100_000]
    } else {
        vec![10_000]
    }
}

fn node_index() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod| {
        Ok(p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect::<IndexValues>())
    })
}

/// An indexer with the first `n` of: namespace, node, owner uid.
fn indexer(n: usize) -> Indexer<Pod> {
    let all: [(&str, IndexFunc<Pod>); 3] = [
        (NAMESPACE_INDEX, namespace_index_func()),
        ("node", node_index()),
        ("owner", owner_uid_index_func()),
    ];
    Indexer::new(
        all.into_iter()
            .take(n)
            .map(|(name, f)| (name.to_owned(), f))
            .collect::<Indexers<Pod>>(),
    )
}

fn filled(n_indexes: usize, pods: &[Arc<Pod>]) -> Indexer<Pod> {
    let s = indexer(n_indexes);
    s.replace(pods.to_vec(), "1").unwrap();
    s
}

fn kube_events(pods: &[Arc<Pod>], make: fn(Pod) -> Event<Pod>) -> Vec<Event<Pod>> {
    pods.iter().map(|p| make((**p).clone())).collect()
}

fn kube_filled(events: &[Event<Pod>]) -> (reflector::Store<Pod>, reflector::store::Writer<Pod>) {
    let (reader, mut writer) = reflector::store::<Pod>();
    for e in events {
        writer.apply_watcher_event(e);
    }
    (reader, writer)
}

fn writes(c: &mut Criterion) {
    for n in sizes() {
        let pods = testing::pods(n, NAMESPACES);
        let kube = (n <= KUBE_RUNTIME_MAX).then(|| {
            (
                kube_events(&pods, Event::Apply),
                kube_events(&pods, Event::Delete),
            )
        });
        for op in ["add", "update", "delete"] {
            let mut g = c.benchmark_group(format!("{op}/{n}"));
            g.throughput(Throughput::Elements(n as u64)).sample_size(10);
            for idx in 0..=3 {
                g.bench_function(BenchmarkId::new("kcache", format!("{idx}-indexes")), |b| {
                    b.iter_batched(
                        || {
                            if op == "add" {
                                indexer(idx)
                            } else {
                                filled(idx, &pods)
                            }
                        },
                        |s| {
                            for p in &pods {
                                match op {
                                    "add" => s.add(Arc::clone(p)).unwrap(),
                                    "update" => s.update(Arc::clone(p)).unwrap(),
                                    _ => s.delete(Arc::clone(p)).unwrap(),
                                }
                            }
                            s
                        },
                        BatchSize::PerIteration,
                    )
                });
            }
            if let Some((applies, deletes)) = &kube {
                g.bench_function(BenchmarkId::new("kube-runtime", "0-indexes"), |b| {
                    b.iter_batched(
                        || {
                            if op == "add" {
                                reflector::store::<Pod>()
                            } else {
                                kube_filled(applies)
                            }
                        },
                        |(reader, mut writer)| {
                            for e in if op == "delete" { deletes } else { applies } {
                                writer.apply_watcher_event(e);
                            }
                            (reader, writer)
                        },
                        BatchSize::PerIteration,
                    )
                });
            }
            g.finish();
        }
    }
}

fn reads(c: &mut Criterion) {
    for n in sizes() {
        let pods = testing::pods(n, NAMESPACES);
        let ours = filled(1, &pods);
        let theirs =
            (n <= KUBE_RUNTIME_MAX).then(|| kube_filled(&kube_events(&pods, Event::Apply)).0);
        let ns = testing::namespace_of(7, NAMESPACES);
        let name = pods[7].metadata.name.clone().unwrap_or_default();

        let mut g = c.benchmark_group(format!("by-namespace/{n}"));
        g.bench_function("kcache by_index", |b| {
            b.iter(|| black_box(ours.by_index(NAMESPACE_INDEX, &ns).unwrap()))
        });
        if let Some(theirs) = &theirs {
            g.bench_function("kube-runtime state_filter", |b| {
                b.iter(|| {
                    black_box(
                        theirs
                            .state_filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str())),
                    )
                })
            });
        }
        g.finish();

        let mut g = c.benchmark_group(format!("list/{n}"));
        g.bench_function("kcache", |b| b.iter(|| black_box(ours.list())));
        if let Some(theirs) = &theirs {
            g.bench_function("kube-runtime", |b| b.iter(|| black_box(theirs.state())));
        }
        g.finish();

        let key = format!("{ns}/{name}");
        let obj_ref = ObjectRef::<Pod>::new(&name).within(&ns);
        let mut g = c.benchmark_group(format!("get/{n}"));
        g.bench_function("kcache", |b| b.iter(|| black_box(ours.get_by_key(&key))));
        if let Some(theirs) = &theirs {
            g.bench_function("kube-runtime", |b| {
                b.iter(|| black_box(theirs.get(&obj_ref)))
            });
        }
        g.finish();
    }
}

fn replace(c: &mut Criterion) {
    for n in sizes() {
        let pods = testing::pods(n, NAMESPACES);
        let mut g = c.benchmark_group(format!("replace/{n}"));
        g.throughput(Throughput::Elements(n as u64)).sample_size(10);
        for idx in [0, 1] {
            g.bench_function(BenchmarkId::new("kcache", format!("{idx}-indexes")), |b| {
                b.iter_batched(
                    || (filled(idx, &pods), pods.clone()),
                    |(s, items)| {
                        s.replace(items, "2").unwrap();
                        s
                    },
                    BatchSize::PerIteration,
                )
            });
        }
        if n <= KUBE_RUNTIME_MAX {
            let init: Vec<Event<Pod>> = std::iter::once(Event::Init)
                .chain(kube_events(&pods, Event::InitApply))
                .chain(std::iter::once(Event::InitDone))
                .collect();
            g.bench_function(BenchmarkId::new("kube-runtime", "0-indexes"), |b| {
                b.iter_batched(
                    || kube_filled(&init),
                    |(reader, mut writer)| {
                        for e in &init {
                            writer.apply_watcher_event(e);
                        }
                        (reader, writer)
                    },
                    BatchSize::PerIteration,
                )
            });
        }
        g.finish();
    }
}

/// Writes while two threads read continuously (10k updates per iteration).
fn concurrent(c: &mut Criterion) {
    let n = 10_000;
    let pods = testing::pods(n, NAMESPACES);
    let mut g = c.benchmark_group("updates-with-2-readers/10000");
    g.throughput(Throughput::Elements(n as u64)).sample_size(10);

    let ours = Arc::new(filled(1, &pods));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (s, stop) = (Arc::clone(&ours), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    black_box(
                        s.by_index(NAMESPACE_INDEX, &testing::namespace_of(r, NAMESPACES))
                            .ok(),
                    );
                }
            })
        })
        .collect();
    g.bench_function("kcache", |b| {
        b.iter(|| {
            for p in &pods {
                ours.update(Arc::clone(p)).unwrap();
            }
        })
    });
    stop.store(true, Ordering::Relaxed);
    readers.into_iter().for_each(|t| t.join().unwrap());

    let applies = kube_events(&pods, Event::Apply);
    let (theirs, mut writer) = kube_filled(&applies);
    stop.store(false, Ordering::Relaxed);
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (s, stop) = (theirs.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let ns = testing::namespace_of(r, NAMESPACES);
                while !stop.load(Ordering::Relaxed) {
                    black_box(
                        s.state_filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str())),
                    );
                }
            })
        })
        .collect();
    g.bench_function("kube-runtime", |b| {
        b.iter(|| {
            for e in &applies {
                writer.apply_watcher_event(e);
            }
        })
    });
    stop.store(true, Ordering::Relaxed);
    readers.into_iter().for_each(|t| t.join().unwrap());
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = writes, reads, replace, concurrent
}
criterion_main!(benches);
