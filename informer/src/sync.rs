//! [`HasSynced`] and [`wait_for_cache_sync`].

use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How often [`wait_for_cache_sync`] checks a [`HasSynced`] that does not
/// [signal](HasSynced::signals_sync) its changes (a plain `Fn() -> bool`): 10 ms. Informers,
/// controllers and registrations signal, so waiting for them wakes on the change itself.
pub const SYNC_POLL_PERIOD: Duration = Duration::from_millis(10);

/// Woken whenever something of this crate may have become synced: a controller's queue handed
/// out its initial list, or a handler took its last initial item. Waiters re-check their own
/// conditions, so one process-wide signal serves every informer; it fires a bounded number of
/// times per informer (once per queue, once per registration).
static SYNC_CHANGED: Notify = Notify::const_new();

/// Wakes every [`wait_for_cache_sync`] to re-check.
pub(crate) fn sync_changed() {
    SYNC_CHANGED.notify_waiters();
}

/// Something that has an initial sync: an informer, a handler registration, a controller, or
/// any `Fn() -> bool`.
pub trait HasSynced: Send + Sync {
    /// Whether the initial sync is done.
    fn has_synced(&self) -> bool;

    /// Whether a change of [`has_synced`](HasSynced::has_synced) to true wakes
    /// [`wait_for_cache_sync`] (true for this crate's informers, controllers and registrations);
    /// when false, waiting polls every [`SYNC_POLL_PERIOD`].
    fn signals_sync(&self) -> bool {
        false
    }
}

impl<F: Fn() -> bool + Send + Sync> HasSynced for F {
    fn has_synced(&self) -> bool {
        self()
    }
}

/// Waits until every one of `synced` has synced (true), or `shutdown` fires first (false)
/// (client-go's `WaitForCacheSync`). It wakes when an informer, controller or registration
/// becomes synced; only plain closures are polled, every [`SYNC_POLL_PERIOD`]. For a deadline,
/// cancel `shutdown` from a timer (or use the factory's `wait_for_cache_sync_timeout`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use tokio_util::sync::CancellationToken;
/// let ready = AtomicBool::new(true);
/// let check = || ready.load(Ordering::Relaxed);
/// assert!(kcache_informer::wait_for_cache_sync(&CancellationToken::new(), &[&check]).await);
/// # }
/// ```
pub async fn wait_for_cache_sync(shutdown: &CancellationToken, synced: &[&dyn HasSynced]) -> bool {
    let poll = !synced.iter().all(|s| s.signals_sync());
    loop {
        let changed = SYNC_CHANGED.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if synced.iter().all(|s| s.has_synced()) {
            return true;
        }
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return false,
            () = &mut changed => {}
            () = tokio::time::sleep(SYNC_POLL_PERIOD), if poll => {}
        }
    }
}

/// [`wait_for_cache_sync`] with log lines naming the controller (client-go's
/// `WaitForNamedCacheSync`).
pub async fn wait_for_named_cache_sync(
    controller: &str,
    shutdown: &CancellationToken,
    synced: &[&dyn HasSynced],
) -> bool {
    tracing::info!(controller, "waiting for caches to sync");
    let ok = wait_for_cache_sync(shutdown, synced).await;
    if ok {
        tracing::info!(controller, "caches are synced");
    } else {
        tracing::error!(controller, "unable to sync caches");
    }
    ok
}
