//! The entry of writes: each handler parses its request, calls the write path
//! (module `registry`) and encodes the answer.

use axum::response::Response;
use http::header;

use super::body::{body_object, body_value, delete_request, read_patch};
use super::context::RequestCtx;
use super::response::json_response;
use crate::deletion;
use crate::encode::{Format, ListMeta, list_body};
use crate::error::ApiError;
use crate::fieldmanager::Verb;
use crate::filter::Filter;
use crate::patch::PatchKind;
use crate::registry::{self, FieldManager, ScaleWrite, Subresource, Target, Written};

fn target<'a>(ctx: &'a RequestCtx<'_>) -> Target<'a> {
    Target {
        shared: ctx.shared,
        def: ctx.def,
        namespace: ctx.path.namespace,
        dry_run: ctx.dry_run(),
    }
}

/// The field manager of a write, its `fieldManager` and `force` checked (422 PatchOptions...).
fn field_manager(ctx: &RequestCtx<'_>, verb: Verb, status: bool) -> Result<FieldManager, ApiError> {
    FieldManager::new(ctx.query, ctx.headers, verb, status)
}

/// The response of a write: the object (201 when the write created it, else `code`), and a
/// `Warning` header for each warning.
fn written_response(ctx: &RequestCtx<'_>, code: u16, written: &Written) -> Response {
    let code = if written.created { 201 } else { code };
    let mut resp = ctx.object_response(code, &written.object);
    for warning in &written.warnings {
        super::response::append_warning(&mut resp, warning);
    }
    resp
}

/// POST to a collection.
pub(super) async fn create(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    let written = registry::create(
        &target(ctx),
        body_object(ctx)?,
        &field_manager(ctx, Verb::Create, false)?,
    )
    .await?;
    Ok(written_response(ctx, 201, &written))
}

/// PUT to an object, its status, (pods) its ephemeral containers or (CSRs) its approval.
pub(super) async fn update(
    ctx: &RequestCtx<'_>,
    name: &str,
    sub: Subresource,
) -> Result<Response, ApiError> {
    let manager = field_manager(ctx, Verb::Update, sub.writes_status())?;
    let body = body_object(ctx)?;
    let written = registry::update(&target(ctx), name, body, sub, &manager).await?;
    Ok(written_response(ctx, 200, &written))
}

/// PATCH of an object, its status, (pods) its ephemeral containers or (CSRs) its approval.
pub(super) async fn patch(
    ctx: &RequestCtx<'_>,
    name: &str,
    sub: Subresource,
) -> Result<Response, ApiError> {
    let request = read_patch(ctx)?;
    let verb = match request.kind {
        PatchKind::Apply => Verb::Apply,
        _ => Verb::Patch,
    };
    let manager = field_manager(ctx, verb, sub.writes_status())?;
    let written = registry::patch(&target(ctx), name, request, sub, &manager).await?;
    let code = if written.created { 201 } else { 200 };
    Ok(written_response(ctx, code, &written))
}

/// DELETE of an object, answered as `handlers/delete.go` does: a removed object of a kind
/// whose store does not return it is a `Status` Success; otherwise the object (removed, or
/// marked for its finalizers or grace period), 202 instead of 200 when it stays and the
/// request sent the deprecated `orphanDependents: false`.
pub(super) async fn delete(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    let request = delete_request(ctx)?;
    let cascading = request.options.orphan_dependents == Some(false);
    let mut target = target(ctx);
    target.dry_run |= request.dry_run;
    let deleted = registry::delete(&target, name, request).await?;
    if deleted.removed && !deletion::returns_deleted_object(ctx.def) {
        let status = deletion::deleted_status(ctx.def, &deleted.object);
        return Ok(json_response(200, status.to_string().into()));
    }
    let code = if !deleted.removed && cascading {
        202
    } else {
        200
    };
    Ok(ctx.object_response(code, &deleted.object))
}

/// DELETE of a collection: answers the objects as listed before their deletes, at the
/// revision of that list (as `DeleteCollection`).
pub(super) async fn delete_collection(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    let filter = Filter::from_query(ctx.def, ctx.path.namespace, ctx.query)?;
    let request = delete_request(ctx)?;
    let mut target = target(ctx);
    target.dry_run |= request.dry_run;
    let deleted = registry::delete_collection(&target, Some(&filter), &request).await?;
    let meta = ListMeta {
        resource_version: deleted.list_revision,
        ..ListMeta::default()
    };
    let metadata = match ctx.format {
        Format::Metadata { version, .. } => Some(version),
        Format::Json | Format::Table(..) => None,
    };
    let mut resp = Response::new(axum::body::Body::from_stream(list_body(
        ctx.def,
        &meta,
        deleted.listed,
        metadata,
    )));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

/// GET of `.../{name}/scale`.
pub(super) async fn get_scale(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    let scale = registry::get_scale(&target(ctx), name).await?;
    Ok(json_response(200, scale.to_string().into()))
}

/// PUT (`patch == false`) or PATCH of `.../{name}/scale`.
pub(super) async fn write_scale(
    ctx: &RequestCtx<'_>,
    name: &str,
    patch: bool,
) -> Result<Response, ApiError> {
    let write = if patch {
        ScaleWrite::Patch(read_patch(ctx)?)
    } else {
        ScaleWrite::Put(
            serde_json::from_slice(&ctx.body)
                .map_err(|e| ApiError::bad_request(format!("error decoding Scale: {e}")))?,
        )
    };
    let scale = registry::write_scale(&target(ctx), name, write).await?;
    Ok(json_response(200, scale.to_string().into()))
}

/// POST of `.../serviceaccounts/{name}/token`.
pub(super) async fn create_token(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    let request = body_value(ctx)?;
    let token = registry::create_token(&target(ctx), name, &request).await?;
    Ok(json_response(201, token.to_string().into()))
}

/// POST of a `Binding` to `pods/{name}/binding`.
pub(super) async fn bind(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    let binding = body_value(ctx)?;
    let status = registry::bind(&target(ctx), name, &binding).await?;
    Ok(json_response(201, status.to_string().into()))
}

/// POST of an `Eviction` to `pods/{name}/eviction`.
pub(super) async fn evict(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    let eviction = body_value(ctx)?;
    let status = registry::evict(&target(ctx), name, &eviction).await?;
    Ok(json_response(201, status.to_string().into()))
}
