//! The server on etcd: creates by 16 concurrent writers against etcd's own `put` rate with the
//! same concurrency and bytes, and the full list of the created pods from storage against
//! `etcdctl get --prefix` of the same keys.

use std::process::Stdio;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kcache_apiserver::{ApiServer, Object, TestEtcd, TestServer};
use kcache_store::testing;
use tokio::process::Command;
use tokio::time::Instant;

use super::{SAMPLES, Timing, time};
use crate::BoxError;

/// Concurrent writers.
const WRITERS: usize = 16;
/// The watch cache's event window on etcd.
const WINDOW: usize = 100;

/// What etcd and the server on it measured.
#[derive(Debug)]
pub(super) struct EtcdFigures {
    pub(super) pods: usize,
    /// Writes per second, 16 in flight: etcd's own puts and the server's creates.
    pub(super) puts_per_s: f64,
    pub(super) creates_per_s: f64,
    /// The server's list from storage at an exact resource version.
    pub(super) list: Timing,
    /// `etcdctl get --prefix` of the same keys, printed to nowhere (why not, when absent).
    pub(super) etcdctl: Result<Timing, String>,
}

/// Runs `pods` writes of `write` with [`WRITERS`] in flight: their rate per second.
async fn writes_per_s<F, Fut>(pods: usize, write: F) -> Result<f64, BoxError>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    let started = Instant::now();
    futures::stream::iter(0..pods)
        .map(write)
        .buffer_unordered(WRITERS)
        .try_collect::<()>()
        .await?;
    Ok(pods as f64 / started.elapsed().as_secs_f64())
}

/// Measures against a fresh etcd; `Ok(Err(why))` when there is no etcd binary.
pub(super) async fn measure(pods: usize) -> Result<Result<EtcdFigures, String>, BoxError> {
    let Some(etcd) = TestEtcd::start().await? else {
        return Ok(Err(
            "no etcd binary (apt-get install etcd-server, or set ETCD)".to_owned(),
        ));
    };
    let client = etcd_client::Client::connect([etcd.url()], None).await?;
    let bodies: Vec<Vec<u8>> = (0..pods)
        .map(|i| serde_json::to_vec(&testing::pod_json(i, 100, 0)))
        .collect::<Result<_, _>>()?;
    let puts_per_s = writes_per_s(pods, |i| {
        let (mut kv, body) = (client.kv_client(), bodies[i].clone());
        async move {
            kv.put(format!("/etcd-put/{i:06}"), body, None).await?;
            Ok(())
        }
    })
    .await?;
    // A small event window, so that the list below at an earlier revision has left the cache
    // and storage answers it (the cache serves exact lists from its snapshots while it can).
    let server = TestServer::start_with(
        ApiServer::builder()
            .storage(Arc::new(etcd.storage().await?))
            .garbage_collection(false)
            .cache_capacity(WINDOW),
    )
    .await?;
    let creates_per_s = writes_per_s(pods, |i| {
        let server = &server;
        async move {
            server
                .create(Object::from_value(testing::pod_json(i, 100, 0))?)
                .await?;
            Ok(())
        }
    })
    .await?;
    server.wait_caches_synced().await?;
    let rev = server.storage_revision().await?;
    for i in pods..pods + 2 * WINDOW {
        server
            .create(Object::from_value(testing::pod_json(i, 100, 0))?)
            .await?;
    }
    server.wait_caches_synced().await?;
    let list = time(
        &server.router(),
        format!("{pods} pods from etcd (past the cache's window), resourceVersion={rev}&resourceVersionMatch=Exact"),
        &format!("/api/v1/pods?resourceVersion={rev}&resourceVersionMatch=Exact"),
    )
    .await?;
    let etcdctl = etcdctl(&etcd.url(), pods).await?;
    Ok(Ok(EtcdFigures {
        pods,
        puts_per_s,
        creates_per_s,
        list,
        etcdctl,
    }))
}

/// `etcdctl get --prefix /registry/pods/` timed [`SAMPLES`] times (`$ETCDCTL`, else `etcdctl`
/// on the `PATH`); `Ok(Err(why))` when there is none.
async fn etcdctl(url: &str, pods: usize) -> Result<Result<Timing, String>, BoxError> {
    let program = std::env::var_os("ETCDCTL").unwrap_or_else(|| "etcdctl".into());
    let mut samples_ms = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        let status = Command::new(&program)
            .args(["--endpoints", url, "get", "--prefix", "/registry/pods/"])
            .env("ETCDCTL_API", "3")
            .stdout(Stdio::null())
            .status()
            .await;
        match status {
            Ok(s) if s.success() => samples_ms.push(started.elapsed().as_secs_f64() * 1e3),
            Ok(s) => return Err(format!("etcdctl get failed ({s})").into()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Err(
                    "no etcdctl (apt-get install etcd-client, or set ETCDCTL)".to_owned(),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Ok(Timing {
        what: format!("{pods} pods, etcdctl get --prefix /registry/pods/"),
        samples_ms,
    }))
}
