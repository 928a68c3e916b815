//! [`Reflector`]: keeps a store equal to the server's state of one resource. Listing is in
//! list.rs, watching (and the streaming watch-list) in watch.rs.

mod list;
mod watch;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use kube_core::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::backoff::Backoff;
use crate::config::{ListSemantic, ReflectorConfig};
use crate::error::{ReflectorError, retry_after};
use crate::lister_watcher::ListerWatcher;
use crate::reflector_store::ReflectorStore;

#[derive(Debug, Default)]
struct SyncState {
    last_sync_resource_version: String,
    /// The last list or watch at `last_sync_resource_version` answered Expired or "too large".
    resource_version_unavailable: bool,
    /// The first list (at "0") came back in pages: the server does not serve lists from a cache.
    paginated_result: bool,
}

/// Keeps a [`ReflectorStore`] equal to the server's state of one resource (client-go's `cache.Reflector`):
/// lists, replaces the store, then watches and applies every event, relisting or re-watching
/// through every failure until shut down.
///
/// Built with [`Reflector::new`] from a [`ReflectorConfig`]. All methods take `&self`: share it in an [`Arc`] to read
/// [`last_sync_resource_version`](Self::last_sync_resource_version) while [`run`](Self::run) runs.
pub struct Reflector<K, L, S: ?Sized> {
    lister_watcher: L,
    store: Arc<S>,
    name: String,
    config: ReflectorConfig,
    state: Mutex<SyncState>,
    backoff: Mutex<Backoff>,
    _object: PhantomData<fn() -> K>,
}

impl<K, L, S: ?Sized> fmt::Debug for Reflector<K, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("lister_watcher", &std::any::type_name::<L>())
            .field("name", &self.name)
            .field("config", &self.config)
            .field("state", &*self.state.lock())
            .finish_non_exhaustive()
    }
}

