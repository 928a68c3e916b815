//! Handlers and process functions run with their panics caught and logged.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use kcache_store::{BoxError, MaybeTombstone};

use crate::handler::{InformerEvent, ResourceEventHandler};

/// Calls a handler, catching and logging its panics (a panicking handler must not take the
/// queue or the process loop down with it).
pub(crate) struct CatchPanics<H> {
    pub(crate) name: Arc<str>,
    pub(crate) handler: H,
}

/// A panic turned into an error.
pub(crate) fn panic_error(payload: &(dyn std::any::Any + Send)) -> BoxError {
    format!("panicked: {}", panic_message(payload)).into()
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}

pub(crate) fn log_panic(name: &str, payload: &(dyn std::any::Any + Send)) {
    tracing::error!(
        informer = name,
        panic = panic_message(payload),
        "event handler panicked; the handler keeps receiving notifications"
    );
}

impl<H> CatchPanics<H> {
    fn guard(&self, f: impl FnOnce(&H)) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| f(&self.handler))) {
            log_panic(&self.name, &*payload);
        }
    }
}

impl<K, H: ResourceEventHandler<K>> ResourceEventHandler<K> for CatchPanics<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        self.guard(|h| h.on_add(obj, is_in_initial_list));
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self.guard(|h| h.on_update(old, new));
    }
    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        self.guard(|h| h.on_delete(obj));
    }
}

/// Dispatches one event through [`CatchPanics`].
pub(crate) fn dispatch_catching<K, H: ResourceEventHandler<K> + ?Sized>(
    name: &str,
    event: &InformerEvent<K>,
    handler: &H,
) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| event.dispatch(handler))) {
        log_panic(name, &*payload);
    }
}
