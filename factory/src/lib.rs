//! One shared informer per resource type: client-go's `SharedInformerFactory` for Rust.
//!
//! A controller usually watches a few resource types from several places. The
//! [`SharedInformerFactory`] makes sure each type is listed and watched once: `informer::<K>()`
//! creates the [`SharedIndexInformer`](kcache_informer::SharedIndexInformer) of `K` on first use
//! and hands the same one to every later caller, [`start`](SharedInformerFactory::start) runs the
//! new ones, [`wait_for_cache_sync`](SharedInformerFactory::wait_for_cache_sync) reports which
//! synced, and [`shutdown`](SharedInformerFactory::shutdown) stops them all and waits.
//!
//! Typed resources (k8s-openapi), dynamic ones ([`DynamicObject`](kube_core::DynamicObject) with an
//! [`ApiResource`](kube_core::ApiResource)) and metadata-only caches are supported; options set the
//! namespace, selectors ([`tweak_list_options`](SharedInformerFactoryBuilder::tweak_list_options)),
//! resync periods, per-type transforms ([`drop_managed_fields`] is the usual one), the queue,
//! watch-list and page size.
//!
//! This example runs against the in-process API server of `kcache-apiserver`; with a cluster,
//! pass `kube_client::Client::try_default().await?` instead.
//!
//! ```
//! use std::time::Duration;
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
//! use kcache_factory::SharedInformerFactory;
//! use kube_client::{Api, api::PostParams};
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = kcache_apiserver::TestServer::start().await?;
//! # let client = server.client()?;
//! # // The server starts with the `default` namespace (and the other system namespaces).
//! let factory = SharedInformerFactory::builder(client.clone()).default_resync(Duration::from_secs(600)).build();
//! let config_maps = factory.informer::<ConfigMap>();
//! let mut changes = config_maps.event_stream()?; // or add_event_handler(...)
//! let namespaces = factory.lister::<Namespace>();
//! assert_eq!(factory.informer_keys(), ["v1/ConfigMap", "v1/Namespace"]);
//!
//! factory.start()?;
//! let synced = factory.wait_for_cache_sync().await;
//! assert!(synced.values().all(|s| *s));
//! assert!(namespaces.get("default").is_some());
//!
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! Api::<ConfigMap>::namespaced(client, "default").create(&PostParams::default(), &cm).await?;
//! let _added = changes.next().await; // the informer saw the new ConfigMap
//! assert!(config_maps.lister().namespace("default").get("settings").is_some());
//! factory.shutdown().await;
//! # Ok(()) }
//! ```

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod consistency;
mod error;
mod factory;
mod options;
mod transform;
mod type_key;

pub use error::FactoryError;
pub use factory::{SharedInformerFactory, SharedInformerFactoryBuilder, TypedResource};
// What the builder takes, so that a user of it needs no other kcache crate to name it.
pub use kcache_informer::QueueMode;
pub use kcache_reflector::{
    BackoffConfig, ListOptions, NoopMetrics, ReflectorConfig, ReflectorError, ReflectorMetrics,
    TokenBucket, TweakListOptions,
};
pub use kcache_store::TransformFunc;
pub use transform::drop_managed_fields;
