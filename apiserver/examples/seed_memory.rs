//! Seeds N realistic fixture pods (`kcache_store::testing::pod_json`, ≈9 KB of JSON each) into a
//! [`TestServer`] (storage and watch cache) and prints the process's resident memory (VmRSS, Linux)
//! before and after.
//!
//! ```text
//! cargo run --release -p kcache-apiserver --example seed_memory -- 100000
//! ```

use std::time::{Duration, Instant};

use kcache_apiserver::{Object, TestServer};
use kcache_store::testing;

/// VmRSS in MiB from /proc/self/status (0 where unavailable).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10_000);
    // The fixture pods name ReplicaSets that do not exist: no garbage collection.
    let builder = kcache_apiserver::ApiServer::builder().garbage_collection(false);
    let server = TestServer::start_with(builder).await?;
    let before = rss_mib();
    let (mut generated, mut built, mut seeded) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut encoded = 0usize;
    for i in 0..n {
        let start = Instant::now();
        let value = testing::pod_json(i, 100, 0);
        let t1 = Instant::now();
        let obj = Object::from_value(value)?;
        let t2 = Instant::now();
        let created = server.create(obj).await?;
        encoded += created.raw().len();
        generated += t1 - start;
        built += t2 - t1;
        seeded += t2.elapsed();
    }
    let start = Instant::now();
    server.wait_caches_synced().await?;
    seeded += start.elapsed();
    let after = rss_mib();
    let delta = after - before;
    println!(
        "pods={n}: JSON generated in {generated:.1?}, objects built in {built:.1?}, \
         stored and cached in {seeded:.1?}; encoded {:.1} MiB ({:.0} B/pod); \
         VmRSS before {before:.0} MiB, after {after:.0} MiB, delta {delta:.0} MiB ({:.0} B/pod)",
        encoded as f64 / 1048576.0,
        encoded as f64 / n as f64,
        delta * 1048576.0 / n as f64,
    );
    drop(server);
    Ok(())
}
