//! The one place an informer calls user code that may panic: handlers (from each listener's task,
//! or from the process function of a [`new_informer`](crate::new_informer)) and a
//! [`Controller`](crate::Controller)'s process function. A panic is caught here, logged or turned
//! into an error, and the caller goes on (client-go's `HandleCrash` without the crash).
//! Index functions are the store's user code: kcache-store catches their panics.

use std::panic::{AssertUnwindSafe, catch_unwind};

use kcache_store::{BoxError, panic_message};

use crate::handler::{InformerEvent, ResourceEventHandler};

/// Runs `f`, turning a panic into its message.
fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(&*payload))
}

/// Calls the method of `handler` that `event` names; a panic is logged and the handler keeps
/// receiving later notifications.
pub(crate) fn call_handler<K, H: ResourceEventHandler<K> + ?Sized>(
    informer: &str,
    handler: &H,
    event: &InformerEvent<K>,
) {
    if let Err(panic) = caught(|| event.dispatch(handler)) {
        tracing::error!(
            informer,
            panic,
            "event handler panicked; the handler keeps receiving notifications"
        );
    }
}

/// Calls a process function; a panic fails the batch with an error.
pub(crate) fn call_process(f: impl FnOnce() -> Result<(), BoxError>) -> Result<(), BoxError> {
    caught(f).unwrap_or_else(|panic| Err(panic.into()))
}
