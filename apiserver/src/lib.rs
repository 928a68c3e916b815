//! An in-process, Kubernetes-compatible list/watch API server with the API server's watch cache,
//! for tests and local development.
//!
//! - [`Storage`] is the source of truth with a global revision (etcd's role);
//!   [`MemoryStorage`] keeps a bounded, compacting multi-version history; with the `etcd`
//!   feature, `EtcdStorage` keeps the objects in etcd v3 (`TestEtcd` runs one for tests).
//! - Per resource, a kcache-reflector [`Reflector`](kcache_reflector::Reflector) lists and watches storage through a [`ListerWatcher`]
//!   ([`StorageListerWatcher`]) and feeds a [`WatchCache`] through the kcache-reflector
//!   [`ReflectorStore`](kcache_reflector::ReflectorStore) trait: the current state (a persistent
//!   ordered map, with a snapshot per event in the window) plus a ring buffer of events.
//!   Watches and lists are served from it with the API server's rules (resource versions, 410
//!   Expired inside a 200 stream, freshness waits, selectors, bookmarks, streaming watch-list,
//!   bounded per-watcher buffers with a dispatch budget; paginated and exact-resourceVersion
//!   lists from the snapshots while the window has them, as Kubernetes 1.34). Each event is
//!   encoded once.
//! - [`ApiServer`] serves the HTTP API (core and group paths, list, watch, get, create, update,
//!   patch, delete, dry runs, status and scale subresources, Table output, discovery, OpenAPI
//!   v2 and v3; bodies in JSON, YAML or Kubernetes' protobuf encoding; validation with the API
//!   server's statuses) with an axum router;
//!   [`TestServer`] runs it on a free local port and hands out a configured
//!   [`kube_client::Client`].
//! - Object lifecycle as in a cluster: finalizers, propagation policies and pod grace periods
//!   on delete, NamespaceLifecycle admission, and a garbage collector, namespace controller
//!   and pod reaper running inside the server on its watch caches
//!   ([`ApiServer::wait_controllers_idle`]); the authorization and authentication reviews
//!   (access answered from [`AccessRule`]s, allow-all by default).
//!
//! [`ListerWatcher`]: kcache_reflector::ListerWatcher
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kcache_apiserver::TestServer;
//! use kube_client::Api;
//! use kube_client::api::PostParams;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = TestServer::start().await?;
//! let api: Api<ConfigMap> = Api::namespaced(server.client()?, "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! let created = api.create(&PostParams::default(), &cm).await?;
//! assert!(created.metadata.uid.is_some());
//! assert_eq!(api.list(&Default::default()).await?.items.len(), 1);
//! # Ok(()) }
//! ```

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod access;
mod admission;
mod authn;
mod bootstrap;
mod cache;
mod cacher;
mod continue_token;
mod controllers;
mod convert;
mod crd;
mod defaults;
mod deletion;
mod encode;
mod error;
mod fieldmanager;
mod fields;
mod filter;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod health;
mod http;
mod kinds;
mod object;
mod openapi;
mod patch;
mod printers;
mod protobuf;
mod query;
mod quota;
mod registry;
mod resource;
mod resource_version;
mod reviews;
mod schema;
mod served;
mod server;
mod shared;
#[cfg(feature = "testing")]
mod skip;
mod storage;
#[cfg(feature = "etcd")]
mod test_etcd;
#[cfg(feature = "etcd")]
mod test_etcd_cluster;
mod testing;
mod tokens;
mod validation;
mod webhook;

pub use access::AccessRule;
pub use cache::{CacheConfig, WatchCache};
pub use cacher::StorageListerWatcher;
pub use error::ApiError;
pub use object::{Object, ObjectError};
pub use resource::{PrinterColumn, ResourceDef, builtin_resources};
pub use server::{ApiServer, ApiServerBuilder};
pub use shared::{Ipv4Cidr, Ipv4CidrError, PortRange, PortRangeError, ServerConfig};
#[cfg(feature = "testing")]
pub use skip::{SKIP_LOG_VAR, STRICT_VAR, skip};
pub use storage::{
    DEFAULT_HISTORY, EventType, ListRequest, ListResult, MemoryStorage, Preconditions, Storage,
    StorageError, StorageEvent, StorageFuture, StorageWatch, UpdateFn, WatchItem, is_unchanged,
};
#[cfg(feature = "etcd")]
pub use storage::{DEFAULT_PREFIX, EtcdConfig, EtcdStorage};
#[cfg(feature = "etcd")]
pub use test_etcd::TestEtcd;
#[cfg(feature = "etcd")]
pub use test_etcd_cluster::TestEtcdCluster;
pub use testing::{ServeError, TestServer, client_config, client_for, serve};
