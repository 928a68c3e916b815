//! [`ListWatch`]: a [`ListerWatcher`] built from two closures.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;

use crate::lister_watcher::{
    ListFuture, ListOptions, ListPage, ListWatchError, ListerWatcher, WatchFuture, WatchStream,
};

type ListFn<K> = Arc<dyn Fn(ListOptions) -> ListFuture<'static, K> + Send + Sync>;
type WatchFn<K> = Arc<dyn Fn(ListOptions) -> WatchFuture<'static, K> + Send + Sync>;

/// A [`ListerWatcher`] made of a list closure and a watch closure (client-go's `cache.ListWatch`).
///
/// ```
/// use futures::stream;
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_reflector::{ListOptions, ListPage, ListWatch, ListWatchError, ListerWatcher, WatchStream};
///
/// let lw = ListWatch::<Pod>::new(
///     |_options| async {
///         Ok(ListPage { items: vec![], resource_version: "1".into(), continue_token: None, remaining_item_count: None })
///     },
///     |_options| async { Ok(Box::pin(stream::empty()) as WatchStream<Pod>) },
/// );
/// let page = futures::executor::block_on(lw.list(&ListOptions::default()))?;
/// assert_eq!((page.items.len(), page.resource_version.as_str()), (0, "1"));
/// # Ok::<(), ListWatchError>(())
/// ```
pub struct ListWatch<K> {
    list: ListFn<K>,
    watch: WatchFn<K>,
}

impl<K> Clone for ListWatch<K> {
    fn clone(&self) -> Self {
        Self {
            list: Arc::clone(&self.list),
            watch: Arc::clone(&self.watch),
        }
    }
}

impl<K> fmt::Debug for ListWatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListWatch").finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> ListWatch<K> {
    /// A lister-watcher calling `list` for each page and `watch` for each watch.
    pub fn new<LF, LFut, WF, WFut>(list: LF, watch: WF) -> Self
    where
        LF: Fn(ListOptions) -> LFut + Send + Sync + 'static,
        LFut: Future<Output = Result<ListPage<K>, ListWatchError>> + Send + 'static,
        WF: Fn(ListOptions) -> WFut + Send + Sync + 'static,
        WFut: Future<Output = Result<WatchStream<K>, ListWatchError>> + Send + 'static,
    {
        Self {
            list: Arc::new(move |options| list(options).boxed()),
            watch: Arc::new(move |options| watch(options).boxed()),
        }
    }
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for ListWatch<K> {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        (self.list)(options.clone())
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        (self.watch)(options.clone())
    }
}
