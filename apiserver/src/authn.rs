//! Authentication: the user a request is, from its bearer token ([`user_of`]), and the check of
//! the service-account tokens this server issues ([`verify`], which `TokenReview` answers from;
//! `pkg/serviceaccount/claims.go`'s `Validate`: the signature, issuer and validity by the
//! issuer of module `tokens`, then the service account and the bound objects still existing
//! with the uids the token names).

use http::{HeaderMap, header};
use serde_json::Value;

use crate::access::User;
use crate::shared::Shared;
use crate::tokens::{ISSUER, Ref};

/// What a valid token says.
#[derive(Debug)]
pub(crate) struct Claims {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) audiences: Vec<String>,
}

/// The stored core object of `kind` (`plural`) named by `claim`, checked to have its uid: the
/// error is `claims.go`'s.
async fn check_ref(
    shared: &Shared,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
    claim: &Ref,
) -> Result<Value, String> {
    let served = shared.served();
    let def = served
        .resources
        .iter()
        .find(|d| d.api.group.is_empty() && d.api.kind == kind)
        .ok_or_else(|| format!("{plural} are not served"))?;
    let found = shared
        .storage
        .get(def.storage_key(namespace, &claim.name))
        .await
        .map_err(|e| e.to_string())?;
    let Some(obj) = found else {
        return Err(match kind {
            "ServiceAccount" => format!(
                "service account {}/{} has been deleted",
                namespace.unwrap_or(""),
                claim.name
            ),
            _ => format!("{plural} {:?} not found", claim.name),
        });
    };
    let value = obj.to_value();
    let uid = value["metadata"]["uid"].as_str().unwrap_or("");
    if uid != claim.uid {
        let what = match kind {
            "ServiceAccount" => "service account",
            other => &other.to_ascii_lowercase(),
        };
        return Err(format!(
            "{what} UID ({uid}) does not match claim ({})",
            claim.uid
        ));
    }
    Ok(value)
}

/// Checks a token this server issued: signed by its issuer, within its validity, and its
/// service account (and any pod, secret or node it is bound to) still there with the same
/// uid. The error is the message `TokenReview` reports.
pub(crate) async fn verify(shared: &Shared, token: &str) -> Result<Claims, String> {
    let issuer = shared
        .tokens
        .as_ref()
        .ok_or_else(|| "invalid bearer token".to_owned())?;
    let claims = issuer.verify(token)?;
    let private = &claims.kubernetes;
    let namespace = Some(private.namespace.as_str());
    check_ref(
        shared,
        "ServiceAccount",
        "serviceaccounts",
        namespace,
        &private.serviceaccount,
    )
    .await?;
    if let Some(pod) = &private.pod {
        check_ref(shared, "Pod", "pods", namespace, pod).await?;
    }
    if let Some(secret) = &private.secret {
        check_ref(shared, "Secret", "secrets", namespace, secret).await?;
    }
    if let (Some(node), None) = (&private.node, &private.pod) {
        check_ref(shared, "Node", "nodes", None, node).await?;
    }
    Ok(Claims {
        namespace: private.namespace.clone(),
        name: private.serviceaccount.name.clone(),
        audiences: claims.aud,
    })
}

/// The user a request authenticates as: the service account of a valid token this server
/// issued for the API audience, else the admin when the request carries the server's token (or
/// the server has none); `None` when the request must be refused (401).
pub(crate) async fn user_of(shared: &Shared, headers: &HeaderMap) -> Option<User> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let is_server_token = shared
        .config
        .token
        .as_deref()
        .is_some_and(|t| bearer == Some(t));
    if let Some(token) = bearer.filter(|t| !is_server_token && t.split('.').count() == 3)
        && let Ok(claims) = verify(shared, token).await
        && claims.audiences.iter().any(|a| a == ISSUER)
    {
        return Some(User::service_account(&claims.namespace, &claims.name));
    }
    match &shared.config.token {
        Some(expected) => (bearer == Some(expected.as_str())).then(User::admin),
        None => Some(User::admin()),
    }
}
