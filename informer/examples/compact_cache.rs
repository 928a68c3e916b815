//! The memory and read latency of an informer's cache, default or compact, at N realistic pods
//! (`kcache_store::testing`, ≈8.7 KB of JSON each), in one process: the lister-watcher makes
//! each list page of 500 pods by decoding their JSON, as a list from a server does, so the
//! transient memory of the initial list is the real one.
//!
//! ```sh
//! cargo run --release -p kcache-informer --features compact --example compact_cache -- compact 50000
//! cargo run --release -p kcache-informer --features compact --example compact_cache -- default 50000
//! ```
//!
//! Prints the resident memory once synced (and its peak), the lister `get` latency (p50, p99
//! over 20,000 gets of random keys) and the time of a full `list()`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream;
use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{SharedIndexInformer, wait_for_cache_sync};
use kcache_reflector::{ListPage, ListWatch, WatchStream};
use kcache_store::testing::{namespace_of, pod_json};
use kcache_store::{IndexFunc, meta_namespace_key};
use tokio_util::sync::CancellationToken;

const PAGE: usize = 500;
const NAMESPACES: usize = 100;
const GETS: usize = 20_000;

/// `VmRSS` and `VmHWM` of this process, in MiB.
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Lists `pods` pods in pages of [`PAGE`], each decoded from its JSON; the watch stays open.
fn lister_watcher(pods: usize) -> ListWatch<Pod> {
    ListWatch::new(
        move |options| async move {
            let start: usize = options
                .continue_token
                .as_deref()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let end = (start + PAGE).min(pods);
            let items = (start..end)
                .map(|i| {
                    let json = serde_json::to_vec(&pod_json(i, NAMESPACES, 1)).unwrap_or_default();
                    serde_json::from_slice::<Pod>(&json).map(Arc::new)
                })
                .collect::<Result<Vec<_>, _>>()
                .unwrap_or_default();
            Ok(ListPage {
                items,
                resource_version: "1".into(),
                continue_token: (end < pods).then(|| end.to_string()),
                remaining_item_count: None,
            })
        },
        |_| async { Ok(Box::pin(stream::pending()) as WatchStream<Pod>) },
    )
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let compact = args.next().as_deref() == Some("compact");
    let pods: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(50_000);
    let by_node: IndexFunc<Pod> =
        Arc::new(|pod: &Pod| Ok(pod.spec.as_ref().and_then(|s| s.node_name.clone()).into()));
    let mut builder = SharedIndexInformer::builder(lister_watcher(pods)).index("node", by_node);
    if compact {
        builder = builder.compact_cache();
    }
    let informer = builder.build();
    let shutdown = CancellationToken::new();
    let start = Instant::now();
    let task = tokio::spawn(informer.run(shutdown.clone()));
    wait_for_cache_sync(&shutdown, &[&informer]).await;
    let synced = start.elapsed();
    let (rss, peak) = memory();
    println!(
        "cache={} pods={} synced in {:.2} s; RSS after sync {:.0} MiB (peak {:.0} MiB)",
        if compact { "compact" } else { "default" },
        informer.indexer().len(),
        synced.as_secs_f64(),
        rss,
        peak
    );

    let lister = informer.lister();
    let keys: Vec<String> = (0..GETS)
        .map(|n| {
            let i = n.wrapping_mul(7919) % pods;
            let pod = kcache_store::testing::pod(i, NAMESPACES);
            meta_namespace_key(&pod).unwrap_or_else(|_| namespace_of(i, NAMESPACES))
        })
        .collect();
    let mut latencies: Vec<Duration> = keys
        .iter()
        .map(|key| {
            let t = Instant::now();
            let pod = lister.get_by_key(key);
            let elapsed = t.elapsed();
            assert!(pod.is_some(), "{key} is cached");
            elapsed
        })
        .collect();
    latencies.sort_unstable();
    println!(
        "lister get: p50 {:?}, p99 {:?}, max {:?} ({GETS} gets)",
        quantile(&latencies, 0.5),
        quantile(&latencies, 0.99),
        quantile(&latencies, 1.0)
    );
    for run in 1..=3 {
        let t = Instant::now();
        let all = lister.list(&kcache_store::parse_label_selector("")?);
        let elapsed = t.elapsed();
        println!(
            "full list() run {run}: {} pods in {:.1} ms",
            all.len(),
            elapsed.as_secs_f64() * 1e3
        );
    }
    let (rss, _) = memory();
    println!("RSS after the reads {rss:.0} MiB");
    shutdown.cancel();
    task.await??;
    Ok(())
}
