//! [`TestServer`]: an [`ApiServer`] listening on 127.0.0.1 with a free port, for tests.

use std::net::SocketAddr;
use std::ops::Deref;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::server::{ApiServer, ApiServerBuilder};

/// Why a server could not be started or a client configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Binding or serving failed.
    #[error("i/o error")]
    Io(#[from] std::io::Error),
    /// The kube client could not be built.
    #[error("client error")]
    Client(#[source] kcache_store::BoxError),
    /// The objects of a fresh cluster (system namespaces, the `kubernetes` Service, ...)
    /// could not be created, or the caches did not see them.
    #[error("cannot set up the objects of a fresh cluster")]
    Setup(#[source] ApiError),
}

/// An [`ApiServer`] served over HTTP on `127.0.0.1` at a free port, stopped when dropped.
///
/// Derefs to the [`ApiServer`], so seeding ([`ApiServer::seed`]) and fault injection
/// ([`ApiServer::end_all_watches`], [`ApiServer::fail_next_requests`], [`ApiServer::compact_now`];
/// with the `testing` feature, `ApiServer::set_response_delay` and
/// `ApiServer::inject_malformed_watch_line`) are at hand.
#[derive(Debug)]
pub struct TestServer {
    server: ApiServer,
    addr: SocketAddr,
    stop: CancellationToken,
}

impl TestServer {
    /// Starts a server with the built-in resources.
    pub async fn start() -> Result<Self, ServeError> {
        Self::start_with(ApiServer::builder()).await
    }

    /// Starts the server built by `builder`, once the objects of a fresh cluster exist
    /// ([`ApiServer::ensure_cluster_objects`]), the caches are
    /// synced and the CustomResourceDefinitions in its storage are served.
    pub async fn start_with(builder: ApiServerBuilder) -> Result<Self, ServeError> {
        let server = builder.build();
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        server
            .ensure_cluster_objects(addr)
            .await
            .map_err(ServeError::Setup)?;
        server
            .wait_caches_synced()
            .await
            .map_err(ServeError::Setup)?;
        server.wait_crds_served().await;
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, server.clone(), stop.clone()));
        Ok(Self { server, addr, stop })
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube client configured for this server (with its token, if any).
    pub fn client(&self) -> Result<kube_client::Client, ServeError> {
        kube_client::Client::try_from(self.config()?).map_err(|e| ServeError::Client(Box::new(e)))
    }

    /// The kube client configuration of [`TestServer::client`], to adjust (for example
    /// `default_retry = false` to see 429, 503 and 504 answers instead of retrying them).
    pub fn config(&self) -> Result<kube_client::Config, ServeError> {
        client_config(
            &self.url(),
            self.server.shared.config.token.as_deref(),
            "default",
        )
    }

    /// The server.
    pub fn server(&self) -> &ApiServer {
        &self.server
    }
}

impl Deref for TestServer {
    type Target = ApiServer;

    fn deref(&self) -> &ApiServer {
        &self.server
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.cancel();
        self.server.shutdown();
    }
}

/// A kube client for `url` with an optional bearer token, defaulting to `namespace`.
pub fn client_for(
    url: &str,
    token: Option<&str>,
    namespace: &str,
) -> Result<kube_client::Client, ServeError> {
    let config = client_config(url, token, namespace)?;
    kube_client::Client::try_from(config).map_err(|e| ServeError::Client(Box::new(e)))
}

/// The kube client configuration for `url` with an optional bearer token, defaulting to
/// `namespace`.
pub fn client_config(
    url: &str,
    token: Option<&str>,
    namespace: &str,
) -> Result<kube_client::Config, ServeError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| ServeError::Client(Box::new(e)))?;
    let mut config = kube_client::Config::new(uri);
    namespace.clone_into(&mut config.default_namespace);
    config.read_timeout = Some(Duration::from_secs(295));
    if let Some(token) = token {
        config.auth_info.token = Some(token.to_owned().into());
    }
    Ok(config)
}

/// Serves `server` on `listener` until `stop` (then shuts the server down).
pub async fn serve(
    listener: TcpListener,
    server: ApiServer,
    stop: CancellationToken,
) -> Result<(), ServeError> {
    let router = server.router();
    let shutdown = stop.clone();
    let on_stop = server.clone();
    // Every event goes out as soon as it is written, as Go's API server does (Go sets
    // TCP_NODELAY on every connection): Nagle's algorithm would hold a small write back while an
    // earlier one is unacknowledged.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let result = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.cancelled().await;
            on_stop.end_all_watches();
        })
        .await;
    server.shutdown();
    result.map_err(ServeError::Io)
}
