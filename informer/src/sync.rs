//! [`HasSynced`] and [`wait_for_cache_sync`].

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::processor::ResourceEventHandlerRegistration;

/// How often [`wait_for_cache_sync`] checks: 10 ms (client-go checks every 100 ms, which adds
/// up to 100 ms to every start-up; a check takes one short lock per informer).
pub const SYNC_POLL_PERIOD: Duration = Duration::from_millis(10);

/// Something that has an initial sync: an informer, a handler registration, a controller, or
/// any `Fn() -> bool`.
pub trait HasSynced: Send + Sync {
    /// Whether the initial sync is done.
    fn has_synced(&self) -> bool;
}

impl<F: Fn() -> bool + Send + Sync> HasSynced for F {
    fn has_synced(&self) -> bool {
        self()
    }
}

impl HasSynced for ResourceEventHandlerRegistration {
    fn has_synced(&self) -> bool {
        ResourceEventHandlerRegistration::has_synced(self)
    }
}

impl<K: kube_core::Resource + Send + Sync + 'static> HasSynced for crate::Controller<K> {
    fn has_synced(&self) -> bool {
        crate::Controller::has_synced(self)
    }
}

/// Waits until every one of `synced` has synced (true), or `shutdown` fires first (false),
/// checking every [`SYNC_POLL_PERIOD`] (client-go's `WaitForCacheSync`).
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
    let mut interval = tokio::time::interval(SYNC_POLL_PERIOD);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if synced.iter().all(|s| s.has_synced()) {
            return true;
        }
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return false,
            _ = interval.tick() => {}
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
