//! Request bodies: objects in JSON (with their duplicate fields), YAML or Kubernetes' protobuf
//! encoding, patches, and `DeleteOptions`.

use http::header;
use serde_json::Value;

use super::context::RequestCtx;
use crate::deletion::{DeleteOptions, Propagation};
use crate::error::ApiError;
use crate::patch::PatchKind;
use crate::registry::{Body, DeleteRequest, PatchRequest};
use crate::resource_version;
use crate::storage::Preconditions;
use crate::validation;

fn content_type<'a>(ctx: &'a RequestCtx<'_>) -> &'a str {
    ctx.headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn yaml(body: &[u8]) -> Result<Value, ApiError> {
    let text =
        std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
    serde_saphyr::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// A request body as JSON: JSON, YAML or Kubernetes' protobuf encoding by Content-Type (absent:
/// JSON); other media types are 415 as the API server answers.
pub(super) fn body_value(ctx: &RequestCtx<'_>) -> Result<Value, ApiError> {
    decode(ctx.headers, &ctx.body)
}

/// The object of a create or update: [`body_value`], with the fields a JSON body gives twice.
pub(super) fn body_object(ctx: &RequestCtx<'_>) -> Result<Body, ApiError> {
    if media_type(ctx.headers).is_some_and(is_json) {
        let (value, duplicates) = validation::from_slice_with_duplicates(&ctx.body)
            .map_err(|e| ApiError::bad_request(json_error(&ctx.body, &e)))?;
        return Ok(Body { value, duplicates });
    }
    Ok(Body {
        value: body_value(ctx)?,
        duplicates: Vec::new(),
    })
}

fn media_type(headers: &http::HeaderMap) -> Option<&str> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    content_type.split(';').next().map(str::trim)
}

fn is_json(media_type: &str) -> bool {
    matches!(media_type, "" | "*/*" | "application/json")
}

/// Go's words for a body serde_json refuses (its own when Go's scanner finds nothing wrong).
fn go_json_error(body: &[u8], e: &serde_json::Error) -> String {
    validation::go_json_syntax_error(body).unwrap_or_else(|| e.to_string())
}

/// The API server's error for a body it cannot decode (`SimpleMetaFactory.Interpret`).
fn json_error(body: &[u8], e: &serde_json::Error) -> String {
    format!(
        "couldn't get version/kind; json parse error: {}",
        go_json_error(body, e)
    )
}

/// A body as JSON by the Content-Type of `headers` (see [`body_value`]).
pub(super) fn decode(headers: &http::HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    match media_type(headers).unwrap_or("") {
        crate::protobuf::MEDIA_TYPE => crate::protobuf::decode(body),
        "application/yaml" | "application/x-yaml" | "text/yaml" => yaml(body),
        json if is_json(json) => {
            serde_json::from_slice(body).map_err(|e| ApiError::bad_request(json_error(body, &e)))
        }
        _ => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, {}",
                crate::protobuf::MEDIA_TYPE
            ),
        )),
    }
}

/// The patch type (from Content-Type) and the patch of a PATCH request.
pub(super) fn read_patch(ctx: &RequestCtx<'_>) -> Result<PatchRequest, ApiError> {
    let content_type = content_type(ctx);
    let kind = PatchKind::from_content_type(content_type).ok_or_else(|| {
        // The patch types of the endpoint, in the order the installer (built-in kinds) or
        // the apiextensions handler (custom resources, without strategic merge) lists them.
        let builtin = crate::kinds::find(&ctx.def.api.api_version, &ctx.def.api.kind).is_some();
        let strategic = if builtin {
            "application/strategic-merge-patch+json, "
        } else {
            ""
        };
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, {strategic}application/apply-patch+yaml"
            ),
        )
    })?;
    if kind == PatchKind::Strategic
        && crate::kinds::find(&ctx.def.api.api_version, &ctx.def.api.kind).is_none()
    {
        return Err(custom_resource_patch_types());
    }
    let (patch, duplicates) = if kind == PatchKind::Apply {
        (yaml(&ctx.body)?, Vec::new())
    } else {
        validation::from_slice_with_duplicates(&ctx.body).map_err(|e| {
            let error = go_json_error(&ctx.body, &e);
            ApiError::bad_request(format!("error decoding patch: {error}"))
        })?
    };
    if kind != PatchKind::Apply {
        let validation = validation::FieldValidation::parse(ctx.query.get("fieldValidation"));
        let strictly = !matches!(validation, Ok(validation::FieldValidation::Ignore));
        crate::patch::check_patch(kind, &patch, strictly)?;
    }
    Ok(PatchRequest {
        kind,
        patch,
        duplicates,
    })
}

/// 415 for a strategic merge patch of a custom resource, with the patch types the
/// apiextensions-apiserver's handler lists for them (`crdHandler`; CBOR apply only with a gate
/// that is off in 1.34), so that clients fall back to a merge patch as against a cluster.
fn custom_resource_patch_types() -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )
}

/// The `DeleteOptions` of a DELETE (body and query, validated).
pub(super) fn delete_request(ctx: &RequestCtx<'_>) -> Result<DeleteRequest, ApiError> {
    validation::delete_options(ctx.query.get("propagationPolicy"))?;
    let query_grace = match ctx.query.get("gracePeriodSeconds") {
        Some(g) => Some(
            g.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}")))?,
        ),
        None => None,
    };
    let query_options = DeleteOptions {
        propagation: ctx
            .query
            .get("propagationPolicy")
            .and_then(Propagation::parse),
        orphan_dependents: ctx.query.get("orphanDependents").map(|o| o == "true"),
        grace_period_seconds: query_grace,
    };
    if ctx.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(DeleteRequest {
            options: query_options,
            ..DeleteRequest::default()
        });
    }
    let v = body_value(ctx)?;
    let options = DeleteOptions {
        propagation: v
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .and_then(Propagation::parse)
            .or(query_options.propagation),
        orphan_dependents: v
            .get("orphanDependents")
            .and_then(Value::as_bool)
            .or(query_options.orphan_dependents),
        grace_period_seconds: v
            .get("gracePeriodSeconds")
            .and_then(Value::as_i64)
            .or(query_options.grace_period_seconds),
    };
    validation::delete_options(v.get("propagationPolicy").and_then(Value::as_str))?;
    let dry_run: Vec<&str> = v
        .get("dryRun")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| d.as_str().unwrap_or(""))
        .collect();
    validation::dry_run("DeleteOptions", &dry_run)?;
    let pre = &v["preconditions"];
    let resource_version = match pre.get("resourceVersion").and_then(Value::as_str) {
        Some(rv) => Some(resource_version::parse(rv).map_err(|_| {
            ApiError::bad_request(format!("invalid precondition resourceVersion {rv:?}"))
        })?),
        None => None,
    };
    Ok(DeleteRequest {
        preconditions: Preconditions {
            resource_version,
            uid: pre.get("uid").and_then(Value::as_str).map(str::to_owned),
        },
        options,
        dry_run: !dry_run.is_empty(),
    })
}
