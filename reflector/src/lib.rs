//! Kubernetes list-watch reflector over kube-client: keeps a store equal to the API server's
//! state through every failure (client-go's `tools/cache` reflector).
//!
//! - [`ListerWatcher`] is the contract: one list page, or one watch stream, of a resource.
//! - [`Reflector`] lists (paginated, or with the streaming watch-list), replaces a
//!   [`ReflectorStore`] (an `Indexer`, an informer's queue), then watches and applies every
//!   event, with client-go's resource-version, pagination, relist and backoff rules, as its
//!   [`ReflectorConfig`] says.
//! - [`KubeListerWatcher`] lists and watches over kube-client (typed objects, `DynamicObject`,
//!   metadata only), decoding off the task that reads the socket.
//! - [`ListWatch`] builds a lister-watcher from two closures.
//! - [`ObjectMaking`]: the transform every object passes and the objects already held, given
//!   to a lister-watcher by [`ListerWatcher::making_objects`] when it is built: the one home of a
//!   transform.
//! - Feature `testing`: `testing::FakeControllerSource`, an in-memory lister-watcher with
//!   pagination, a bounded history and fault injection.
//!
//! ```
//! use std::sync::Arc;
//! use futures::stream;
//! use k8s_openapi::api::core::v1::Pod;
//! use kcache_reflector::{ListPage, ListWatch, Reflector, ReflectorConfig, WatchStream};
//! use kcache_store::{Indexer, Store};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web".into());
//! pod.metadata.namespace = Some("prod".into());
//! let pod = Arc::new(pod);
//! let lw = ListWatch::new(
//!     move |_options| {
//!         let items = vec![Arc::clone(&pod)];
//!         async move {
//!             Ok(ListPage { items, resource_version: "7".into(), continue_token: None, remaining_item_count: None })
//!         }
//!     },
//!     |_options| async { Ok(Box::pin(stream::pending()) as WatchStream<Pod>) },
//! );
//! let store = Arc::new(Indexer::<Pod>::default());
//! let reflector = Arc::new(Reflector::new(lw, Arc::clone(&store), ReflectorConfig::default().name("pods")));
//! let shutdown = CancellationToken::new();
//! let task = tokio::spawn({
//!     let (reflector, shutdown) = (Arc::clone(&reflector), shutdown.clone());
//!     async move { reflector.run(shutdown).await }
//! });
//! while reflector.last_sync_resource_version() != "7" {
//!     tokio::task::yield_now().await;
//! }
//! assert!(store.get_by_key("prod/web").is_some());
//! shutdown.cancel();
//! task.await.unwrap();
//! # }
//! ```

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// `ListWatchError::Api` holds a `Status` (about 300 bytes) by value, as the contract fixes it; errors
// are rare on these paths, so the size does not matter.
#![allow(clippy::result_large_err, clippy::large_enum_variant)]

mod backoff;
mod config;
mod decode;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod kube;
mod list_scan;
mod list_watch;
mod lister_watcher;
mod metrics;
#[cfg(feature = "prometheus")]
mod prometheus;
mod rate_limit;
mod reflector;
mod reflector_store;
#[cfg(feature = "testing")]
pub mod testing;

pub use backoff::BackoffConfig;
pub use config::{
    DEFAULT_MIN_WATCH_TIMEOUT, DEFAULT_PAGE_SIZE, ListSemantic, ReflectorConfig, ShouldResync,
    WatchErrorHandler,
};
#[cfg(feature = "testing")]
pub use error::status;
pub use error::{
    ReflectorError, is_connection_error, is_expired, is_expired_status,
    is_too_large_resource_version, is_too_large_resource_version_status, is_too_many_requests,
    is_watch_error_retriable, retry_after,
};
pub use kube::{DEFAULT_MAX_WATCH_LINE_BYTES, KubeListerWatcher, TweakListOptions};
pub use list_watch::ListWatch;
pub use lister_watcher::{
    Bookmark, INITIAL_EVENTS_END_ANNOTATION, ListFuture, ListOptions, ListPage, ListWatchError,
    ListerWatcher, ObjectMaking, ResourceVersionMatch, WatchEvent, WatchFuture, WatchStream,
};
pub use metrics::{NoopMetrics, ReflectorMetrics};
#[cfg(feature = "prometheus")]
pub use prometheus::PrometheusMetrics;
pub use rate_limit::TokenBucket;
pub use reflector::Reflector;
pub use reflector_store::{PagedReplace, ReflectorStore};
