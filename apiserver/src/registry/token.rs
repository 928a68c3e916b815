//! The `token` subresource of service accounts (`TokenRequest`, what `kubectl create token`
//! asks for; `pkg/registry/core/serviceaccount/storage/token.go`): a JWT signed by the
//! server's issuer (module `tokens`) with Kubernetes' claims, for the audiences asked (else
//! the API audience), valid for `expirationSeconds` (default 3600, at least 600), bound to a
//! pod, secret or node when `boundObjectRef` names one.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_core::Resource as _;
use serde_json::{Value, json};

use super::Target;
use crate::error::ApiError;
use crate::object::Object;
use crate::tokens::{Claims, ISSUER, Private, Ref};

/// Kubernetes' shortest token lifetime.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// `SetDefaults_TokenRequestSpec`.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

fn ref_of(obj: &Object) -> Ref {
    let meta = obj.meta();
    Ref {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
    }
}

/// The stored core object of `kind` named `name` (in `namespace` if it is namespaced).
async fn core_object(
    target: &Target<'_>,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<std::sync::Arc<Object>>, ApiError> {
    let served = target.shared.served();
    let Some(def) = served
        .resources
        .iter()
        .find(|d| d.api.group.is_empty() && d.api.kind == kind)
    else {
        return Ok(None);
    };
    target
        .shared
        .storage
        .get(def.storage_key(Some(namespace), name))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// The `kubernetes.io` claim's bound objects for `spec.boundObjectRef` (`token.go`'s checks:
/// a Pod, Secret or Node of the core group that exists, with the uid given if any; a pod on
/// a node also names its node).
async fn bind(target: &Target<'_>, private: &mut Private, spec: &Value) -> Result<(), ApiError> {
    let Some(bound) = spec.get("boundObjectRef").filter(|r| !r.is_null()) else {
        return Ok(());
    };
    let text = |k: &str| bound.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name) = (text("apiVersion"), text("kind"), text("name"));
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if !group.is_empty() || !["Pod", "Secret", "Node"].contains(&kind) {
        let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
        let gvk = format!("{group}/{version}, Kind={kind}");
        return Err(ApiError::bad_request(format!(
            "cannot bind token to object of type {gvk}"
        )));
    }
    let plural = format!("{}s", kind.to_ascii_lowercase());
    let namespace = private.namespace.clone();
    let obj = core_object(target, kind, &namespace, name)
        .await?
        .ok_or_else(|| ApiError::not_found("", &plural, name))?;
    let found = ref_of(&obj);
    let wanted_uid = text("uid");
    if !wanted_uid.is_empty() && wanted_uid != found.uid {
        return Err(ApiError::conflict(
            "",
            kind,
            name,
            &format!(
                "the UID in the bound object reference ({wanted_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    match kind {
        "Pod" => {
            let node = obj.to_value()["spec"]["nodeName"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if !node.is_empty()
                && let Some(node) = core_object(target, "Node", "", &node).await?
            {
                private.node = Some(ref_of(&node));
            }
            private.pod = Some(found);
        }
        "Secret" => private.secret = Some(found),
        _ => private.node = Some(found),
    }
    Ok(())
}

/// POST of `.../serviceaccounts/{name}/token`: the `TokenRequest` answered for `request`.
pub(crate) async fn create_token(
    target: &Target<'_>,
    name: &str,
    request: &Value,
) -> Result<Value, ApiError> {
    let Some(account) = target.get(name).await? else {
        return Err(target.not_found(name));
    };
    let spec = &request["spec"];
    let mut audiences: Vec<String> = spec["audiences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if audiences.is_empty() {
        audiences.push(ISSUER.to_owned());
    }
    let seconds = spec["expirationSeconds"]
        .as_i64()
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
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
    let namespace = target.namespace.unwrap_or("default").to_owned();
    let mut private = Private {
        namespace: namespace.clone(),
        serviceaccount: ref_of(&account),
        pod: None,
        secret: None,
        node: None,
    };
    bind(target, &mut private, spec).await?;
    let now = Timestamp::now();
    let expires = now
        .checked_add(SignedDuration::from_secs(seconds))
        .map_err(|e| ApiError::bad_request(format!("spec.expirationSeconds: {e}")))?;
    let claims = Claims::new(private, audiences.clone(), now.as_second(), seconds);
    let issuer = target
        .shared
        .tokens
        .as_ref()
        .ok_or_else(|| ApiError::internal("no service account token issuer"))?;
    let token = issuer
        .sign(&claims)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let mut answered_spec = json!({"audiences": audiences, "expirationSeconds": seconds});
    if let Some(bound) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        answered_spec["boundObjectRef"] = bound.clone();
    }
    Ok(json!({
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
        "spec": answered_spec,
        "status": {"token": token, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()},
    }))
}
