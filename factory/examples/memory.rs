//! The memory an informer of pods holds once synced, and its peak during a relist: kcache's
//! factory informer or kube-runtime's `watcher` + `reflector`, one per process so that neither
//! sees the other's freed memory.
//!
//! ```text
//! cargo run --release -p kcache-factory --example memory -- kcache 10000
//! cargo run --release -p kcache-factory --example memory -- kube-runtime 10000
//! ```
//!
//! The in-process API server is seeded first; figures are the process's resident memory (and its
//! high-water mark) above what it was before the client started, in MiB.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_apiserver::{Object, TestServer};
use kcache_factory::SharedInformerFactory;
use kcache_store::testing;
use kube_client::Api;
use kube_runtime::{reflector, watcher};

/// `VmRSS` and `VmHWM` of this process, in KiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Resets the high-water mark to the current resident size.
fn reset_peak() {
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("cannot reset the peak ({e}): the relist peak is the process's lifetime peak");
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "kcache".into());
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let server = TestServer::start().await?;
    let objects = (0..n).map(|i| Object::from_value(testing::pod_json(i, 100, 0)));
    server.seed(objects.collect::<Result<Vec<_>, _>>()?).await?;
    server.wait_caches_synced().await?;
    let client = server.client()?;
    let (base, _) = memory();

    // Sync, then wait for a relist; `len` reads the client's cache.
    let len: Box<dyn Fn() -> usize> = match which.as_str() {
        "kcache" => {
            let factory = SharedInformerFactory::new(client);
            let informer = factory.informer::<Pod>();
            factory.start()?;
            factory.wait_for_cache_sync().await;
            Box::new(move || informer.indexer().len())
        }
        "kube-runtime" => {
            let (reader, writer) = reflector::store::<Pod>();
            let stream = reflector(writer, watcher(Api::<Pod>::all(client), Default::default()));
            tokio::spawn(stream.for_each(|_| async {}));
            reader.wait_until_ready().await?;
            Box::new(move || reader.len())
        }
        other => return Err(format!("unknown client {other:?}: kcache or kube-runtime").into()),
    };
    assert_eq!(len(), n);
    let (synced, _) = memory();
    reset_peak();

    // Make the client relist: its watch ends, history moves on and is compacted while it cannot
    // reconnect, so resuming from its resource version answers 410 Expired.
    server.fail_next_requests(u32::MAX, 500);
    server.end_all_watches();
    server
        .seed([Object::from_value(testing::pod_json(n, 100, 0))?])
        .await?;
    server.wait_caches_synced().await?;
    server.compact_now().await?;
    server.fail_next_requests(0, 500);
    while len() != n + 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (after, peak) = memory();
    println!(
        "{which} {n} pods: synced {:.0} MiB, relist peak {:.0} MiB ({:.2}x), after relist {:.0} MiB",
        mib(synced - base),
        mib(peak - base),
        (peak - base) as f64 / (synced - base) as f64,
        mib(after - base),
    );
    Ok(())
}
