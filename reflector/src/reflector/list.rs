//! Listing: the paginated list (client-go's pager) that replaces the store.

use std::sync::Arc;

use kcache_store::StoreError;
use kube_core::Resource;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Reflector;
use crate::config::{DEFAULT_PAGE_SIZE, ListSemantic};
use crate::error::{ReflectorError, is_expired, is_too_large_resource_version};
use crate::lister_watcher::{ListOptions, ListWatchError, ListerWatcher};
use crate::reflector_store::{PagedReplace, ReflectorStore};

/// Where a list's pages go: gathered for one `replace`, or given to the store one by one as
/// they arrive (a store that takes a replace in pages).
enum Pages<'s, K> {
    Gathered(Vec<Arc<K>>),
    Given {
        replace: Box<dyn PagedReplace<K> + 's>,
        count: usize,
    },
}

impl<K> Pages<'_, K> {
    /// The objects listed so far.
    fn count(&self) -> usize {
        match self {
            Self::Gathered(items) => items.len(),
            Self::Given { count, .. } => *count,
        }
    }

    /// Takes the next page: gathered, or given to the store once it has room.
    async fn take(&mut self, mut items: Vec<Arc<K>>) -> Result<(), StoreError> {
        match self {
            Self::Gathered(gathered) if gathered.is_empty() => *gathered = items,
            Self::Gathered(gathered) => gathered.append(&mut items),
            Self::Given { replace, count } => {
                replace.ready().await;
                *count += items.len();
                replace.page(items)?;
            }
        }
        Ok(())
    }

    /// Ends the list at `resource_version`: the store is replaced.
    fn finish<S: ReflectorStore<K> + ?Sized>(
        self,
        store: &S,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        match self {
            Self::Gathered(items) => store.replace(items, resource_version),
            Self::Given { replace, .. } => replace.finish(resource_version),
        }
    }
}

/// Why a paginated list failed: the list, or the store given its pages.
enum PagerError {
    List(ListWatchError),
    Store(StoreError),
}

impl From<ListWatchError> for PagerError {
    fn from(err: ListWatchError) -> Self {
        Self::List(err)
    }
}

/// The result of a paginated list.
struct Listed<'s, K> {
    pages: Pages<'s, K>,
    resource_version: String,
    paginated: bool,
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
    S: ReflectorStore<K> + ?Sized,
{
    /// Lists (with pagination) and replaces the store. `Ok(false)` when shut down meanwhile.
    pub(super) async fn list(&self, shutdown: &CancellationToken) -> Result<bool, ReflectorError> {
        let resource_version = self.relist_resource_version();
        let page_size = {
            let state = self.state.lock();
            if self.config.page_size != 0 {
                self.config.page_size
            } else if state.paginated_result
                || self.config.list_semantic == ListSemantic::MostRecent
            {
                // A reflector listing for a store that takes pages keeps paging its relists.
                DEFAULT_PAGE_SIZE
            } else if !resource_version.is_empty() && resource_version != "0" {
                0
            } else {
                DEFAULT_PAGE_SIZE
            }
        };
        let span = tracing::debug_span!("list", name = %self.name, resource_version = %resource_version, page_size);
        let started = Instant::now();
        let listing = async {
            let mut result = self.pager_list(&resource_version, page_size).await;
            if let Err(PagerError::List(err)) = &result
                && (is_expired(err) || is_too_large_resource_version(err))
            {
                tracing::debug!(
                    error = err as &dyn std::error::Error,
                    "resource version unavailable, listing at the newest"
                );
                self.set_resource_version_unavailable(true);
                result = self
                    .pager_list(&self.relist_resource_version(), page_size)
                    .await;
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
            Err(PagerError::List(source)) => {
                self.config.metrics.list_failed(&self.name);
                return Err(ReflectorError::List {
                    name: self.name.clone(),
                    source,
                });
            }
            Err(PagerError::Store(source)) => return Err(self.sync_error(source)),
        };
        if resource_version == "0" && listed.paginated {
            self.state.lock().paginated_result = true;
        }
        self.set_resource_version_unavailable(false);
        let count = listed.pages.count();
        listed
            .pages
            .finish(&*self.store, &listed.resource_version)
            .map_err(|source| self.sync_error(source))?;
        self.set_last_sync_resource_version(&listed.resource_version);
        self.config
            .metrics
            .list_completed(&self.name, started.elapsed(), count);
        tracing::debug!(name = %self.name, items = count, resource_version = %listed.resource_version, "listed");
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
    ) -> Result<Listed<'_, K>, PagerError> {
        let first = ListOptions {
            resource_version: (!resource_version.is_empty()).then(|| resource_version.to_owned()),
            limit: (limit > 0).then_some(limit),
            ..ListOptions::default()
        };
        let mut options = first.clone();
        let mut pages = self.pages();
        let mut paginated = false;
        let mut first_resource_version = None;
        loop {
            self.throttle().await;
            match self.lister_watcher.list(&options).await {
                Ok(page) => {
                    let resource_version =
                        first_resource_version.get_or_insert(page.resource_version);
                    pages.take(page.items).await.map_err(PagerError::Store)?;
                    self.config.metrics.list_page(
                        &self.name,
                        pages.count(),
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
                                pages,
                                resource_version: std::mem::take(resource_version),
                                paginated,
                            });
                        }
                    }
                }
                Err(err) if options.continue_token.is_some() && is_expired(&err) => {
                    tracing::debug!(
                        error = &err as &dyn std::error::Error,
                        "continue token expired, listing in full"
                    );
                    // Pages already given stay given: the full list is of the same snapshot.
                    drop(pages);
                    let full = ListOptions {
                        limit: None,
                        ..first
                    };
                    self.throttle().await;
                    let page = self.lister_watcher.list(&full).await?;
                    let mut pages = self.pages();
                    pages.take(page.items).await.map_err(PagerError::Store)?;
                    self.config
                        .metrics
                        .list_page(&self.name, pages.count(), None);
                    return Ok(Listed {
                        pages,
                        resource_version: page.resource_version,
                        paginated,
                    });
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Where the pages of a list go: to the store as they arrive if it takes a replace in
    /// pages, else gathered.
    fn pages(&self) -> Pages<'_, K> {
        match self.store.replace_in_pages() {
            Some(replace) => Pages::Given { replace, count: 0 },
            None => Pages::Gathered(Vec::new()),
        }
    }

    fn sync_error(&self, source: StoreError) -> ReflectorError {
        ReflectorError::Sync {
            name: self.name.clone(),
            source,
        }
    }
}
