//! Read-your-writes for controllers (client-go 1.36, KEP-5647): whether an informer's cache has
//! caught up with the resource version a write returned, and waiting for it with a deadline.
//!
//! The cache's resource version is the indexer's `last_store_sync_resource_version` (the last
//! version the informer applied: an event's, a relist's, a bookmark's). It is compared with the
//! written one by [`resource_version_reached`]: equal strings, or two well-formed decimal
//! versions ordered as the API server guarantees (apimachinery's `CompareResourceVersion`);
//! versions that cannot be ordered count as reached, as in client-go.

use std::time::Duration;

use kcache_store::{Store, resource_version_reached};
use kube_core::Resource;

use crate::error::InformerError;
use crate::informer::SharedIndexInformer;

impl<K: Resource + Send + Sync + 'static> SharedIndexInformer<K> {
    /// The resource version the cache has applied ("" before the first list): what
    /// [`has_caught_up_to`](Self::has_caught_up_to) compares (client-go's
    /// `LastStoreSyncResourceVersion`).
    pub fn last_store_sync_resource_version(&self) -> String {
        self.inner.indexer.last_store_sync_resource_version()
    }

    /// Whether the cache has applied everything up to `resource_version`, the version a write
    /// returned (client-go 1.36's consistency check): a controller that wrote an object reads
    /// the cache only once this is true, so it never acts on the state from before its own
    /// write. An empty `resource_version` is always reached; see the module notes for how
    /// versions compare.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::stream;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kcache_informer::{SharedIndexInformer, wait_for_cache_sync};
    /// use kcache_reflector::{ListPage, ListWatch, WatchStream};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let lw = ListWatch::<ConfigMap>::new(
    ///     |_| async { Ok(ListPage { items: vec![], resource_version: "5".into(), continue_token: None, remaining_item_count: None }) },
    ///     |_| async { Ok(Box::pin(stream::pending()) as WatchStream<ConfigMap>) },
    /// );
    /// let informer = SharedIndexInformer::builder(lw).build();
    /// let shutdown = CancellationToken::new();
    /// let task = tokio::spawn(informer.run(shutdown.clone()));
    /// assert!(wait_for_cache_sync(&shutdown, &[&informer]).await);
    /// assert!(informer.has_caught_up_to("5"));
    /// assert!(!informer.has_caught_up_to("6")); // a write the watch has not delivered yet
    /// shutdown.cancel();
    /// task.await.unwrap().unwrap();
    /// # }
    /// ```
    pub fn has_caught_up_to(&self, resource_version: &str) -> bool {
        resource_version_reached(&self.last_store_sync_resource_version(), resource_version)
    }

    /// Waits until the cache [has caught up](Self::has_caught_up_to) with `resource_version`,
    /// at most `timeout`; it wakes whenever the informer applies a batch of changes. Past the
    /// deadline (or if the informer never gets there) it is [`InformerError::StaleCache`].
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<(), InformerError> {
        let inner = &self.inner;
        let reached = async {
            loop {
                let advanced = inner.cache_advanced.notified();
                tokio::pin!(advanced);
                advanced.as_mut().enable();
                if self.has_caught_up_to(resource_version) {
                    return;
                }
                advanced.await;
            }
        };
        tokio::time::timeout(timeout, reached)
            .await
            .map_err(|_| InformerError::StaleCache {
                informer: inner.name.to_string(),
                wanted: resource_version.to_owned(),
                cache: self.last_store_sync_resource_version(),
                timeout,
            })
    }
}
