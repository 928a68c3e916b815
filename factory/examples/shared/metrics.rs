//! What the quick start and the sample controller share: serving a Prometheus registry.

use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

/// Serves `registry` in the OpenMetrics text format on `http://addr/metrics` until `stop`;
/// the address bound.
pub(crate) async fn serve_metrics(
    addr: SocketAddr,
    registry: Registry,
    stop: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let registry = Arc::new(registry);
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let registry = Arc::clone(&registry);
            async move {
                let mut text = String::new();
                let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
                match prometheus_client::encoding::text::encode(&mut text, &registry) {
                    Ok(()) => Ok(([(axum::http::header::CONTENT_TYPE, content_type)], text)),
                    Err(_) => Err(axum::http::StatusCode::INTERNAL_SERVER_ERROR),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let served = listener.local_addr()?;
    tokio::spawn(async move {
        let serving = axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned());
        if let Err(e) = serving.await {
            eprintln!("metrics server failed: {e}");
        }
    });
    Ok(served)
}
