//! [`EnqueueHandler`]: the event handler every controller writes, putting keys on a work queue.

use std::fmt;
use std::sync::Arc;

use kcache_store::{MaybeTombstone, meta_namespace_key, namespace_key};
use kcache_workqueue::WorkQueue;
use kube_core::Resource;

use crate::handler::ResourceEventHandler;

type KeysOf<K> = Box<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// A [`ResourceEventHandler`] that adds keys to a [`WorkQueue`] on every add, update and delete
/// (tombstones included) — the handler of client-go's sample-controller, written once.
///
/// - [`key`](EnqueueHandler::key): the object's own key (`namespace/name`), for the resource the
///   controller reconciles.
/// - [`owner`](EnqueueHandler::owner): the key of the object's controlling owner of one kind
///   (owner reference with `controller: true`), for resources the controller owns: a change to a
///   Pod enqueues its ReplicaSet.
///
/// The work queue collapses keys already waiting, so every event may enqueue.
///
/// ```
/// # use std::sync::Arc;
/// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::api::apps::v1::ReplicaSet;
/// use kcache_informer::{EnqueueHandler, ResourceEventHandler};
/// use kcache_workqueue::WorkQueue;
///
/// let queue = WorkQueue::<String>::new();
/// let on_replica_sets = EnqueueHandler::<ReplicaSet>::key(queue.clone());
/// let on_pods = EnqueueHandler::<Pod>::owner(queue.clone(), "ReplicaSet");
/// # let meta = |name: &str, owner: Option<&str>| ObjectMeta {
/// #     namespace: Some("prod".into()),
/// #     name: Some(name.into()),
/// #     owner_references: owner.map(|o| vec![OwnerReference {
/// #         kind: "ReplicaSet".into(), name: o.into(), controller: Some(true), ..Default::default()
/// #     }]),
/// #     ..Default::default()
/// # };
/// # let replica_set = Arc::new(ReplicaSet { metadata: meta("web-7d9", None), ..Default::default() });
/// # let pod = Arc::new(Pod { metadata: meta("web-7d9-x2k", Some("web-7d9")), ..Default::default() });
/// // The ReplicaSet prod/web-7d9 and a pod it controls: both enqueue the ReplicaSet's key.
/// on_replica_sets.on_add(&replica_set, false);
/// on_pods.on_add(&pod, false);
/// assert_eq!(queue.len(), 1);
/// assert_eq!(futures::executor::block_on(queue.get()).as_deref(), Some("prod/web-7d9"));
/// ```
pub struct EnqueueHandler<K> {
    queue: WorkQueue<String>,
    keys_of: KeysOf<K>,
}

impl<K: Resource + 'static> EnqueueHandler<K> {
    /// Enqueues the key of the object itself.
    pub fn key(queue: WorkQueue<String>) -> Self {
        Self::keys_with(queue, |obj: &K| {
            meta_namespace_key(obj).ok().into_iter().collect()
        })
    }

    /// Enqueues the key (`namespace/name`) of the object's controlling owner when that owner is of
    /// kind `owner_kind`; objects without such an owner enqueue nothing.
    pub fn owner(queue: WorkQueue<String>, owner_kind: impl Into<String>) -> Self {
        let owner_kind = owner_kind.into();
        Self::keys_with(queue, move |obj: &K| {
            let namespace = obj.meta().namespace.as_deref();
            obj.meta()
                .owner_references
                .iter()
                .flatten()
                .filter(|o| o.controller == Some(true) && o.kind == owner_kind)
                .map(|o| namespace_key(namespace, &o.name))
                .collect()
        })
    }

    /// Enqueues whatever keys `keys_of` gives for the object.
    pub fn keys_with(
        queue: WorkQueue<String>,
        keys_of: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            queue,
            keys_of: Box::new(keys_of),
        }
    }

    fn enqueue(&self, obj: &K) {
        for key in (self.keys_of)(obj) {
            self.queue.add(key);
        }
    }
}

impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for EnqueueHandler<K> {
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        self.enqueue(obj);
    }

    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        self.enqueue(new);
    }

    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        self.enqueue(obj.object());
    }
}

impl<K> fmt::Debug for EnqueueHandler<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnqueueHandler")
            .field("queue", &self.queue.name())
            .finish_non_exhaustive()
    }
}
