//! Watches, from the watch cache.

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use tokio::time::Instant;

use super::context::{RequestCtx, cache_of, current_revision};
use super::options::{list_options_invalid, parse_match, request_filter};
use super::response::stream_response;
use crate::cache::{WatchRequest, WatchStart};
use crate::encode::{WatchBody, error_frame};
use crate::error::ApiError;
use crate::resource_version;

/// `timeoutSeconds` if given and not 0, else the default: minRequestTimeout × (1 + random).
fn watch_deadline(ctx: &RequestCtx<'_>) -> Result<Instant, ApiError> {
    let given = match ctx.query.non_empty("timeoutSeconds") {
        Some(t) => t
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {t:?}")))?,
        None => 0,
    };
    let timeout = if given == 0 {
        ctx.shared
            .config
            .min_request_timeout
            .mul_f64(1.0 + rand::random::<f64>())
    } else {
        Duration::from_secs(given)
    };
    Ok(Instant::now() + timeout)
}

pub(super) async fn watch(ctx: &RequestCtx<'_>, name: Option<&str>) -> Result<Response, ApiError> {
    let q = ctx.query;
    let send_initial = q.opt_flag("sendInitialEvents");
    let rvm = parse_match(q)?;
    if rvm.is_some() && send_initial.is_none() {
        return Err(list_options_invalid(&[(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )]));
    }
    if send_initial.is_some() && rvm != Some("NotOlderThan") {
        return Err(list_options_invalid(&[(
            "resourceVersionMatch",
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        )]));
    }
    let bookmarks = q.flag("allowWatchBookmarks");
    if send_initial == Some(true) && !bookmarks {
        return Err(list_options_invalid(&[(
            "allowWatchBookmarks",
            "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
        )]));
    }
    // An unparsable resourceVersion is the storage's invalid error, which the watch handler
    // converts into 422 Invalid of the resource.
    let rv = resource_version::parse_optional(q.non_empty("resourceVersion")).map_err(|e| {
        ApiError::invalid(
            &ctx.def.api.group,
            &ctx.def.api.plural,
            "",
            &[("resourceVersion".to_owned(), e.to_string())],
        )
    })?;
    let filter = request_filter(ctx, name)?;
    let deadline = watch_deadline(ctx)?;
    let cache = cache_of(ctx)?;
    // As the Cacher: only a watch-list waits for the cache to reach its resource version (a
    // plain watch from a future RV is established at once and gets the events after it), and
    // once the request is valid, errors are an ERROR event inside a 200 stream.
    let error_stream = |err: ApiError| {
        let frame = error_frame(&err.to_status_value());
        stream_response(futures::stream::iter([Ok(frame)]))
    };
    let start = match (send_initial, rv) {
        (Some(true), rv) => {
            let at_least = match rv {
                Some(n) => n,
                None => current_revision(ctx).await?,
            };
            if let Err(err) = cache.wait_fresh(at_least).await {
                return Ok(error_stream(err));
            }
            WatchStart::WatchList
        }
        (Some(false), None | Some(0)) => {
            cache.wait_fresh(1).await?;
            WatchStart::After(cache.resource_version())
        }
        (None, None) => {
            cache.wait_fresh(current_revision(ctx).await?).await?;
            WatchStart::State
        }
        (None, Some(0)) => {
            cache.wait_fresh(1).await?;
            WatchStart::State
        }
        (_, Some(n)) => {
            cache.wait_fresh(1).await?;
            WatchStart::After(n)
        }
    };
    let handle = match cache.watch(WatchRequest {
        start,
        filter,
        bookmarks,
        deadline,
    }) {
        Ok(handle) => handle,
        Err(err) => return Ok(error_stream(err)),
    };
    let body = WatchBody::new(
        Arc::clone(ctx.def),
        ctx.format,
        handle.initial,
        handle.rx,
        deadline,
        ctx.shared.watch_token(),
    );
    Ok(stream_response(body))
}
