//! The Cacher: its feed, a [`ListerWatcher`] over [`Storage`], which a kcache-reflector
//! `Reflector` uses to keep each watch cache equal to storage; and where a list is served from.
//!
//! - delegator.rs: whether a list is read from the watch cache or delegated to storage
//!   (Kubernetes' `delegator.ShouldDelegateList`);
//! - list.rs: the list itself (Kubernetes' `CacheDelegator.GetList`): pages from a cache
//!   snapshot, or from storage.

use std::fmt;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use kcache_reflector::{
    Bookmark, ListFuture, ListOptions, ListPage, ListWatchError, ListerWatcher, WatchEvent,
    WatchFuture,
};
use kube_core::Status;

use crate::continue_token::ContinueToken;
use crate::error::ApiError;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::resource_version;
use crate::storage::{EventType, ListRequest, Storage, StorageError, WatchItem};

mod delegator;
mod list;

pub(crate) use delegator::{ListParams, RvMatch};
pub(crate) use list::{ListTarget, get_list};

/// Lists and watches one resource directly in [`Storage`] (what the Cacher's reflector uses; in
/// Kubernetes, the etcd3 store). List resource versions are read exactly ("" and "0": the
/// current revision); `continue` tokens are the API server's own, carrying the revision of the
/// first page.
pub struct StorageListerWatcher {
    storage: Arc<dyn Storage>,
    def: Arc<ResourceDef>,
}

impl fmt::Debug for StorageListerWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageListerWatcher")
            .field("resource", &self.def.api.plural)
            .finish()
    }
}

impl StorageListerWatcher {
    /// A lister-watcher of `def` in `storage`.
    pub fn new(storage: Arc<dyn Storage>, def: Arc<ResourceDef>) -> Self {
        Self { storage, def }
    }
}

/// Converts a storage error into the Status a client would see.
pub(crate) fn storage_status(def: &ResourceDef, name: &str, err: StorageError) -> ApiError {
    let (g, p) = (def.api.group.as_str(), def.api.plural.as_str());
    match err {
        StorageError::NotFound(_) => ApiError::not_found(g, p, name),
        StorageError::AlreadyExists(_) => ApiError::already_exists(g, p, name),
        StorageError::Conflict { message, .. } => ApiError::conflict(g, p, name, &message),
        StorageError::Compacted {
            requested,
            compacted,
        } => ApiError::too_old(requested, compacted),
        StorageError::FutureRevision { requested, current } => {
            ApiError::too_large_resource_version(requested, current)
        }
        StorageError::Rejected(e) => e,
        StorageError::Backend(message) => ApiError::internal(message),
    }
}

/// The kube-core [`Status`] of an [`ApiError`].
pub(crate) fn to_status(err: &ApiError) -> Status {
    serde_json::from_value(err.to_status_value()).unwrap_or_default()
}

fn lw_error(def: &ResourceDef, err: StorageError) -> ListWatchError {
    match err {
        // The storage cannot be reached: retried by the reflector (etcd restarting).
        StorageError::Backend(message) => ListWatchError::Connection(message.into()),
        err => ListWatchError::from(to_status(&storage_status(def, "", err))),
    }
}

/// A list's or watch's resource version; "" and "0" mean the current revision (`None`).
fn parse_rv(rv: Option<&str>) -> Result<Option<u64>, Box<ListWatchError>> {
    match resource_version::parse_optional(rv) {
        Ok(rv) => Ok(rv.filter(|&rv| rv != 0)),
        Err(e) => Err(Box::new(ListWatchError::from(to_status(
            &ApiError::bad_request(format!("invalid resource version: {e}")),
        )))),
    }
}

impl ListerWatcher<Object> for StorageListerWatcher {
    fn list(&self, options: &ListOptions) -> ListFuture<'_, Object> {
        let options = options.clone();
        async move {
            let prefix = self.def.key_prefix();
            let mut revision = parse_rv(options.resource_version.as_deref()).map_err(|e| *e)?;
            let mut start_key = None;
            if let Some(token) = options.continue_token.as_deref() {
                let token = ContinueToken::decode(token)
                    .map_err(|e| ListWatchError::from(to_status(&e)))?;
                revision = Some(token.revision);
                start_key = Some(format!("{prefix}{}", token.start));
            }
            let request = ListRequest {
                revision,
                start_key,
                limit: options.limit.map(|l| l as usize),
                prefix: prefix.clone(),
            };
            let result = self
                .storage
                .list(request)
                .await
                .map_err(|e| lw_error(&self.def, e))?;
            Ok(ListPage {
                items: result.items,
                resource_version: result.revision.to_string(),
                continue_token: result.last_key.map(|k| {
                    let relative = k.strip_prefix(prefix.as_str()).unwrap_or(&k);
                    ContinueToken::after(result.revision, relative).encode()
                }),
                remaining_item_count: None,
            })
        }
        .boxed()
    }

    // The stream's error type is fixed by the ListerWatcher contract.
    #[allow(clippy::result_large_err)]
    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, Object> {
        let options = options.clone();
        async move {
            let from = match parse_rv(options.resource_version.as_deref()).map_err(|e| *e)? {
                Some(rv) => rv,
                None => self
                    .storage
                    .revision()
                    .await
                    .map_err(|e| lw_error(&self.def, e))?,
            };
            let bookmarks = options.allow_watch_bookmarks;
            let stream = self
                .storage
                .watch(self.def.key_prefix(), from, bookmarks)
                .await
                .map_err(|e| lw_error(&self.def, e))?;
            let def = Arc::clone(&self.def);
            let stream = stream.map(move |item| {
                Ok(match item.map_err(|e| lw_error(&def, e))? {
                    WatchItem::Event(e) => match e.event_type {
                        EventType::Added => WatchEvent::Added(e.object),
                        EventType::Modified => WatchEvent::Modified(e.object),
                        EventType::Deleted => WatchEvent::Deleted(e.object),
                    },
                    WatchItem::Progress(rv) => WatchEvent::Bookmark(Bookmark {
                        resource_version: rv.to_string(),
                        ..Bookmark::default()
                    }),
                })
            });
            Ok(stream.boxed())
        }
        .boxed()
    }
}
