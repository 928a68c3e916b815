//! [`MetadataListerWatcher`]: lists and watches only the metadata of a resource.

use std::fmt;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kcache_informer::list_watch_error;
use kcache_reflector::{
    Bookmark, ListFuture, ListOptions, ListPage, ListerWatcher, WatchEvent, WatchFuture,
};
use kube_client::Api;
use kube_client::api::{ListParams, VersionMatch, WatchParams};
use kube_core::{PartialObjectMeta, Resource};
use serde::de::DeserializeOwned;

/// Lists and watches `PartialObjectMeta<K>` through `Api<K>` (`Accept: …;as=PartialObjectMetadata`).
pub(crate) struct MetadataListerWatcher<K> {
    api: Api<K>,
}

impl<K> fmt::Debug for MetadataListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataListerWatcher")
            .finish_non_exhaustive()
    }
}

impl<K> MetadataListerWatcher<K> {
    pub(crate) fn new(api: Api<K>) -> Self {
        Self { api }
    }
}

impl<K> ListerWatcher<PartialObjectMeta<K>> for MetadataListerWatcher<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    fn list(&self, options: &ListOptions) -> ListFuture<'_, PartialObjectMeta<K>> {
        let params = ListParams {
            label_selector: options.label_selector.clone(),
            field_selector: options.field_selector.clone(),
            limit: options.limit,
            continue_token: options.continue_token.clone(),
            resource_version: options.resource_version.clone(),
            version_match: options.resource_version_match.map(|m| match m {
                kcache_reflector::ResourceVersionMatch::Exact => VersionMatch::Exact,
                kcache_reflector::ResourceVersionMatch::NotOlderThan => VersionMatch::NotOlderThan,
            }),
            ..ListParams::default()
        };
        Box::pin(async move {
            let list = self
                .api
                .list_metadata(&params)
                .await
                .map_err(list_watch_error)?;
            Ok(ListPage {
                items: list.items.into_iter().map(Arc::new).collect(),
                resource_version: list.metadata.resource_version.unwrap_or_default(),
                continue_token: list.metadata.continue_.filter(|c| !c.is_empty()),
                remaining_item_count: list.metadata.remaining_item_count,
            })
        })
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, PartialObjectMeta<K>> {
        let params = WatchParams {
            label_selector: options.label_selector.clone(),
            field_selector: options.field_selector.clone(),
            timeout: options.timeout_seconds,
            bookmarks: options.allow_watch_bookmarks,
            send_initial_events: options.send_initial_events == Some(true),
        };
        let version = options.resource_version.clone().unwrap_or_default();
        Box::pin(async move {
            let stream = self
                .api
                .watch_metadata(&params, &version)
                .await
                .map_err(list_watch_error)?;
            Ok(stream
                .map_ok(|event| match event {
                    kube_core::WatchEvent::Added(o) => WatchEvent::Added(Arc::new(o)),
                    kube_core::WatchEvent::Modified(o) => WatchEvent::Modified(Arc::new(o)),
                    kube_core::WatchEvent::Deleted(o) => WatchEvent::Deleted(Arc::new(o)),
                    kube_core::WatchEvent::Bookmark(b) => WatchEvent::Bookmark(Bookmark {
                        resource_version: b.metadata.resource_version,
                        annotations: b.metadata.annotations,
                    }),
                    kube_core::WatchEvent::Error(status) => WatchEvent::Error(*status),
                })
                .map_err(list_watch_error)
                .boxed())
        })
    }
}
