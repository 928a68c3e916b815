//! [`ResourceEventHandler`]: what an informer notifies, closure handlers and the filtering handler.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kcache_store::MaybeTombstone;

/// Receives the changes an informer observes (client-go's `ResourceEventHandler`).
///
/// Methods are called from one task per handler, in the order the informer saw the changes;
/// they get shared references to `Arc`s and may clone the `Arc` to keep an object (never the
/// object itself). They should be quick (typically: put a key on a
/// [`WorkQueue`](kcache_workqueue::WorkQueue), see [`EnqueueHandler`](crate::EnqueueHandler)); a slow handler delays only itself. A panic in a
/// handler is caught and logged, and the handler keeps receiving later notifications.
///
/// Every method has an empty default, so a handler implements only what it needs.
pub trait ResourceEventHandler<K>: Send + Sync {
    /// An object was added. `is_in_initial_list` is true for objects of the informer's first list
    /// (and for the replay a handler added late receives), false for later adds, including
    /// objects that appear in a relist.
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// An object changed from `old` to `new`. Also called on resync and after a relist with
    /// `old` and `new` of the same resource version (often the same `Arc`).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object was deleted. When the deletion itself was missed (the watch was down and a
    /// relist found the object gone) this is a
    /// [`DeletedFinalStateUnknown`](kcache_store::DeletedFinalStateUnknown) tombstone with the
    /// last known state.
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        let _ = obj;
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Arc<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list);
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new);
    }
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        (**self).on_delete(obj);
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Box<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list);
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new);
    }
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        (**self).on_delete(obj);
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&MaybeTombstone<K>) + Send + Sync>;

/// A [`ResourceEventHandler`] made of closures; missing ones do nothing (client-go's
/// `ResourceEventHandlerFuncs`, and `ResourceEventHandlerDetailedFuncs` for the initial-list flag).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_informer::{ResourceEventHandler, ResourceEventHandlerFuncs};
///
/// let added = Arc::new(Mutex::new(Vec::new()));
/// let handler = ResourceEventHandlerFuncs::<Pod>::new()
///     .add_func({
///         let added = Arc::clone(&added);
///         move |pod, initial| added.lock().unwrap().push((pod.metadata.name.clone(), initial))
///     })
///     .delete_func(|pod| tracing::info!(tombstone = pod.is_tombstone(), "deleted"));
/// # let pod = |name: &str| Arc::new(Pod { metadata: kube_core::ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() });
/// handler.on_add(&pod("web"), true);
/// handler.on_update(&pod("web"), &pod("web")); // no update function: nothing happens
/// assert_eq!(*added.lock().unwrap(), [(Some("web".to_string()), true)]);
/// ```
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> fmt::Debug for ResourceEventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that does nothing until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the add closure: `(object, is_in_initial_list)`.
    #[must_use]
    pub fn add_func(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets the update closure: `(old, new)`.
    #[must_use]
    pub fn update_func(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the delete closure: the object or its tombstone.
    #[must_use]
    pub fn delete_func(mut self, f: impl Fn(&MaybeTombstone<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}

/// Passes on only the notifications about objects `filter` accepts (client-go's
/// `FilteringResourceEventHandler`). An update that crosses the filter becomes an add (the new
/// object now passes) or a delete (the old object passed, the new one does not). A tombstone is
/// filtered by its last known object.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_informer::{FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs};
///
/// let added = Arc::new(Mutex::new(Vec::new()));
/// let running_only = FilteringResourceEventHandler::new(
///     |pod: &Pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"),
///     ResourceEventHandlerFuncs::new().add_func({
///         let added = Arc::clone(&added);
///         move |pod: &Arc<Pod>, _| added.lock().unwrap().push(pod.metadata.name.clone())
///     }),
/// );
/// # let pod = |name: &str, phase: &str| Arc::new(Pod {
/// #     metadata: kube_core::ObjectMeta { name: Some(name.into()), ..Default::default() },
/// #     status: Some(k8s_openapi::api::core::v1::PodStatus { phase: Some(phase.into()), ..Default::default() }),
/// #     ..Default::default()
/// # });
/// running_only.on_add(&pod("a", "Pending"), false);
/// running_only.on_add(&pod("b", "Running"), false);
/// // a turns Running: the update crosses the filter and reaches the handler as an add.
/// running_only.on_update(&pod("a", "Pending"), &pod("a", "Running"));
/// assert_eq!(*added.lock().unwrap(), [Some("b".to_string()), Some("a".to_string())]);
/// ```
pub struct FilteringResourceEventHandler<K, H> {
    filter: Box<dyn Fn(&K) -> bool + Send + Sync>,
    handler: H,
}

impl<K, H: fmt::Debug> fmt::Debug for FilteringResourceEventHandler<K, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringResourceEventHandler")
            .field("handler", &self.handler)
            .finish_non_exhaustive()
    }
}

impl<K, H> FilteringResourceEventHandler<K, H> {
    /// Wraps `handler` so that it sees only objects for which `filter` returns true.
    pub fn new(filter: impl Fn(&K) -> bool + Send + Sync + 'static, handler: H) -> Self {
        Self {
            filter: Box::new(filter),
            handler,
        }
    }

    /// The wrapped handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }
}

impl<K: Send + Sync + 'static, H: ResourceEventHandler<K>> ResourceEventHandler<K>
    for FilteringResourceEventHandler<K, H>
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self
                .handler
                .on_delete(&MaybeTombstone::Object(Arc::clone(old))),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        if (self.filter)(obj.object()) {
            self.handler.on_delete(obj);
        }
    }
}

