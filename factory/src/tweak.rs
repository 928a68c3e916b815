//! [`Tweaked`]: a lister-watcher whose request options pass through the factory's tweak function.

use std::fmt;

use kcache_reflector::{ListFuture, ListOptions, ListerWatcher, WatchFuture};

use crate::options::TweakListOptions;

/// Wraps a [`ListerWatcher`], applying a [`TweakListOptions`] to every request.
pub(crate) struct Tweaked<L> {
    pub(crate) inner: L,
    pub(crate) tweak: Option<TweakListOptions>,
}

impl<L> fmt::Debug for Tweaked<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tweaked")
            .field("tweak", &self.tweak.is_some())
            .finish_non_exhaustive()
    }
}

impl<L> Tweaked<L> {
    fn options(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        if let Some(tweak) = &self.tweak {
            tweak(&mut options);
        }
        options
    }
}

impl<K, L: ListerWatcher<K>> ListerWatcher<K> for Tweaked<L> {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        let options = self.options(options);
        Box::pin(async move { self.inner.list(&options).await })
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        let options = self.options(options);
        Box::pin(async move { self.inner.watch(&options).await })
    }
}
