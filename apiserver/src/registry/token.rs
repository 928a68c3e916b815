//! The `token` subresource of service accounts (`TokenRequest`, what `kubectl create token`
//! asks for). The server has no token authority: the token is an opaque string naming the
//! service account, audiences and expiry, which [`crate::authn::verify`] checks.

use base64::Engine as _;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::Target;
use crate::error::ApiError;

/// Kubernetes' shortest token lifetime.
const MIN_EXPIRATION_SECONDS: i64 = 600;

/// POST of `.../serviceaccounts/{name}/token`: the `TokenRequest` answered for `request`.
pub(crate) async fn create_token(
    target: &Target<'_>,
    name: &str,
    request: &Value,
) -> Result<Value, ApiError> {
    let account = target.get(name).await?;
    if account.is_none() {
        return Err(target.not_found(name));
    }
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
    let namespace = target.namespace.unwrap_or("default");
    let expires = Timestamp::now()
        .checked_add(SignedDuration::from_secs(seconds))
        .map_err(|e| ApiError::bad_request(format!("spec.expirationSeconds: {e}")))?;
    let claims = json!({
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
        "aud": audiences,
        "exp": expires.as_second(),
    });
    let token = format!(
        "{}{}",
        crate::access::TOKEN_PREFIX,
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    Ok(json!({
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"audiences": audiences, "expirationSeconds": seconds},
        "status": {"token": token, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()},
    }))
}
