//! Lists: from the watch cache, or paged from storage with continue tokens.

use std::sync::Arc;

use axum::response::Response;

use super::context::{RequestCtx, cache_of, current_revision};
use super::options::{parse_match, read_rv, request_filter, validate_list_options};
use super::response::{json_response, stream_response};
use crate::cacher::storage_status;
use crate::continue_token::ContinueToken;
use crate::encode::{Format, ListMeta, TableForm, list_body, table};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::storage::ListRequest;

/// Lists from storage at `revision` (None: current) from `start` (relative to the resource
/// prefix), keeping `limit` items passing `filter`.
async fn list_storage(
    ctx: &RequestCtx<'_>,
    filter: &Filter,
    mut revision: Option<u64>,
    mut start: Option<String>,
    limit: Option<usize>,
    from_continue: bool,
) -> Result<(Vec<Arc<Object>>, ListMeta), ApiError> {
    let base = ctx.def.key_prefix();
    let prefix = match ctx.path.namespace {
        Some(ns) => format!("{base}{ns}/"),
        None => base.clone(),
    };
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
        let page = ctx
            .shared
            .storage
            .list(request)
            .await
            .map_err(|e| match e {
                crate::storage::StorageError::Compacted { .. } if from_continue => {
                    ApiError::continue_expired()
                }
                e => storage_status(ctx.def, "", e),
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

async fn list_cache(
    ctx: &RequestCtx<'_>,
    filter: &Filter,
    at_least: u64,
) -> Result<(Vec<Arc<Object>>, ListMeta), ApiError> {
    let cache = cache_of(ctx)?;
    cache.wait_fresh(at_least).await?;
    let (items, rv) = cache.list(filter);
    Ok((
        items,
        ListMeta {
            resource_version: rv,
            ..ListMeta::default()
        },
    ))
}

pub(super) async fn list(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    let q = ctx.query;
    validate_list_options(q)?;
    let rv_str = q.non_empty("resourceVersion");
    let rvm = parse_match(q)?;
    let limit = match q.non_empty("limit") {
        Some(l) => Some(
            l.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        ),
        None => None,
    }
    .filter(|l| *l > 0)
    .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
    let filter = request_filter(ctx, None)?;
    let rv = read_rv(rv_str)?;
    let (items, meta) = if let Some(token) = q.non_empty("continue") {
        if rv.is_some_and(|r| r != 0) {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let token = ContinueToken::decode(token)?;
        list_storage(
            ctx,
            &filter,
            Some(token.revision),
            Some(token.start),
            limit,
            true,
        )
        .await?
    } else {
        match (rv, rvm) {
            (None, _) if limit.is_some() => {
                list_storage(ctx, &filter, None, None, limit, false).await?
            }
            (None, _) => {
                let rev = current_revision(ctx).await?;
                list_cache(ctx, &filter, rev).await?
            }
            (Some(0), _) => list_cache(ctx, &filter, 1).await?,
            (Some(n), Some("Exact")) => {
                list_storage(ctx, &filter, Some(n), None, limit, false).await?
            }
            (Some(n), Some(_)) => {
                let (items, meta) = list_cache(ctx, &filter, n).await?;
                if limit.is_some() {
                    list_storage(ctx, &filter, None, None, limit, false).await?
                } else {
                    (items, meta)
                }
            }
            (Some(n), None) if limit.is_some() => {
                list_storage(ctx, &filter, Some(n), None, limit, false).await?
            }
            (Some(n), None) => list_cache(ctx, &filter, n).await?,
        }
    };
    Ok(match ctx.format {
        Format::Table(version, include) => {
            let form = TableForm {
                version,
                include,
                columns: true,
            };
            json_response(200, table(ctx.def, &meta, &items, form))
        }
        Format::Json => stream_response(list_body(ctx.def, &meta, items)),
    })
}
