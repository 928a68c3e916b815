//! The informer's error types.

use kcache_store::StoreError;

/// Errors of [`SharedIndexInformer`](crate::SharedIndexInformer) and
/// [`Controller`](crate::Controller) operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// A handler or event stream was added after the informer stopped.
    #[error("informer {0:?} has stopped: handler not added")]
    Stopped(String),
    /// A setting that must be fixed before start was changed after the informer started.
    #[error("informer {name:?} has already started: {what} cannot be changed")]
    AlreadyStarted {
        /// The informer's name.
        name: String,
        /// What was being changed (`transform`, `watch error handler`).
        what: &'static str,
    },
    /// [`run`](crate::SharedIndexInformer::run) was called on an informer that already ran.
    #[error("informer {0:?} was already run; an informer runs once")]
    AlreadyRun(String),
    /// [`wait_for_resource_version`](crate::SharedIndexInformer::wait_for_resource_version):
    /// the cache did not reach the written resource version in time (or the informer stopped).
    #[error(
        "informer {informer:?}: cache at resource version {cache:?} did not reach {wanted:?} within {timeout:?}"
    )]
    StaleCache {
        /// The informer's name.
        informer: String,
        /// The resource version waited for (a write's).
        wanted: String,
        /// The cache's resource version when the wait ended.
        cache: String,
        /// How long the wait was allowed.
        timeout: std::time::Duration,
    },
    /// The indexer rejected an operation (for example an index name conflict).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Errors of the [`ObjectCache`](crate::ObjectCache).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectCacheError {
    /// `get` for an object nobody registered a reference to.
    #[error("object {namespace:?}/{name:?} not registered")]
    NotRegistered {
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
    },
    /// The object's cache did not sync within the allowed time.
    #[error("failed to sync cache of {namespace:?}/{name:?} within {timeout:?}")]
    SyncTimeout {
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
        /// How long `get` waited.
        timeout: std::time::Duration,
    },
    /// The object does not exist (the cache is synced and does not hold it).
    #[error("{resource} {name:?} not found")]
    NotFound {
        /// The resource name given to the cache (for example `configmaps`).
        resource: String,
        /// The object's name.
        name: String,
    },
    /// `add_reference` was called outside a tokio runtime (the reflector could not be spawned).
    #[error("no tokio runtime to run the reflector of {namespace:?}/{name:?}")]
    NoRuntime {
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
    },
}
