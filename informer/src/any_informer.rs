//! [`AnyInformer`]: a [`SharedIndexInformer`] with its object type erased, for informer
//! factories.

use std::any::Any;
use std::fmt;

use futures::future::BoxFuture;
use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use crate::error::InformerError;
use crate::informer::SharedIndexInformer;
use crate::metrics::InformerStats;
use crate::sync::HasSynced;

/// A [`SharedIndexInformer`] of any object type, for code that keeps informers of different
/// types together (an informer factory): run, wait for sync and stop them uniformly, and get
/// the typed informer back with `downcast`.
pub trait AnyInformer: HasSynced + Send + Sync + fmt::Debug + 'static {
    /// The informer's name.
    fn name(&self) -> &str;
    /// The Rust type name of the objects.
    fn object_type(&self) -> &'static str;
    /// [`SharedIndexInformer::run`], boxed.
    fn run_boxed(
        &self,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), InformerError>>;
    /// Whether `run` was called.
    fn has_started(&self) -> bool;
    /// Whether the informer ran and stopped.
    fn is_stopped(&self) -> bool;
    /// The resource version the informer last synced to.
    fn last_sync_resource_version(&self) -> String;
    /// [`SharedIndexInformer::stats`].
    fn stats(&self) -> InformerStats;
    /// The informer as [`Any`], for downcasting.
    fn as_any(&self) -> &dyn Any;
}

impl dyn AnyInformer {
    /// The typed informer, if this is a `SharedIndexInformer<K>`.
    pub fn downcast<K: Resource + Send + Sync + 'static>(&self) -> Option<SharedIndexInformer<K>> {
        self.as_any()
            .downcast_ref::<SharedIndexInformer<K>>()
            .cloned()
    }
}

impl<K: Resource + Send + Sync + 'static> AnyInformer for SharedIndexInformer<K> {
    fn name(&self) -> &str {
        SharedIndexInformer::name(self)
    }
    fn object_type(&self) -> &'static str {
        std::any::type_name::<K>()
    }
    fn run_boxed(
        &self,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), InformerError>> {
        Box::pin(self.run(shutdown))
    }
    fn has_started(&self) -> bool {
        SharedIndexInformer::has_started(self)
    }
    fn is_stopped(&self) -> bool {
        SharedIndexInformer::is_stopped(self)
    }
    fn last_sync_resource_version(&self) -> String {
        SharedIndexInformer::last_sync_resource_version(self)
    }
    fn stats(&self) -> InformerStats {
        SharedIndexInformer::stats(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
