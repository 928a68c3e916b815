//! client-go's list-watch cache machinery for Rust, in one dependency.
//!
//! `kcache` re-exports the layered crates of the kcache workspace, one feature per layer (all on
//! by default), and a [`prelude`] with the names a controller uses. Each layer is also published
//! on its own (`kcache-store`, `kcache-workqueue`, …) for programs that want only one.
//!
//! | module | crate | what it holds | feature |
//! |---|---|---|---|
//! | [`store`] | `kcache-store` | `Indexer`, listers, key and index functions | `store` |
//! | [`deltafifo`] | `kcache-deltafifo` | `Fifo`, `DeltaFifo`, `RealFifo` | `deltafifo` |
//! | [`workqueue`] | `kcache-workqueue` | `WorkQueue`, `WorkItem`, rate limiters, `run_workers` | `workqueue` |
//! | [`reflector`] | `kcache-reflector` | `ListerWatcher` over kube-client, `Reflector` | `reflector` |
//! | [`informer`] | `kcache-informer` | `SharedIndexInformer`, event handlers, `EnqueueHandler` | `informer` |
//! | [`factory`] | `kcache-factory` | `SharedInformerFactory` | `factory` (default) |
//! | `leaderelection` | `kcache-leaderelection` | `LeaderElector` on Leases | `leaderelection` |
//! | `events` | `kcache-events` | `EventBroadcaster`, `Recorder` for `events.k8s.io/v1` | `events` |
//! | `prometheus_client` | `prometheus-client` | the registry; `PrometheusMetrics` in `workqueue`, `reflector` and `informer`; `SharedInformerFactory::register_metrics` | `prometheus` |
//!
//! The Kubernetes crates it builds on are re-exported too ([`k8s_openapi`], [`kube_client`],
//! [`kube_core`]); your binary still picks the Kubernetes version with a k8s-openapi feature.
//!
//! A controller in a few lines (against the in-process API server of `kcache-apiserver` here;
//! with a cluster, pass `kube_client::Client::try_default().await?`):
//!
//! ```
//! use kcache::prelude::*;
//! use kcache::k8s_openapi::api::core::v1::Pod;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = kcache_apiserver::TestServer::start().await?;
//! # let client = server.client()?;
//! let factory = SharedInformerFactory::new(client);
//! let pods = factory.informer::<Pod>();
//! let queue = WorkQueue::<String>::new();
//! pods.add_event_handler(EnqueueHandler::key(queue.clone()))?;
//!
//! factory.start()?;
//! assert!(factory.wait_for_cache_sync().await.values().all(|synced| *synced));
//!
//! let lister = pods.lister();
//! queue.shut_down(); // here: stop at once; a real controller shuts down on a signal
//! queue
//!     .run_workers(2, move |key: String| {
//!         let pod = lister.get(&key);
//!         async move {
//!             println!("reconciling {key}: {}", if pod.is_some() { "exists" } else { "gone" });
//!             Ok::<(), kcache::informer::InformerError>(())
//!         }
//!     })
//!     .await;
//! factory.shutdown().await;
//! # Ok(()) }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use k8s_openapi;
#[cfg(feature = "deltafifo")]
pub use kcache_deltafifo as deltafifo;
#[cfg(feature = "events")]
pub use kcache_events as events;
#[cfg(feature = "factory")]
pub use kcache_factory as factory;
#[cfg(feature = "informer")]
pub use kcache_informer as informer;
#[cfg(feature = "leaderelection")]
pub use kcache_leaderelection as leaderelection;
#[cfg(feature = "reflector")]
pub use kcache_reflector as reflector;
#[cfg(feature = "store")]
pub use kcache_store as store;
#[cfg(feature = "workqueue")]
pub use kcache_workqueue as workqueue;
pub use kube_client;
pub use kube_core;
#[cfg(feature = "prometheus")]
pub use prometheus_client;

/// The names a controller uses, from every enabled layer: `use kcache::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "events")]
    pub use kcache_events::{EventBroadcaster, EventType, Recorder};
    #[cfg(feature = "factory")]
    pub use kcache_factory::{SharedInformerFactory, drop_managed_fields};
    #[cfg(feature = "informer")]
    pub use kcache_informer::{
        EnqueueHandler, HasSynced, InformerEvent, QueueMode, ResourceEventHandler,
        ResourceEventHandlerFuncs, SharedIndexInformer,
    };
    #[cfg(feature = "leaderelection")]
    pub use kcache_leaderelection::{LeaderElectionConfig, LeaderElector, LeaderEvent};
    #[cfg(feature = "reflector")]
    pub use kcache_reflector::{KubeListerWatcher, Reflector, ReflectorConfig};
    #[cfg(feature = "store")]
    pub use kcache_store::{
        Indexer, Lister, MaybeTombstone, NamespaceLister, Store, meta_namespace_key,
    };
    #[cfg(feature = "workqueue")]
    pub use kcache_workqueue::{WorkItem, WorkQueue};
}