/// One notification of an informer: what an [`EventStream`](crate::EventStream) yields and what a
/// [`ResourceEventHandler`] is called with. Objects are shared `Arc`s.
#[derive(Debug)]
pub enum InformerEvent<K> {
    /// An object was added ([`ResourceEventHandler::on_add`]).
    Add {
        /// The object.
        obj: Arc<K>,
        /// Whether it belongs to the initial list (or a late handler's replay).
        is_in_initial_list: bool,
    },
    /// An object changed ([`ResourceEventHandler::on_update`]).
    Update {
        /// The previous state.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// An object was deleted ([`ResourceEventHandler::on_delete`]).
    Delete(MaybeTombstone<K>),
}

impl<K> Clone for InformerEvent<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => Self::Add {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Self::Delete(obj) => Self::Delete(obj.clone()),
        }
    }
}

impl<K> InformerEvent<K> {
    /// The object the event is about (the new state of an update, the last state of a deletion).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Add { obj, .. } => obj,
            Self::Update { new, .. } => new,
            Self::Delete(obj) => obj.object(),
        }
    }

    /// Calls the matching method of `handler`.
    pub fn dispatch<H: ResourceEventHandler<K> + ?Sized>(&self, handler: &H) {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => handler.on_add(obj, *is_in_initial_list),
            Self::Update { old, new } => handler.on_update(old, new),
            Self::Delete(obj) => handler.on_delete(obj),
        }
    }

    /// Whether this is an add of the initial list (counted by a registration's `has_synced`).
    pub(crate) fn is_initial_add(&self) -> bool {
        matches!(
            self,
            Self::Add {
                is_in_initial_list: true,
                ..
            }
        )
    }
}

/// Per-handler options of [`SharedIndexInformer::add_event_handler_with_options`](crate::SharedIndexInformer::add_event_handler_with_options) (client-go's
/// `HandlerOptions`).
#[derive(Debug, Clone, Default)]
pub struct HandlerOptions {
    pub(crate) resync_period: Option<Duration>,
    pub(crate) name: Option<String>,
}

impl HandlerOptions {
    /// Options with the informer's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The handler's resync period (default: the informer's). Zero: never. Periods under one
    /// second become one second; see [`SharedIndexInformer::add_event_handler_with_resync_period`](crate::SharedIndexInformer::add_event_handler_with_resync_period).
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }

    /// Sets the handler's name (the `handler` label of its metrics).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}
