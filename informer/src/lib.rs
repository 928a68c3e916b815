//! Kubernetes shared informers for Rust: the controller loop, [`SharedIndexInformer`] with many
//! event handlers, listers and a watch-based object cache (client-go's `tools/cache` informers).
//!
//! - [`SharedIndexInformer`]: one list-watch of a resource shared by any number of
//!   [`ResourceEventHandler`]s and [`EventStream`]s, an indexed cache read through
//!   [`Lister`]s, per-handler resync periods and per-handler sync tracking
//!   ([`ResourceEventHandlerRegistration::has_synced`]). Handlers added late get the cache
//!   replayed. Each handler has its own buffer and task: a slow or panicking handler harms
//!   nobody else. [`AnyInformer`] erases the object type for informer factories.
//! - [`Controller`]: a reflector into a queue ([`InformerQueue`]: the in-order
//!   [`RealFifo`](kcache_deltafifo::RealFifo), atomic by default, or the
//!   [`DeltaFifo`](kcache_deltafifo::DeltaFifo); [`QueueMode`] says what each guarantees about
//!   order) and a loop popping it into a process function; [`process_deltas`] and the
//!   [`new_informer`] family for single-handler informers.
//!
//! One step from queue to handler: popped deltas are applied to the indexer and each change
//! becomes the [`InformerEvent`] the processor hands to every handler (client-go's
//! `HandleDeltas`); a RealFifo batch is applied with the queue unlocked (client-go 1.36's
//! `UnlockWhileProcessingFIFO`), so the reflector never waits for it.
//! - Handlers: the [`ResourceEventHandler`] trait, closures ([`ResourceEventHandlerFuncs`]) and
//!   [`FilteringResourceEventHandler`].
//! - [`wait_for_cache_sync`] over informers, registrations and controllers.
//! - [`ObjectCache`]: single objects watched on demand (kubelet's watch-based manager), each by
//!   its own reflector, reference counted, stopped once the object is immutable.
//! - [`InformerStats`] ([`SharedIndexInformer::stats`]): cache size, queue depth, last synced
//!   resource version, each handler's pending notifications and the oldest one's age, relists and
//!   watch restarts; the `prometheus` feature's `PrometheusMetrics` exports them with client-go's
//!   `informer_*` names.
//!
//! Objects are shared `Arc<K>`s from the decoder to every handler: never copied.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use futures::stream;
//! use k8s_openapi::api::core::v1::Pod;
//! use kcache_informer::{ResourceEventHandlerFuncs, SharedIndexInformer, wait_for_cache_sync};
//! use kcache_reflector::{ListPage, ListWatch, WatchStream};
//! use kcache_store::parse_label_selector;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A lister-watcher; with a cluster this is a kube-client backed one.
//! let lw = ListWatch::<Pod>::new(
//!     |_| async {
//!         let pods = (0..3).map(|i| {
//!             let mut pod = Pod::default();
//!             pod.metadata.namespace = Some("prod".into());
//!             pod.metadata.name = Some(format!("web-{i}"));
//!             pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
//!             Arc::new(pod)
//!         });
//!         Ok(ListPage { items: pods.collect(), resource_version: "10".into(), continue_token: None, remaining_item_count: None })
//!     },
//!     |_| async { Ok(Box::pin(stream::pending()) as WatchStream<Pod>) },
//! );
//! let informer = SharedIndexInformer::builder(lw).name("pods").build();
//!
//! let adds = Arc::new(AtomicUsize::new(0));
//! let registration = informer.add_event_handler(ResourceEventHandlerFuncs::new().add_func({
//!     let adds = adds.clone();
//!     move |_pod: &Arc<Pod>, _initial| {
//!         adds.fetch_add(1, Ordering::Relaxed);
//!     }
//! }))?;
//!
//! let shutdown = CancellationToken::new();
//! let task = tokio::spawn(informer.run(shutdown.clone()));
//! assert!(wait_for_cache_sync(&shutdown, &[&informer, &registration]).await);
//! assert_eq!(adds.load(Ordering::Relaxed), 3);
//!
//! let web = informer.lister().namespace("prod").list(&parse_label_selector("app=web")?);
//! assert_eq!(web.len(), 3);
//!
//! shutdown.cancel();
//! task.await??;
//! # Ok(()) }
//! ```

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod any_informer;
mod builder;
mod consistency;
mod controller;
mod enqueue;
mod error;
mod handler;
mod informer;
mod metrics;
mod new_informer;
mod object_cache;
mod panics;
mod process;
mod processor;
#[cfg(feature = "prometheus")]
mod prometheus;
mod queue;
mod run;
mod stream;
mod sync;

pub use any_informer::AnyInformer;
pub use builder::SharedIndexInformerBuilder;
pub use controller::{Controller, ControllerConfig, ProcessFunc};
pub use enqueue::EnqueueHandler;
pub use error::{InformerError, ObjectCacheError};
pub use handler::{
    FilteringResourceEventHandler, HandlerOptions, InformerEvent, ResourceEventHandler,
    ResourceEventHandlerFuncs,
};
pub use informer::SharedIndexInformer;
pub use metrics::{HandlerStats, InformerStats};
// What the builder takes, so that a user of it needs no other kcache crate to name it.
pub use kcache_reflector::{BackoffConfig, ReflectorConfig, ReflectorError};
pub use kcache_store::{IndexFunc, Indexers, Lister, NamespaceLister, TransformFunc};
pub use new_informer::{
    new_indexer_informer, new_informer, new_transforming_indexer_informer,
    new_transforming_informer,
};
pub use object_cache::{DEFAULT_SYNC_TIMEOUT, ImmutableCheck, ListerWatcherFactory, ObjectCache};
pub use process::process_deltas;
pub use processor::{MINIMUM_RESYNC_PERIOD, ResourceEventHandlerRegistration};
#[cfg(feature = "prometheus")]
pub use prometheus::PrometheusMetrics;
pub use queue::{InformerQueue, QueueMode};
pub use stream::EventStream;
pub use sync::{HasSynced, SYNC_POLL_PERIOD, wait_for_cache_sync, wait_for_named_cache_sync};
