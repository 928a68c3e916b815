//! The thread-safe indexed object store at the bottom of kcache: client-go's `cache.Store`,
//! `cache.Indexer` and listers, in Rust.
//!
//! - [`Store`] is what a reflector writes into (add, update, delete, replace, bookmark,
//!   transaction) and what queues implement to receive the same calls.
//! - [`Indexer`] is the store an informer keeps: objects by `namespace/name` as [`Arc`](std::sync::Arc)s, with
//!   indexes ([`IndexFunc`]) maintained incrementally under one read-write lock, and
//!   resource-version tracking. [`ThreadSafeStore`] is its keyed core.
//! - Key functions ([`meta_namespace_key`], [`namespace_key`], [`split_meta_namespace_key`],
//!   [`deletion_handling_meta_namespace_key`]) and the [`DeletedFinalStateUnknown`] tombstone.
//! - [`Lister`] and [`NamespaceLister`] read an indexer with label selectors
//!   ([`parse_label_selector`]).
//!
//! Objects are held as `Arc<K>` for any kube [`Resource`](kube_core::Resource): typed
//! k8s-openapi objects, `DynamicObject` or `PartialObjectMeta`. Reads hand out `Arc` clones, never
//! copies of objects. The crate has no async runtime and no HTTP client.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kcache_store::{Indexer, Lister, Store, label_index_func, parse_label_selector};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let indexer = Arc::new(Indexer::<Pod>::with_namespace_index());
//! indexer.add_index("by-app", label_index_func("app"))?;
//!
//! for (ns, name, app) in [("prod", "web-1", "web"), ("prod", "db-1", "db"), ("dev", "web-1", "web")] {
//!     let mut pod = Pod::default();
//!     pod.metadata.namespace = Some(ns.into());
//!     pod.metadata.name = Some(name.into());
//!     pod.metadata.labels = Some([("app".to_string(), app.to_string())].into());
//!     indexer.add(Arc::new(pod))?;
//! }
//!
//! assert_eq!(indexer.by_index("by-app", "web")?.len(), 2);
//! assert_eq!(&*indexer.index_keys("by-app", "web")?[0], "dev/web-1");
//!
//! let lister = Lister::new(Arc::clone(&indexer));
//! let prod_web = lister.namespace("prod").list(&parse_label_selector("app=web")?);
//! assert_eq!(prod_web[0].metadata.name.as_deref(), Some("web-1"));
//! # Ok(()) }
//! ```

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(feature = "compact")]
mod compact;
mod error;
mod holding;
mod index;
mod indexer;
mod key;
mod lister;
mod resource_version;
mod selector;
mod store;
mod store_core;
#[cfg(feature = "testing")]
pub mod testing;
mod thread_safe_store;

pub use error::{BoxError, KeyError, StoreError, TransactionError, panic_message};
pub use index::{
    IndexFunc, IndexValues, Indexers, NAMESPACE_INDEX, NODE_NAME_INDEX, OWNER_INDEX,
    index_func_to_key_func, label_index_func, namespace_index_func, node_name_index_func,
    owner_index_func, owner_index_value, owner_kind_name_index_func, owner_uid_index_func,
};
pub use indexer::Indexer;
pub use key::{
    DeletedFinalStateUnknown, ExplicitKey, KeyFunc, MaybeTombstone, ObjectKey,
    deletion_handling_meta_namespace_key, meta_namespace_key, meta_namespace_key_func,
    namespace_key, split_meta_namespace_key,
};
pub use lister::{Lister, NamespaceLister};
pub use resource_version::{
    InvalidResourceVersion, compare_resource_versions, resource_version_reached,
};
pub use selector::{SelectorError, parse_label_selector};
pub use store::{KnownObjects, Store, Transaction, TransactionType, TransformFunc};
pub use thread_safe_store::ThreadSafeStore;
