//! The internal subscription of the in-server controllers (controllers/): the changes that may
//! concern an object's lifecycle, pushed while the write that makes them holds the state, so
//! that once the cache has reached a resource version every such change up to it is in the
//! subscriber's channel.

use std::sync::Arc;

use kube_core::Resource;
use tokio::sync::{Notify, mpsc};

use super::snapshots::Objects;
use super::{CacheState, WatchCache};
use crate::deletion::is_namespace;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::storage::EventType;

/// One change a lifecycle subscription receives.
#[derive(Debug, Clone)]
pub(crate) enum LifecycleEvent {
    /// The object was added or changed in a way that may concern its lifecycle.
    Upsert(Arc<Object>),
    /// The object was deleted.
    Delete(Arc<Object>),
    /// A relist: the cache now holds exactly these objects.
    Replace(Objects),
}

/// A new lifecycle subscription: the cache's objects when it began, then the changes since.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    /// The objects when the subscription began.
    pub(crate) objects: Objects,
    /// The changes since; it ends when the cache drops the subscription (too slow, closed,
    /// [`WatchCache::terminate_all_watchers`]).
    pub(crate) rx: mpsc::Receiver<LifecycleEvent>,
}

/// A registered subscriber.
pub(super) struct Subscriber {
    tx: mpsc::Sender<LifecycleEvent>,
    /// Woken after every change sent and when the subscription is dropped.
    notify: Arc<Notify>,
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.notify.notify_one();
    }
}

impl WatchCache {
    /// Subscribes to the changes that may concern an object's lifecycle (see
    /// `concerns_lifecycle`); `notify` is woken after each and when the subscription ends.
    pub(crate) fn subscribe_lifecycle(&self, notify: Arc<Notify>) -> Lifecycle {
        let mut state = self.state.write();
        let (tx, rx) = mpsc::channel(self.config.lifecycle_buffer.max(1));
        state.lifecycle.push(Subscriber { tx, notify });
        Lifecycle {
            objects: state.objects.clone(),
            rx,
        }
    }

    /// Ends every lifecycle subscription.
    pub(super) fn end_lifecycle_subscriptions(&self) {
        self.state.write().lifecycle.clear();
    }
}

/// Sends `event` to every subscriber, dropping those that are gone or too slow.
pub(super) fn publish(state: &mut CacheState, event: &LifecycleEvent) {
    state.lifecycle.retain(|s| {
        let sent = s.tx.try_send(event.clone()).is_ok();
        if sent {
            s.notify.notify_one();
        }
        sent
    });
}

/// Whether a change may concern an object's lifecycle, that is what the garbage collector,
/// the namespace controller and the pod reaper act on: an object added or deleted, any change
/// of a namespace, of an object being deleted (before or after), of its finalizers or of its
/// owner references. Other modifications (labels, annotations, spec, status) cannot give them
/// anything to do.
pub(super) fn concerns_lifecycle(
    def: &ResourceDef,
    event_type: EventType,
    obj: &Object,
    previous: Option<&Object>,
) -> bool {
    let Some(previous) = previous else {
        return true;
    };
    if event_type != EventType::Modified || is_namespace(def) {
        return true;
    }
    let (new, old) = (obj.meta(), previous.meta());
    new.deletion_timestamp.is_some()
        || old.deletion_timestamp.is_some()
        || new.finalizers != old.finalizers
        || new.owner_references != old.owner_references
}
