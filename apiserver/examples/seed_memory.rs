//! Seeds N realistic fixture pods (`kcache_store::testing::pod_json`, ≈9 KB of JSON each) into a
//! [`TestServer`] (storage and watch cache) and prints the process's resident memory (VmRSS, Linux)
//! before and after.
//!
//! ```text
//! cargo run --release -p kcache-apiserver --example seed_memory -- 100000
//! ```

use std::time::Instant;

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
    let server = TestServer::start().await?;
    let before = rss_mib();
    let start = Instant::now();
    let mut encoded = 0usize;
    let mut last = 0;
    for i in 0..n {
        let obj = Object::from_value(testing::pod_json(i, 100, 0))?;
        let created = server.create(obj).await?;
        encoded += created.raw().len();
        last = i;
    }
    server.wait_caches_synced().await?;
    let after = rss_mib();
    let delta = after - before;
    println!(
        "pods={n} (last index {last}) seeded in {:.1?}; encoded {:.1} MiB ({:.0} B/pod); \
         VmRSS before {before:.0} MiB, after {after:.0} MiB, delta {delta:.0} MiB ({:.0} B/pod)",
        start.elapsed(),
        encoded as f64 / 1048576.0,
        encoded as f64 / n as f64,
        delta * 1048576.0 / n as f64,
    );
    drop(server);
    Ok(())
}
