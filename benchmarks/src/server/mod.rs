//! The API server's own figures, the report's second section: watch fan-out from one writer to
//! many watchers, lists of the cache and of its pages, and on etcd the full list and create
//! throughput against etcd's own. Requests go to the server's router in-process (no socket, no
//! client), so the figures are the server's alone; the Kubernetes API server's watch cache is
//! the anchor.

mod etcd;
mod fanout;
mod lists;
mod report;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http_body_util::BodyExt;
use tokio::time::Instant;
use tower::ServiceExt;

pub(crate) use report::markdown;

use crate::run::Cluster;
use crate::{BoxError, Settings};

/// What the server section measured.
#[derive(Debug)]
pub(crate) struct ServerFigures {
    fanout: Vec<fanout::Fanout>,
    lists: Vec<Timing>,
    /// Why there are none, when there are none (no etcd binary).
    etcd: Result<etcd::EtcdFigures, String>,
}

/// The latencies of one request repeated, in milliseconds.
#[derive(Debug)]
struct Timing {
    what: String,
    samples_ms: Vec<f64>,
}

impl Timing {
    /// The median, the fastest and the slowest sample.
    fn spread(&self) -> (f64, f64, f64) {
        let mut sorted = self.samples_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |i: usize| sorted.get(i).copied().unwrap_or(f64::NAN);
        (
            at(sorted.len() / 2),
            at(0),
            at(sorted.len().saturating_sub(1)),
        )
    }
}

/// How many times each timed request is repeated.
const SAMPLES: usize = 5;

/// Measures the server of `cluster` (lists first, while nothing writes), then a server of its
/// own on etcd.
pub(crate) async fn run(cluster: &Cluster, settings: &Settings) -> Result<ServerFigures, BoxError> {
    let lists = lists::measure(cluster, settings.pods).await?;
    tracing::info!(?lists, "lists measured");
    let mut fanout = Vec::new();
    for selected in [false, true] {
        let figures =
            fanout::measure(cluster, settings.watchers, settings.fanout_events, selected).await?;
        tracing::info!(?figures, "fan-out measured");
        fanout.push(figures);
    }
    let etcd = etcd::measure(settings.pods).await?;
    tracing::info!(?etcd, "etcd measured");
    Ok(ServerFigures {
        fanout,
        lists,
        etcd,
    })
}

/// GETs `uri` from `router` in-process; an answer other than 200 is an error.
async fn get(router: &Router, uri: &str) -> Result<Body, BoxError> {
    let request = http::Request::get(uri)
        .header(http::header::ACCEPT, "application/json")
        .body(Body::empty())?;
    let response = router.clone().oneshot(request).await?;
    if response.status() != http::StatusCode::OK {
        return Err(format!("GET {uri}: {}", response.status()).into());
    }
    Ok(response.into_body())
}

/// GETs `uri` and reads the whole body.
async fn read(router: &Router, uri: &str) -> Result<Bytes, BoxError> {
    Ok(get(router, uri).await?.collect().await?.to_bytes())
}

/// GETs `uri` [`SAMPLES`] times, each to its last byte.
async fn time(router: &Router, what: String, uri: &str) -> Result<Timing, BoxError> {
    let mut samples_ms = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        drop(read(router, uri).await?);
        samples_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Timing { what, samples_ms })
}

#[cfg(test)]
mod tests;
