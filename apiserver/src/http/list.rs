//! Lists: the request's options parsed and handed to the cacher, which decides where the list
//! is read (cacher/delegator.rs); the answer encoded.

use axum::response::Response;

use super::context::{RequestCtx, cache_of};
use super::options::{parse_match, read_rv, request_filter, validate_list_options};
use super::response::{json_response, stream_response};
use crate::cacher::{ListParams, ListTarget, RvMatch, get_list};
use crate::continue_token::ContinueToken;
use crate::encode::{Format, TableForm, list_body, table};
use crate::error::ApiError;

/// The list parameters of a request (400 for a bad `limit` or `continue`).
fn list_params(ctx: &RequestCtx<'_>) -> Result<ListParams, ApiError> {
    let q = ctx.query;
    validate_list_options(q)?;
    let rv_match = parse_match(q)?.map(|m| match m {
        "Exact" => RvMatch::Exact,
        _ => RvMatch::NotOlderThan,
    });
    let limit = match q.non_empty("limit") {
        Some(l) => Some(
            l.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        ),
        None => None,
    }
    .filter(|l| *l > 0)
    .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
    let resource_version = read_rv(q.non_empty("resourceVersion"))?;
    let continue_token = q
        .non_empty("continue")
        .map(ContinueToken::decode)
        .transpose()?;
    Ok(ListParams {
        resource_version,
        rv_match,
        limit,
        continue_token,
    })
}

pub(super) async fn list(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    let opts = list_params(ctx)?;
    let filter = request_filter(ctx, None)?;
    let cache = cache_of(ctx)?;
    let target = ListTarget {
        def: ctx.def,
        storage: ctx.shared.storage.as_ref(),
        cache: &cache,
        filter: &filter,
    };
    let (items, meta) = get_list(&target, &opts).await?;
    Ok(match ctx.format {
        Format::Table(version, include) => {
            let form = TableForm {
                version,
                include,
                columns: true,
            };
            json_response(200, table(ctx.def, &meta, &items, form))
        }
        Format::Json => stream_response(list_body(ctx.def, &meta, items, None)),
        Format::Metadata { version, .. } => {
            stream_response(list_body(ctx.def, &meta, items, Some(version)))
        }
    })
}
