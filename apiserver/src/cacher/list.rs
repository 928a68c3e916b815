//! A list (Kubernetes' `CacheDelegator.GetList`): a page of a watch-cache snapshot, or storage's
//! pages with continue tokens, as the delegator decides; a cache read that cannot be served
//! after all (its snapshot left the window meanwhile, or a consistent read the cache did not
//! catch up with in time) falls back to storage as Kubernetes' delegator does.

use std::sync::Arc;

use super::delegator::{CacheRead, Freshness, Source, should_delegate_list};
use super::{ListParams, storage_status};
use crate::cache::{Scope, WatchCache, page};
use crate::continue_token::ContinueToken;
use crate::encode::ListMeta;
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::storage::{ListRequest, Storage, StorageError};

/// What a list reads: the resource, its storage and watch cache, the request's filter.
pub(crate) struct ListTarget<'a> {
    pub(crate) def: &'a ResourceDef,
    pub(crate) storage: &'a dyn Storage,
    pub(crate) cache: &'a WatchCache,
    pub(crate) filter: &'a Filter,
}

/// Lists `target` with `opts`: the objects and the list's metadata.
pub(crate) async fn get_list(
    target: &ListTarget<'_>,
    opts: &ListParams,
) -> Result<(Vec<Arc<Object>>, ListMeta), ApiError> {
    opts.validate()?;
    let source = should_delegate_list(opts, target.cache, target.filter.selects_all());
    if let Source::Cache(read) = source
        && let Some(list) = list_cache(target, &read).await?
    {
        return Ok(list);
    }
    list_storage(target, opts).await
}

/// Reads `read` from the cache; `None` when storage must answer instead.
async fn list_cache(
    target: &ListTarget<'_>,
    read: &CacheRead,
) -> Result<Option<(Vec<Arc<Object>>, ListMeta)>, ApiError> {
    match read.freshness {
        Freshness::AtLeast(rv) => target.cache.wait_fresh(rv).await?,
        Freshness::Current => {
            let revision = target
                .storage
                .revision()
                .await
                .map_err(|e| storage_status(target.def, "", e))?;
            if target.cache.wait_fresh(revision).await.is_err() {
                tracing::debug!(
                    resource = %target.def.api.plural,
                    revision,
                    "the watch cache did not reach the storage's revision in time: listing from storage"
                );
                return Ok(None);
            }
        }
    }
    let Some((objects, rv)) = target.cache.read(read.at) else {
        return Ok(None);
    };
    let scope = Scope::new(target.def, target.filter);
    let page = page(&objects, &scope, read.start.as_deref(), read.limit);
    let mut meta = ListMeta {
        resource_version: rv,
        ..ListMeta::default()
    };
    if let Some(more) = page.more {
        meta.continue_token = Some(ContinueToken::after(rv, &more.last_key).encode());
        meta.remaining = more.remaining;
    }
    Ok(Some((page.items, meta)))
}

/// Lists from storage at the revision `opts` name (the current one if none) from the continue
/// token's key, keeping `limit` items passing the filter (storage is read page by page until
/// the limit is reached). A continue whose revision was compacted is 410 Expired.
async fn list_storage(
    target: &ListTarget<'_>,
    opts: &ListParams,
) -> Result<(Vec<Arc<Object>>, ListMeta), ApiError> {
    let (def, filter, limit) = (target.def, target.filter, opts.limit);
    let from_continue = opts.continue_token.is_some();
    let base = def.key_prefix();
    let prefix = match &filter.namespace {
        Some(ns) if def.namespaced => format!("{base}{ns}/"),
        _ => base.clone(),
    };
    let mut revision = opts.storage_revision();
    let mut start = opts.continue_token.as_ref().map(|t| t.start.clone());
    let mut items = Vec::new();
    let mut meta = ListMeta::default();
    loop {
        let want = limit.map(|l| l.saturating_sub(items.len()));
        let request = ListRequest {
            prefix: prefix.clone(),
            revision,
            start_key: start.as_ref().map(|s| format!("{base}{s}")),
            limit: want,
        };
        let page = target.storage.list(request).await.map_err(|e| match e {
            StorageError::Compacted { .. } if from_continue => ApiError::continue_expired(),
            e => storage_status(def, "", e),
        })?;
        revision = Some(page.revision);
        meta.resource_version = page.revision;
        items.extend(page.items.into_iter().filter(|o| filter.matches(o)));
        let Some(last) = page.last_key else { break };
        let next = ContinueToken::after(
            page.revision,
            last.strip_prefix(base.as_str()).unwrap_or(&last),
        );
        if limit.is_some_and(|l| items.len() >= l) {
            meta.continue_token = Some(next.encode());
            if filter.selects_all() {
                meta.remaining = Some(page.remaining);
            }
            break;
        }
        start = Some(next.start);
    }
    Ok((items, meta))
}
