//! [`Reflector`]: keeps a [`Store`] equal to the server's state of one resource.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kcache_store::{Indexer, KnownObjects, Store, TransformFunc, meta_namespace_key};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::backoff::{Backoff, BackoffConfig};
use crate::error::{
    ReflectorError, is_expired, is_too_large_resource_version, is_too_many_requests,
    is_watch_error_retriable,
};
use crate::lister_watcher::{
    ListOptions, ListWatchError, ListerWatcher, ResourceVersionMatch, WatchEvent, WatchStream,
};
use crate::metrics::{NoopMetrics, ReflectorMetrics};

/// The default page size of a paginated list (client-go's pager).
pub const DEFAULT_PAGE_SIZE: u32 = 500;
/// The default minimum watch timeout: each watch asks for a timeout in `[min, 2·min)`.
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);
/// A watch that ends sooner than this without any event is a "very short watch" error.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// Checks the type or kind of an object from a watch: `Err(reason)` skips the event (logged).
pub type TypeCheck<K> = Arc<dyn Fn(&K) -> Result<(), String> + Send + Sync>;
/// Decides at each resync tick whether to resync.
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;
/// Receives the error of each failed [`Reflector::list_and_watch`] round.
pub type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

struct Config<K> {
    name: String,
    page_size: u32,
    min_watch_timeout: Duration,
    resync_period: Option<Duration>,
    should_resync: Option<ShouldResync>,
    use_watch_list: bool,
    error_handler: Option<WatchErrorHandler>,
    metrics: Arc<dyn ReflectorMetrics>,
    type_check: Option<TypeCheck<K>>,
    backoff: BackoffConfig,
    transform: Option<TransformFunc<K>>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
}

impl<K> fmt::Debug for Config<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("name", &self.name)
            .field("page_size", &self.page_size)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("resync_period", &self.resync_period)
            .field("should_resync", &self.should_resync.is_some())
            .field("use_watch_list", &self.use_watch_list)
            .field("error_handler", &self.error_handler.is_some())
            .field("metrics", &self.metrics)
            .field("type_check", &self.type_check.is_some())
            .field("backoff", &self.backoff)
            .field("transform", &self.transform.is_some())
            .field("known_objects", &self.known_objects.is_some())
            .finish()
    }
}

#[derive(Debug, Default)]
struct SyncState {
    last_sync_resource_version: String,
    /// The last list or watch at `last_sync_resource_version` answered Expired or "too large".
    resource_version_unavailable: bool,
    /// The first list (at "0") came back in pages: the server does not serve lists from a cache.
    paginated_result: bool,
}

/// Keeps a [`Store`] equal to the server's state of one resource (client-go's `cache.Reflector`):
/// lists, replaces the store, then watches and applies every event, relisting or re-watching
/// through every failure until shut down.
///
/// Built with [`Reflector::builder`]. All methods take `&self`: share it in an [`Arc`] to read
/// [`last_sync_resource_version`](Self::last_sync_resource_version) while [`run`](Self::run) runs.
pub struct Reflector<K, L, S: ?Sized> {
    lister_watcher: L,
    store: Arc<S>,
    config: Config<K>,
    state: Mutex<SyncState>,
    backoff: Mutex<Backoff>,
}

