//! Authentication: the user a request is, from its bearer token ([`user_of`]), and the check of
//! the tokens this server issues ([`verify`], which `TokenReview` answers from).

use base64::Engine as _;
use http::{HeaderMap, header};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::access::{TOKEN_PREFIX, User, strings};
use crate::shared::Shared;

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
    let payload = token.strip_prefix(TOKEN_PREFIX).ok_or_else(invalid)?;
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
    let served = shared.served();
    let def = served
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
    let audiences = strings(&claims["aud"]);
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
    if let Some(token) = bearer.filter(|t| t.starts_with(TOKEN_PREFIX))
        && let Ok(claims) = verify(shared, token).await
    {
        return Some(User::service_account(&claims.namespace, &claims.name));
    }
    match &shared.config.token {
        Some(expected) => (bearer == Some(expected.as_str())).then(User::admin),
        None => Some(User::admin()),
    }
}
