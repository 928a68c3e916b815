//! [`ReflectorConfig`]: the settings of a reflector, held once by every layer that makes one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::backoff::BackoffConfig;
use crate::error::ReflectorError;
use crate::metrics::{NoopMetrics, ReflectorMetrics};
use crate::rate_limit::TokenBucket;

/// The default page size of a paginated list (client-go's pager).
pub const DEFAULT_PAGE_SIZE: u32 = 500;
/// The default minimum watch timeout: each watch asks for a timeout in `[min, 2·min)`.
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// Decides at each resync tick whether to resync.
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;
/// Receives the error of each failed [`Reflector::list_and_watch`](crate::Reflector::list_and_watch) round.
pub type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// Which resource version a reflector's first list asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListSemantic {
    /// `resourceVersion=0` (client-go's): any state the server holds, which an API server
    /// answers from its watch cache in one response whatever the page size (Kubernetes 1.34
    /// still ignores the limit there).
    #[default]
    Any,
    /// `resourceVersion=""`: the most recent state, in pages of the page size (Kubernetes 1.34
    /// serves these pages from a snapshot of its watch cache, KEP-4988). A store that applies a
    /// list page by page then never holds more than a few pages decoded.
    MostRecent,
}

/// How a [`Reflector`](crate::Reflector) lists, watches, resyncs and reports: one value, cheap to
/// clone, that an informer or a factory holds and hands down unchanged.
///
/// Start from [`ReflectorConfig::default`] (client-go's defaults) and chain the setters:
///
/// ```
/// use std::time::Duration;
/// use kcache_reflector::ReflectorConfig;
///
/// let config = ReflectorConfig::default()
///     .name("pods")
///     .page_size(1000)
///     .use_watch_list(true)
///     .min_watch_timeout(Duration::from_secs(60));
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct ReflectorConfig {
    pub(crate) name: Option<String>,
    pub(crate) page_size: u32,
    pub(crate) list_semantic: ListSemantic,
    pub(crate) min_watch_timeout: Duration,
    pub(crate) resync_period: Option<Duration>,
    pub(crate) should_resync: Option<ShouldResync>,
    pub(crate) use_watch_list: bool,
    pub(crate) error_handler: Option<WatchErrorHandler>,
    pub(crate) metrics: Arc<dyn ReflectorMetrics>,
    pub(crate) backoff: BackoffConfig,
    pub(crate) rate_limit: Option<Arc<TokenBucket>>,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        Self {
            name: None,
            page_size: 0,
            list_semantic: ListSemantic::Any,
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            resync_period: None,
            should_resync: None,
            use_watch_list: false,
            error_handler: None,
            metrics: Arc::new(NoopMetrics),
            backoff: BackoffConfig::default(),
            rate_limit: None,
        }
    }
}

impl fmt::Debug for ReflectorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("name", &self.name)
            .field("page_size", &self.page_size)
            .field("list_semantic", &self.list_semantic)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("resync_period", &self.resync_period)
            .field("should_resync", &self.should_resync.is_some())
            .field("use_watch_list", &self.use_watch_list)
            .field("watch_error_handler", &self.error_handler.is_some())
            .field("metrics", &self.metrics)
            .field("backoff", &self.backoff)
            .field("rate_limit", &self.rate_limit)
            .finish()
    }
}

impl ReflectorConfig {
    /// The name used in logs, spans and metrics (default: the object type's name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The page size of lists (client-go's `WatchListPageSize`). 0, the default, lets the
    /// reflector choose: 500 for the first list and for a server that paginated it, no limit for
    /// relists at a known resource version (served from the server's watch cache).
    #[must_use]
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// Which resource version the first list asks for (default [`ListSemantic::Any`],
    /// client-go's `resourceVersion=0`). Later relists are at the last synced resource version,
    /// or the most recent after it expired, as with the default; with
    /// [`ListSemantic::MostRecent`] they are paged too (with the default page size unless one
    /// is set), as client-go pages them after a paginated first list.
    #[must_use]
    pub fn list_semantic(mut self, semantic: ListSemantic) -> Self {
        self.list_semantic = semantic;
        self
    }

    /// The minimum watch timeout (default 5 minutes): each watch asks the server to end it after
    /// a random time in `[min, 2·min)`.
    #[must_use]
    pub fn min_watch_timeout(mut self, min: Duration) -> Self {
        self.min_watch_timeout = min;
        self
    }

    /// Calls the store's `resync` with this period while watching (zero: never, the default).
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = (!period.is_zero()).then_some(period);
        self
    }

    /// Asked at each resync tick; resync happens only when it returns true.
    #[must_use]
    pub fn should_resync(mut self, f: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.should_resync = Some(Arc::new(f));
        self
    }

    /// Uses the streaming watch-list (one watch with `sendInitialEvents=true`) instead of a
    /// paginated list to get the initial state, falling back to list + watch when the server
    /// refuses it. Default: off.
    #[must_use]
    pub fn use_watch_list(mut self, on: bool) -> Self {
        self.use_watch_list = on;
        self
    }

    /// Receives the error of each failed list-and-watch round (default: a `tracing` warning
    /// that records the error's chain of causes). The error's message says which step failed;
    /// why is in its [`source`](std::error::Error::source) chain, and
    /// [`ReflectorError::list_watch_error`] gives the list or watch error itself.
    #[must_use]
    pub fn watch_error_handler(
        mut self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.error_handler = Some(Arc::new(handler));
        self
    }

    /// The metrics provider, including the progress of each list page (default:
    /// [`NoopMetrics`]).
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<dyn ReflectorMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The metrics provider set with [`metrics`](Self::metrics) (an informer wraps it to count
    /// its own relists and watch restarts).
    pub fn metrics_provider(&self) -> &Arc<dyn ReflectorMetrics> {
        &self.metrics
    }

    /// The backoff between list-and-watch rounds and between retried watches.
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// Limits every list page and watch request the reflector sends with `limit`, a token
    /// bucket that may be shared by many reflectors (client-go's QPS and burst); none by default.
    #[must_use]
    pub fn rate_limit(mut self, limit: Arc<TokenBucket>) -> Self {
        self.rate_limit = Some(limit);
        self
    }
}
