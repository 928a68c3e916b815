//! The `token` subresource of service accounts (`TokenRequest`, what `kubectl create token`
//! asks for). The server has no token authority: the token is an opaque string naming the
//! service account, audiences and expiry, which no request is authenticated with.

use axum::response::Response;
use base64::Engine as _;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::http::{RequestCtx, json_response};

/// Kubernetes' shortest token lifetime.
const MIN_EXPIRATION_SECONDS: i64 = 600;

/// POST of `.../serviceaccounts/{name}/token`.
pub(crate) async fn create(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    let account = ctx
        .shared
        .storage
        .get(ctx.key(name))
        .await
        .map_err(|e| crate::cacher::storage_status(ctx.def, name, e))?;
    if account.is_none() {
        return Err(ApiError::not_found("", "serviceaccounts", name));
    }
    let request = crate::write::body_value(ctx)?;
    let spec = &request["spec"];
    let audiences = spec.get("audiences").cloned().unwrap_or_else(|| json!([]));
    let seconds = spec["expirationSeconds"].as_i64().unwrap_or(3600);
    if seconds < MIN_EXPIRATION_SECONDS {
        return Err(ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            name,
            &[(
                "spec.expirationSeconds".to_owned(),
                format!(
                    "Invalid value: {seconds}: may not specify a duration less than 10 minutes"
                ),
            )],
        ));
    }
    let namespace = ctx.path.namespace.unwrap_or("default");
    let expires = Timestamp::now()
        .checked_add(SignedDuration::from_secs(seconds))
        .map_err(|e| ApiError::bad_request(format!("spec.expirationSeconds: {e}")))?;
    let claims = json!({
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
        "aud": audiences,
        "exp": expires.as_second(),
    });
    let token = format!(
        "kcache.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let body: Value = json!({
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"audiences": audiences, "expirationSeconds": seconds},
        "status": {"token": token, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()},
    });
    Ok(json_response(201, body.to_string().into()))
}