fn default_name<K>() -> String {
    let full = std::any::type_name::<K>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    S: ReflectorStore<K> + ?Sized,
{
    /// A reflector that lists and watches with `lister_watcher` and keeps `store` in sync,
    /// with the settings of `config`.
    pub fn new(lister_watcher: L, store: Arc<S>, config: ReflectorConfig) -> Self {
        let name = config.name.clone().unwrap_or_else(default_name::<K>);
        Reflector {
            lister_watcher,
            store,
            name,
            backoff: Mutex::new(Backoff::new(config.backoff)),
            config,
            state: Mutex::new(SyncState::default()),
            _object: PhantomData,
        }
    }

    /// The reflector's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store the reflector writes into.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }

    /// The lister-watcher.
    pub fn lister_watcher(&self) -> &L {
        &self.lister_watcher
    }

    /// The resource version of the last list, watch event or bookmark applied ("" before the
    /// first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.state.lock().last_sync_resource_version.clone()
    }

    /// Runs [`list_and_watch`](Self::list_and_watch) again and again, with the backoff between
    /// rounds, handing errors to the watch-error handler, until `shutdown` is cancelled.
    pub async fn run(&self, shutdown: CancellationToken) {
        let span = tracing::debug_span!("reflector", name = %self.name);
        async {
            tracing::debug!("starting reflector");
            while !shutdown.is_cancelled() {
                let mut wait_at_least = None;
                if let Err(err) = self.list_and_watch(shutdown.clone()).await {
                    if !shutdown.is_cancelled() {
                        self.config.metrics.relist(&self.name, err.relist_reason());
                    }
                    self.handle_error(&err);
                    wait_at_least = err.list_watch_error().and_then(retry_after);
                }
                if !self.backoff_sleep(&shutdown, wait_at_least).await {
                    break;
                }
            }
            tracing::debug!("reflector stopped");
        }
        .instrument(span)
        .await;
    }

    fn handle_error(&self, err: &ReflectorError) {
        match &self.config.error_handler {
            Some(handler) => handler(err),
            None => {
                tracing::warn!(name = %self.name, error = err as &dyn std::error::Error, "list and watch failed")
            }
        }
    }

    /// Waits for the client-side rate limit, if there is one, before a request.
    async fn throttle(&self) {
        if let Some(limit) = &self.config.rate_limit {
            limit.acquire().await;
        }
    }

    /// Sleeps for the next backoff delay, or for `retry_after` (what the server asked for) if
    /// that is longer; false if shut down meanwhile.
    async fn backoff_sleep(
        &self,
        shutdown: &CancellationToken,
        retry_after: Option<Duration>,
    ) -> bool {
        let backoff = self.backoff.lock().next();
        let delay = retry_after.map_or(backoff, |wait| wait.max(backoff));
        tokio::select! {
            () = shutdown.cancelled() => false,
            () = tokio::time::sleep(delay) => true,
        }
    }

    /// One round: gets the full state (list, or streaming watch-list), replaces the store, then
    /// watches until the watch cannot be resumed. Returns `Ok` when shut down or when the round
    /// ended in a way that calls for a relist; `Err` when the list or a watch failed.
    pub async fn list_and_watch(&self, shutdown: CancellationToken) -> Result<(), ReflectorError> {
        let mut stream = None;
        let mut fallback_to_list = !self.config.use_watch_list;
        if self.config.use_watch_list {
            match self.watch_list(&shutdown).await {
                Ok(None) => return Ok(()),
                Ok(Some(s)) => stream = Some(s),
                Err(err) => {
                    tracing::warn!(
                        name = %self.name, error = &err as &dyn std::error::Error,
                        "the watch-list request failed, falling back to list and watch"
                    );
                    fallback_to_list = true;
                }
            }
        }
        if fallback_to_list && !self.list(&shutdown).await? {
            return Ok(());
        }
        tracing::debug!(name = %self.name, resource_version = %self.last_sync_resource_version(), "caches populated");
        tokio::select! {
            r = self.watch(stream, &shutdown) => r,
            err = self.resync_loop() => Err(err),
        }
    }

    async fn resync_loop(&self) -> ReflectorError {
        let Some(period) = self.config.resync_period else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(period).await;
            if self.config.should_resync.as_ref().is_none_or(|f| f()) {
                tracing::trace!(name = %self.name, "resync");
                if let Err(source) = self.store.resync() {
                    return ReflectorError::Resync {
                        name: self.name.clone(),
                        source,
                    };
                }
            }
        }
    }

    fn set_last_sync_resource_version(&self, rv: &str) {
        {
            let mut state = self.state.lock();
            if state.last_sync_resource_version == rv {
                return;
            }
            rv.clone_into(&mut state.last_sync_resource_version);
        }
        self.config.metrics.last_resource_version(&self.name, rv);
    }

    fn set_resource_version_unavailable(&self, unavailable: bool) {
        self.state.lock().resource_version_unavailable = unavailable;
    }

    /// The resource version to list at: "" after Expired / too large, "0" at first, else the
    /// last synced one.
    fn relist_resource_version(&self) -> String {
        let state = self.state.lock();
        if state.resource_version_unavailable {
            String::new()
        } else if state.last_sync_resource_version.is_empty() {
            match self.config.list_semantic {
                ListSemantic::Any => "0".to_owned(),
                ListSemantic::MostRecent => String::new(),
            }
        } else {
            state.last_sync_resource_version.clone()
        }
    }

    /// The resource version to start a watch-list at: "" after Expired / too large, else the
    /// last synced one.
    fn rewatch_resource_version(&self) -> String {
        let state = self.state.lock();
        if state.resource_version_unavailable {
            String::new()
        } else {
            state.last_sync_resource_version.clone()
        }
    }

    fn watch_timeout_seconds(&self) -> u32 {
        let min = self.config.min_watch_timeout.as_secs_f64();
        let secs = min * (1.0 + rand::random::<f64>());
        // Saturating float-to-int conversion.
        secs as u32
    }
}
