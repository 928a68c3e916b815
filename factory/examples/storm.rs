//! A 30 s storm of 429s from a server shedding load, and what one informer sends meanwhile:
//! requests per second, second by second, against client-go's rules (the reflector backs off
//! 800 ms doubling to 30 s, jittered, and waits at least the server's `Retry-After`, 1 s here).
//!
//! ```sh
//! cargo run -p kcache-factory --example storm             # backoff and Retry-After only
//! cargo run -p kcache-factory --example storm -- 5 10     # plus a client-side limit: 5 qps, burst 10
//! ```
//!
//! kube-client's own retry of 429/503 is turned off (see `main`). It runs against the in-process API server (its fault injection); a figure is only worth
//! quoting when measured on an otherwise idle machine.

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kcache_apiserver::TestServer;
use kcache_factory::{ReflectorConfig, ReflectorMetrics, SharedInformerFactory};

/// Counts the requests the reflector sends: list pages (and failed lists) and watches.
#[derive(Debug, Default)]
struct Requests(AtomicU64);

impl ReflectorMetrics for Requests {
    fn list_page(&self, _: &str, _: usize, _: Option<i64>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn list_failed(&self, _: &str) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn watch_started(&self, _: &str) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

const STORM: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let server = TestServer::start().await?;
    let requests = Arc::new(Requests::default());
    let config = ReflectorConfig::default().metrics(Arc::clone(&requests) as _);
    // kube-client retries 429 and 503 itself (up to 15 times, honouring Retry-After) below the
    // reflector, where neither the reflector's backoff nor its rate limit sees the retries: off
    // here, so that every request the server answers is one the reflector sent and counted.
    let mut client_config = server.config()?;
    client_config.default_retry = false;
    let client = kube_client::Client::try_from(client_config)?;
    let mut builder = SharedInformerFactory::builder(client).reflector(config);
    if let [qps, burst, ..] = args[..] {
        builder = builder.rate_limit(qps, burst as u32);
        println!("client-side limit: {qps} qps, burst {burst}");
    }
    let factory = builder.build();
    let _ = factory.informer::<ConfigMap>();
    factory.start()?;
    factory.wait_for_cache_sync().await;

    // The storm: every request fails with 429 (retryAfterSeconds 1) and open watches end.
    server.fail_next_requests(u32::MAX, 429);
    server.end_all_watches();
    let before = requests.0.load(Ordering::Relaxed);
    let mut per_second = Vec::new();
    let mut last = before;
    for _ in 0..STORM.as_secs() {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = requests.0.load(Ordering::Relaxed);
        per_second.push(now - last);
        last = now;
    }
    server.fail_next_requests(0, 429);
    let total = last - before;
    println!("requests per second during the storm: {per_second:?}");
    println!(
        "total {total} in {} s ({:.2}/s), busiest second {}",
        STORM.as_secs(),
        total as f64 / STORM.as_secs_f64(),
        per_second.iter().max().copied().unwrap_or(0)
    );
    factory.shutdown().await;
    Ok(())
}