impl<K, L, S: ?Sized> fmt::Debug for Reflector<K, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("lister_watcher", &std::any::type_name::<L>())
            .field("config", &self.config)
            .field("state", &*self.state.lock())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Reflector`]; see [`Reflector::builder`].
pub struct ReflectorBuilder<K, L, S: ?Sized> {
    lister_watcher: L,
    store: Arc<S>,
    config: Config<K>,
}

impl<K, L, S: ?Sized> fmt::Debug for ReflectorBuilder<K, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorBuilder")
            .field("lister_watcher", &std::any::type_name::<L>())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn default_name<K>() -> String {
    let full = std::any::type_name::<K>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

impl<K, L, S> ReflectorBuilder<K, L, S>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    S: Store<K> + ?Sized,
{
    /// The name used in logs, spans and metrics (default: the object type's name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.config.name = name.into();
        self
    }

    /// The page size of lists (client-go's `WatchListPageSize`). 0, the default, lets the
    /// reflector choose: 500 for the first list and for a server that paginated it, no limit for
    /// relists at a known resource version (served from the server's watch cache).
    #[must_use]
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.config.page_size = page_size;
        self
    }

    /// The minimum watch timeout (default 5 minutes): each watch asks the server to end it after
    /// a random time in `[min, 2·min)`.
    #[must_use]
    pub fn min_watch_timeout(mut self, min: Duration) -> Self {
        self.config.min_watch_timeout = min;
        self
    }

    /// Calls [`Store::resync`] with this period while watching (zero: never, the default).
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.config.resync_period = (!period.is_zero()).then_some(period);
        self
    }

    /// Asked at each resync tick; resync happens only when it returns true.
    #[must_use]
    pub fn should_resync(mut self, f: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.config.should_resync = Some(Arc::new(f));
        self
    }

    /// Uses the streaming watch-list (one watch with `sendInitialEvents=true`) instead of a
    /// paginated list to get the initial state, falling back to list + watch when the server
    /// refuses it. Default: off.
    #[must_use]
    pub fn use_watch_list(mut self, on: bool) -> Self {
        self.config.use_watch_list = on;
        self
    }

    /// Receives the error of each failed list-and-watch round (default: a `tracing` warning).
    #[must_use]
    pub fn watch_error_handler(
        mut self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.config.error_handler = Some(Arc::new(handler));
        self
    }

    /// The metrics provider (default: [`NoopMetrics`]).
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<dyn ReflectorMetrics>) -> Self {
        self.config.metrics = metrics;
        self
    }

    /// Checks the type or kind of every watched object; objects it rejects are skipped and
    /// logged (client-go's expected type / expected GVK). See [`expect_kind`](crate::expect_kind).
    #[must_use]
    pub fn expected_type(
        mut self,
        check: impl Fn(&K) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.config.type_check = Some(Arc::new(check));
        self
    }

    /// The backoff between list-and-watch rounds and between retried watches.
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.config.backoff = backoff;
        self
    }

    /// A transformer applied to objects collected in the temporary store of a streaming
    /// watch-list (so that the initial state is held transformed while it streams).
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.config.transform = Some(transform);
        self
    }

    /// The objects downstream of the store (usually the informer's indexer). A listed object
    /// whose key and resource version equal a known object's is replaced by the known `Arc`,
    /// so a relist frees the new copy page by page instead of holding two copies of every
    /// object. Known objects must be equal to what the server sent for the same resource
    /// version (a transformer, if any, must be idempotent).
    #[must_use]
    pub fn reuse_unchanged(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.config.known_objects = Some(known);
        self
    }

    /// Builds the reflector.
    pub fn build(self) -> Reflector<K, L, S> {
        let backoff = Backoff::new(self.config.backoff);
        if let Some(known) = &self.config.known_objects {
            self.lister_watcher.reuse_known_objects(Arc::clone(known));
        }
        Reflector {
            lister_watcher: self.lister_watcher,
            store: self.store,
            config: self.config,
            state: Mutex::new(SyncState::default()),
            backoff: Mutex::new(backoff),
        }
    }
}

/// How one watch stream ended.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum WatchEnd {
    /// The stream ended normally (server timeout, connection closed).
    Closed,
    /// Shutdown was requested.
    Stopped,
    /// The stream ended within a second without any event.
    VeryShort,
    /// An ERROR event, or an error the stream cannot recover from.
    Failed(ListWatchError),
    /// The initial-events-end bookmark arrived (watch-list, when asked to stop there).
    InitialEventsEnd,
}

/// The result of a paginated list.
struct Listed<K> {
    items: Vec<Arc<K>>,
    resource_version: String,
    paginated: bool,
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    S: Store<K> + ?Sized,
{
    /// A builder for a reflector that lists and watches with `lister_watcher` and keeps `store`
    /// in sync.
    pub fn builder(lister_watcher: L, store: Arc<S>) -> ReflectorBuilder<K, L, S> {
        ReflectorBuilder {
            lister_watcher,
            store,
            config: Config {
                name: default_name::<K>(),
                page_size: 0,
                min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
                resync_period: None,
                should_resync: None,
                use_watch_list: false,
                error_handler: None,
                metrics: Arc::new(NoopMetrics),
                type_check: None,
                backoff: BackoffConfig::default(),
                transform: None,
                known_objects: None,
            },
        }
    }

    /// The reflector's name.
    pub fn name(&self) -> &str {
        &self.config.name
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
        let span = tracing::debug_span!("reflector", name = %self.config.name);
        async {
            tracing::debug!("starting reflector");
            while !shutdown.is_cancelled() {
                if let Err(err) = self.list_and_watch(shutdown.clone()).await {
                    self.handle_error(&err);
                }
                if !self.backoff_sleep(&shutdown).await {
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
            None => tracing::warn!(name = %self.config.name, error = %err, "list and watch failed"),
        }
    }

    /// Sleeps for the next backoff delay; false if shut down meanwhile.
    async fn backoff_sleep(&self, shutdown: &CancellationToken) -> bool {
        let delay = self.backoff.lock().next();
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
                        name = %self.config.name, error = %err,
                        "the watch-list request failed, falling back to list and watch"
                    );
                    fallback_to_list = true;
                }
            }
        }
        if fallback_to_list && !self.list(&shutdown).await? {
            return Ok(());
        }
        tracing::debug!(name = %self.config.name, resource_version = %self.last_sync_resource_version(), "caches populated");
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
                tracing::trace!(name = %self.config.name, "resync");
                if let Err(source) = self.store.resync() {
                    return ReflectorError::Resync {
                        name: self.config.name.clone(),
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
        self.config
            .metrics
            .last_resource_version(&self.config.name, rv);
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
            "0".to_owned()
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

    /// Lists (with pagination) and replaces the store. `Ok(false)` when shut down meanwhile.
    async fn list(&self, shutdown: &CancellationToken) -> Result<bool, ReflectorError> {
        let resource_version = self.relist_resource_version();
        let page_size = {
            let state = self.state.lock();
            if self.config.page_size != 0 {
                self.config.page_size
            } else if state.paginated_result {
                DEFAULT_PAGE_SIZE
            } else if !resource_version.is_empty() && resource_version != "0" {
                0
            } else {
                DEFAULT_PAGE_SIZE
            }
        };
        let span = tracing::debug_span!("list", name = %self.config.name, resource_version = %resource_version, page_size);
        let started = Instant::now();
        let listing = async {
            let mut result = self.pager_list(&resource_version, page_size).await;
            if let Err(err) = &result
                && (is_expired(err) || is_too_large_resource_version(err))
            {
                tracing::debug!(error = %err, "resource version unavailable, listing at the newest");
                self.set_resource_version_unavailable(true);
                result = self.pager_list(&self.relist_resource_version(), page_size).await;
            }
            result
        }
        .instrument(span);
        let listed = tokio::select! {
            () = shutdown.cancelled() => return Ok(false),
            r = listing => r,
        };
        let listed = match listed {
            Ok(l) => l,
            Err(source) => {
                self.config.metrics.list_failed(&self.config.name);
                return Err(ReflectorError::List {
                    name: self.config.name.clone(),
                    source,
                });
            }
        };
        if resource_version == "0" && listed.paginated {
            self.state.lock().paginated_result = true;
        }
        self.set_resource_version_unavailable(false);
        let count = listed.items.len();
        self.store
            .replace(listed.items, &listed.resource_version)
            .map_err(|source| ReflectorError::Sync {
                name: self.config.name.clone(),
                source,
            })?;
        self.set_last_sync_resource_version(&listed.resource_version);
        self.config
            .metrics
            .list_completed(&self.config.name, started.elapsed(), count);
        tracing::debug!(name = %self.config.name, items = count, resource_version = %listed.resource_version, "listed");
        Ok(true)
    }

    /// Lists every page (client-go's pager): `limit` 0 means one unpaginated request; an expired
    /// continue token falls back to a full list at `resource_version`. The list's resource
    /// version is the first page's: the pages are a snapshot at it, and a watch from a later
    /// page's (a server may report its current one) would miss what changed in between.
    async fn pager_list(
        &self,
        resource_version: &str,
        limit: u32,
    ) -> Result<Listed<K>, ListWatchError> {
        let first = ListOptions {
            resource_version: (!resource_version.is_empty()).then(|| resource_version.to_owned()),
            limit: (limit > 0).then_some(limit),
            ..ListOptions::default()
        };
        let mut options = first.clone();
        let mut items = Vec::new();
        let mut paginated = false;
        let mut first_resource_version = None;
        loop {
            match self.lister_watcher.list(&options).await {
                Ok(mut page) => {
                    self.reuse_known(&mut page.items);
                    let resource_version =
                        first_resource_version.get_or_insert(page.resource_version);
                    if items.is_empty() {
                        items = page.items;
                    } else {
                        items.append(&mut page.items);
                    }
                    self.config.metrics.list_page(
                        &self.config.name,
                        items.len(),
                        page.remaining_item_count,
                    );
                    match page.continue_token.filter(|c| !c.is_empty()) {
                        Some(token) => {
                            paginated = true;
                            options.continue_token = Some(token);
                            options.resource_version = None;
                            options.resource_version_match = None;
                        }
                        None => {
                            return Ok(Listed {
                                items,
                                resource_version: std::mem::take(resource_version),
                                paginated,
                            });
                        }
                    }
                }
                Err(err) if options.continue_token.is_some() && is_expired(&err) => {
                    tracing::debug!(error = %err, "continue token expired, listing in full");
                    drop(items);
                    let full = ListOptions {
                        limit: None,
                        ..first
                    };
                    let mut page = self.lister_watcher.list(&full).await?;
                    self.reuse_known(&mut page.items);
                    self.config
                        .metrics
                        .list_page(&self.config.name, page.items.len(), None);
                    return Ok(Listed {
                        items: page.items,
                        resource_version: page.resource_version,
                        paginated,
                    });
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Replaces listed objects unchanged since the known copy by the known `Arc`.
    fn reuse_known(&self, items: &mut [Arc<K>]) {
        let Some(known) = &self.config.known_objects else {
            return;
        };
        for item in items {
            let Some(rv) = item.meta().resource_version.as_deref() else {
                continue;
            };
            let Ok(key) = meta_namespace_key(&**item) else {
                continue;
            };
            if let Some(existing) = known.get_by_key(&key)
                && existing.meta().resource_version.as_deref() == Some(rv)
            {
                *item = existing;
            }
        }
    }

    /// For a failed watch-list attempt: backs off on 429 / connection errors, switches to RV ""
    /// on Expired / too large. True when the watch-list should be retried.
    async fn watch_list_retriable(
        &self,
        err: &ListWatchError,
        shutdown: &CancellationToken,
    ) -> bool {
        if is_watch_error_retriable(err) {
            tracing::debug!(name = %self.config.name, error = %err, "watch-list backing off");
            self.backoff_sleep(shutdown).await;
            return true;
        }
        if is_expired(err) || is_too_large_resource_version(err) {
            self.set_resource_version_unavailable(true);
            return true;
        }
        false
    }

    /// The streaming watch-list: `Ok(Some(stream))` after the store was replaced with the
    /// initial events, the stream continuing as a plain watch; `Ok(None)` when shut down.
    async fn watch_list(
        &self,
        shutdown: &CancellationToken,
    ) -> Result<Option<WatchStream<K>>, ListWatchError> {
        loop {
            if shutdown.is_cancelled() {
                return Ok(None);
            }
            let mut temporary = Indexer::<K>::default();
            if let Some(t) = &self.config.transform {
                temporary = temporary.with_transform(Arc::clone(t));
            }
            let rv = self.rewatch_resource_version();
            let options = ListOptions {
                resource_version: (!rv.is_empty()).then_some(rv),
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                send_initial_events: Some(true),
                allow_watch_bookmarks: true,
                timeout_seconds: Some(self.watch_timeout_seconds()),
                ..ListOptions::default()
            };
            let span = tracing::debug_span!("watch_list", name = %self.config.name, resource_version = ?options.resource_version);
            let start = Instant::now();
            self.config.metrics.watch_started(&self.config.name);
            let opened = tokio::select! {
                () = shutdown.cancelled() => return Ok(None),
                r = self.lister_watcher.watch(&options).instrument(span.clone()) => r,
            };
            let mut stream = match opened {
                Ok(s) => s,
                Err(err) => {
                    if self.watch_list_retriable(&err, shutdown).await {
                        continue;
                    }
                    return Err(err);
                }
            };
            let mut resource_version = String::new();
            let end = self
                .handle_watch(
                    start,
                    &mut stream,
                    &temporary,
                    &mut |rv| rv.clone_into(&mut resource_version),
                    true,
                    shutdown,
                )
                .instrument(span)
                .await;
            match end {
                WatchEnd::InitialEventsEnd => {
                    self.set_resource_version_unavailable(false);
                    let items = temporary.list();
                    drop(temporary);
                    let count = items.len();
                    if let Err(err) = self.store.replace(items, &resource_version) {
                        tracing::warn!(name = %self.config.name, error = %err, "unable to sync watch-list result");
                        return Err(ListWatchError::Other(format!(
                            "unable to sync watch-list result: {err}"
                        )));
                    }
                    self.set_last_sync_resource_version(&resource_version);
                    self.config
                        .metrics
                        .list_completed(&self.config.name, start.elapsed(), count);
                    tracing::debug!(name = %self.config.name, items = count, resource_version = %resource_version, "watch-list synced");
                    return Ok(Some(stream));
                }
                WatchEnd::Stopped => return Ok(None),
                WatchEnd::Closed => {
                    tracing::debug!(name = %self.config.name, "watch-list closed before the initial events ended, restarting");
                }
                WatchEnd::VeryShort => {
                    return Err(ListWatchError::Other(format!(
                        "very short watch: {}: unexpected watch close - watch lasted less than a second and no items received",
                        self.config.name
                    )));
                }
                WatchEnd::Failed(err) => {
                    if self.watch_list_retriable(&err, shutdown).await {
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Watches from the last synced resource version (or continues `stream`) until the watch
    /// ends in a way that calls for a relist.
    async fn watch(
        &self,
        mut stream: Option<WatchStream<K>>,
        shutdown: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            let start = Instant::now();
            let rv = self.last_sync_resource_version();
            let span =
                tracing::debug_span!("watch", name = %self.config.name, resource_version = %rv);
            let mut current = match stream.take() {
                Some(s) => s,
                None => {
                    let options = ListOptions {
                        resource_version: (!rv.is_empty()).then_some(rv),
                        timeout_seconds: Some(self.watch_timeout_seconds()),
                        allow_watch_bookmarks: true,
                        ..ListOptions::default()
                    };
                    self.config.metrics.watch_started(&self.config.name);
                    let opened = tokio::select! {
                        () = shutdown.cancelled() => return Ok(()),
                        r = self.lister_watcher.watch(&options).instrument(span.clone()) => r,
                    };
                    match opened {
                        Ok(s) => s,
                        Err(err) if is_watch_error_retriable(&err) => {
                            tracing::debug!(name = %self.config.name, error = %err, "watch failed, backing off");
                            if !self.backoff_sleep(shutdown).await {
                                return Ok(());
                            }
                            continue;
                        }
                        Err(source) => {
                            return Err(ReflectorError::Watch {
                                name: self.config.name.clone(),
                                source,
                            });
                        }
                    }
                }
            };
            let end = self
                .handle_watch(
                    start,
                    &mut current,
                    &*self.store,
                    &mut |rv| self.set_last_sync_resource_version(rv),
                    false,
                    shutdown,
                )
                .instrument(span)
                .await;
            drop(current);
            match end {
                WatchEnd::Closed | WatchEnd::InitialEventsEnd => {}
                WatchEnd::Stopped => return Ok(()),
                WatchEnd::VeryShort => {
                    tracing::warn!(name = %self.config.name, "very short watch: unexpected watch close - watch lasted less than a second and no items received");
                    return Ok(());
                }
                WatchEnd::Failed(err) if is_expired(&err) => {
                    tracing::debug!(name = %self.config.name, error = %err, "watch closed");
                    return Ok(());
                }
                WatchEnd::Failed(err) if is_too_many_requests(&err) => {
                    tracing::debug!(name = %self.config.name, "watch returned 429, backing off");
                    if !self.backoff_sleep(shutdown).await {
                        return Ok(());
                    }
                }
                WatchEnd::Failed(err) => {
                    tracing::warn!(name = %self.config.name, error = %err, "watch ended with error");
                    return Ok(());
                }
            }
        }
    }

    /// Applies the events of one watch stream to `store`; `set_rv` follows every event.
    #[allow(clippy::too_many_arguments)]
    async fn handle_watch<T: Store<K> + ?Sized>(
        &self,
        start: Instant,
        stream: &mut WatchStream<K>,
        store: &T,
        set_rv: &mut (dyn FnMut(&str) + Send),
        exit_on_initial_events_end: bool,
        shutdown: &CancellationToken,
    ) -> WatchEnd {
        let name = self.config.name.as_str();
        let metrics = &*self.config.metrics;
        let mut events: u64 = 0;
        let end = loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => break WatchEnd::Stopped,
                next = stream.next() => next,
            };
            let event = match next {
                None => break WatchEnd::Closed,
                Some(Ok(event)) => event,
                Some(Err(ListWatchError::Connection(msg))) => {
                    tracing::debug!(name, error = %msg, "watch connection broke");
                    break WatchEnd::Closed;
                }
                Some(Err(err)) => {
                    if matches!(err, ListWatchError::Decode(_)) {
                        metrics.event_skipped(name, "undecodable");
                    }
                    break WatchEnd::Failed(err);
                }
            };
            let mut initial_events_end = false;
            let resource_version = match event {
                WatchEvent::Error(status) => break WatchEnd::Failed(ListWatchError::Api(status)),
                WatchEvent::Bookmark(bookmark) => {
                    initial_events_end = bookmark.is_initial_events_end();
                    if !bookmark.resource_version.is_empty() {
                        store.bookmark(&bookmark.resource_version);
                    }
                    bookmark.resource_version
                }
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)
                    if !self.acceptable(&obj) =>
                {
                    continue;
                }
                WatchEvent::Added(obj) => {
                    let rv = obj.meta().resource_version.clone().unwrap_or_default();
                    if let Err(err) = store.add(obj) {
                        tracing::error!(name, error = %err, "unable to add watch event object to store");
                    }
                    rv
                }
                WatchEvent::Modified(obj) => {
                    let rv = obj.meta().resource_version.clone().unwrap_or_default();
                    if let Err(err) = store.update(obj) {
                        tracing::error!(name, error = %err, "unable to update watch event object in store");
                    }
                    rv
                }
                WatchEvent::Deleted(obj) => {
                    let rv = obj.meta().resource_version.clone().unwrap_or_default();
                    if let Err(err) = store.delete(obj) {
                        tracing::error!(name, error = %err, "unable to delete watch event object from store");
                    }
                    rv
                }
            };
            if !resource_version.is_empty() {
                set_rv(&resource_version);
                store.update_resource_version(&resource_version);
            }
            events += 1;
            metrics.event_received(name);
            if exit_on_initial_events_end && initial_events_end {
                break WatchEnd::InitialEventsEnd;
            }
        };
        let elapsed = start.elapsed();
        metrics.watch_ended(name, elapsed, events);
        if matches!(end, WatchEnd::Closed) && elapsed < VERY_SHORT_WATCH && events == 0 {
            return WatchEnd::VeryShort;
        }
        tracing::trace!(name, events, "watch ended");
        end
    }

    /// Whether a watched object may be applied: the type check passes and it has a name.
    fn acceptable(&self, obj: &K) -> bool {
        let name = self.config.name.as_str();
        if let Some(check) = &self.config.type_check
            && let Err(reason) = check(obj)
        {
            tracing::error!(name, reason = %reason, "watch event object of unexpected type, skipped");
            self.config.metrics.event_skipped(name, "unexpected type");
            return false;
        }
        if obj.meta().name.as_deref().is_none_or(str::is_empty) {
            tracing::error!(
                name,
                "watch event object without metadata (no name), skipped"
            );
            self.config.metrics.event_skipped(name, "no metadata");
            return false;
        }
        true
    }
}
