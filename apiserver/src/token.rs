//! The `token` subresource of service accounts (`TokenRequest`, what `kubectl create token`
//! asks for). The server has no token authority: the token is an opaque string naming the
//! service account, audiences and expiry. [`verify`] checks one (well-formed, not expired,
//! its service account still there): `TokenReview` answers with it and requests bearing such
//! a token are authenticated as the service account.

use axum::response::Response;
use base64::Engine as _;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use http::{HeaderMap, header};

use crate::access::User;
use crate::error::ApiError;
use crate::http::{RequestCtx, json_response};
use crate::server::Shared;

/// The prefix of the tokens this server issues.
const PREFIX: &str = "kcache.";

/// What a valid token says.
#[derive(Debug)]
pub(crate) struct Claims {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) audiences: Vec<String>,
}

/// Checks a token this server issued: well-formed, not expired, and its service account exists.
/// The error is the message `TokenReview` reports.
pub(crate) async fn verify(shared: &Shared, token: &str) -> Result<Claims, String> {
    let invalid = || "invalid bearer token".to_owned();
    let payload = token.strip_prefix(PREFIX).ok_or_else(invalid)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| invalid())?;
    let claims: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let sub = claims["sub"].as_str().ok_or_else(invalid)?;
    let rest = sub
        .strip_prefix("system:serviceaccount:")
        .ok_or_else(invalid)?;
    let (namespace, name) = rest.split_once(':').ok_or_else(invalid)?;
    if claims["exp"]
        .as_i64()
        .is_none_or(|exp| exp <= Timestamp::now().as_second())
    {
        return Err("token has expired".into());
    }
    let def = shared
        .resources
        .iter()
        .find(|d| d.api.group.is_empty() && d.api.kind == "ServiceAccount")
        .ok_or_else(invalid)?;
    match shared
        .storage
        .get(def.storage_key(Some(namespace), name))
        .await
    {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Err(format!(
                "service account {namespace}/{name} has been deleted"
            ));
        }
        Err(e) => return Err(e.to_string()),
    }
    let audiences = crate::access::strings(&claims["aud"]);
    Ok(Claims {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        audiences,
    })
}

/// The user a request authenticates as: the service account of a valid token this server
/// issued, else the admin when the request carries the server's token (or the server has
/// none); `None` when the request must be refused (401).
pub(crate) async fn user_of(shared: &Shared, headers: &HeaderMap) -> Option<User> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if let Some(token) = bearer.filter(|t| t.starts_with(PREFIX))
        && let Ok(claims) = verify(shared, token).await
    {
        return Some(User::service_account(&claims.namespace, &claims.name));
    }
    match &shared.config.token {
        Some(expected) => (bearer == Some(expected.as_str())).then(User::admin),
        None => Some(User::admin()),
    }
}

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
        "{PREFIX}{}",
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
