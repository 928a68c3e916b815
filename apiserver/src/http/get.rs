//! GET of one object.

use axum::response::Response;

use super::context::RequestCtx;
use super::options::read_rv;
use crate::cacher::storage_status;
use crate::error::ApiError;

pub(super) async fn get(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    read_rv(ctx.query.non_empty("resourceVersion"))?;
    let obj = ctx
        .shared
        .storage
        .get(ctx.key(name))
        .await
        .map_err(|e| storage_status(ctx.def, name, e))?;
    match obj {
        Some(obj) => Ok(ctx.object_response(200, &obj)),
        None => Err(ApiError::not_found(
            &ctx.def.api.group,
            &ctx.def.api.plural,
            name,
        )),
    }
}
