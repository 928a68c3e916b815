//! [`ApiListerWatcher`]: a [`ListerWatcher`] over a kube-client [`Api`].

use std::fmt;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kcache_reflector::{
    Bookmark, ListFuture, ListOptions, ListPage, ListWatchError, ListerWatcher,
    ResourceVersionMatch, WatchEvent, WatchFuture,
};
use kube_client::Api;
use kube_client::api::{ListParams, VersionMatch, WatchParams};
use kube_core::Resource;
use serde::de::DeserializeOwned;

/// Lists and watches through a kube-client [`Api`]: the usual way to feed an informer from a
/// cluster (client-go's `NewListWatchFromClient`). Objects are decoded once by kube-client and
/// wrapped in an `Arc`.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_informer::{ApiListerWatcher, SharedIndexInformer};
/// use kube_client::{Api, Client};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default().await?;
/// let pods: Api<Pod> = Api::all(client);
/// let informer = SharedIndexInformer::builder(ApiListerWatcher::new(pods)).build();
/// # let _ = informer; Ok(()) }
/// ```
pub struct ApiListerWatcher<K> {
    api: Api<K>,
    field_selector: Option<String>,
    label_selector: Option<String>,
}

impl<K> fmt::Debug for ApiListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiListerWatcher")
            .field("field_selector", &self.field_selector)
            .field("label_selector", &self.label_selector)
            .finish_non_exhaustive()
    }
}

impl<K> ApiListerWatcher<K> {
    /// Lists and watches `api` (all namespaces or one, as the `Api` was made).
    pub fn new(api: Api<K>) -> Self {
        Self {
            api,
            field_selector: None,
            label_selector: None,
        }
    }

    /// Restricts every list and watch to objects matching a field selector (for example
    /// `metadata.name=web`); a selector in the request options takes precedence.
    #[must_use]
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Restricts every list and watch to objects matching a label selector; a selector in the
    /// request options takes precedence.
    #[must_use]
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    fn selectors(&self, options: &ListOptions) -> (Option<String>, Option<String>) {
        (
            options
                .label_selector
                .clone()
                .or_else(|| self.label_selector.clone()),
            options
                .field_selector
                .clone()
                .or_else(|| self.field_selector.clone()),
        )
    }
}

/// Turns a kube-client error into the contract's error.
pub fn list_watch_error(err: kube_client::Error) -> ListWatchError {
    use kube_client::Error;
    match err {
        Error::Api(status) => ListWatchError::Api(*status),
        Error::HyperError(e) => ListWatchError::Connection(e.to_string()),
        Error::Service(e) => ListWatchError::Connection(e.to_string()),
        Error::ReadEvents(e) => ListWatchError::Connection(e.to_string()),
        Error::SerdeError(e) => ListWatchError::Decode(e.to_string()),
        Error::LinesCodecMaxLineLengthExceeded => ListWatchError::Decode(err.to_string()),
        other => ListWatchError::Other(other.to_string()),
    }
}

/// The kube-client list parameters of a list request (for lister-watchers over other `Api`
/// calls, such as `list_metadata`).
pub fn list_params(options: &ListOptions) -> ListParams {
    ListParams {
        label_selector: options.label_selector.clone(),
        field_selector: options.field_selector.clone(),
        limit: options.limit,
        continue_token: options.continue_token.clone(),
        resource_version: options.resource_version.clone(),
        version_match: options.resource_version_match.map(|m| match m {
            ResourceVersionMatch::Exact => VersionMatch::Exact,
            ResourceVersionMatch::NotOlderThan => VersionMatch::NotOlderThan,
        }),
        ..ListParams::default()
    }
}

/// The kube-client watch parameters of a watch request; the resource version is passed apart
/// (`options.resource_version`, "" when absent).
pub fn watch_params(options: &ListOptions) -> WatchParams {
    WatchParams {
        label_selector: options.label_selector.clone(),
        field_selector: options.field_selector.clone(),
        timeout: options.timeout_seconds,
        bookmarks: options.allow_watch_bookmarks,
        send_initial_events: options.send_initial_events == Some(true),
    }
}

/// Turns a kube-client list into a [`ListPage`].
pub fn list_page<K: Clone>(list: kube_core::ObjectList<K>) -> ListPage<K> {
    ListPage {
        items: list.items.into_iter().map(Arc::new).collect(),
        resource_version: list.metadata.resource_version.unwrap_or_default(),
        continue_token: list.metadata.continue_.filter(|c| !c.is_empty()),
        remaining_item_count: list.metadata.remaining_item_count,
    }
}

/// Turns a kube-client watch event into the contract's event.
pub fn watch_event<K>(event: kube_core::WatchEvent<K>) -> WatchEvent<K> {
    match event {
        kube_core::WatchEvent::Added(o) => WatchEvent::Added(Arc::new(o)),
        kube_core::WatchEvent::Modified(o) => WatchEvent::Modified(Arc::new(o)),
        kube_core::WatchEvent::Deleted(o) => WatchEvent::Deleted(Arc::new(o)),
        kube_core::WatchEvent::Bookmark(b) => WatchEvent::Bookmark(Bookmark {
            resource_version: b.metadata.resource_version,
            annotations: b.metadata.annotations,
        }),
        kube_core::WatchEvent::Error(status) => WatchEvent::Error(*status),
    }
}

impl<K> ListerWatcher<K> for ApiListerWatcher<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        let mut params = list_params(options);
        (params.label_selector, params.field_selector) = self.selectors(options);
        Box::pin(async move {
            Ok(list_page(
                self.api.list(&params).await.map_err(list_watch_error)?,
            ))
        })
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        let mut params = watch_params(options);
        (params.label_selector, params.field_selector) = self.selectors(options);
        let version = options.resource_version.clone().unwrap_or_default();
        Box::pin(async move {
            let stream = self
                .api
                .watch(&params, &version)
                .await
                .map_err(list_watch_error)?;
            Ok(stream.map_ok(watch_event).map_err(list_watch_error).boxed())
        })
    }
}
