//! The NamespaceLifecycle admission plugin (`plugin/pkg/admission/namespace/lifecycle`): no
//! new objects in a namespace that does not exist (404) or is terminating (403), and the
//! system namespaces cannot be deleted (403).

use kube_core::Resource;
use serde_json::json;

use crate::deletion::is_namespace;
use crate::error::ApiError;
use crate::resource::ResourceDef;
use crate::shared::Shared;

/// The namespaces that exist from the start and cannot be deleted.
pub(crate) const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Admits creating `name` of `def` in `namespace`: the namespace must exist (404 `namespaces
/// "x" not found`) and not be terminating (403, with a `NamespaceTerminating` cause). Reads
/// the namespace from storage, as the plugin's live lookup does.
pub(crate) async fn admit_create(
    shared: &Shared,
    def: &ResourceDef,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), ApiError> {
    let Some(namespace) = namespace.filter(|_| def.namespaced) else {
        return Ok(());
    };
    let served = shared.served();
    let Some(namespaces) = served.resources.iter().find(|d| is_namespace(d)) else {
        return Ok(());
    };
    let found = shared
        .storage
        .get(namespaces.storage_key(None, namespace))
        .await
        .map_err(|e| crate::cacher::storage_status(namespaces, namespace, e))?;
    let Some(found) = found else {
        return Err(ApiError::not_found("", "namespaces", namespace));
    };
    if found.meta().deletion_timestamp.is_none()
        && found.field("status.phase").as_deref() != Some("Terminating")
    {
        return Ok(());
    }
    let why = format!(
        "unable to create new content in namespace {namespace} because it is being terminated"
    );
    let mut err = forbidden(def, name, &why);
    if let Some(details) = err.details.as_mut() {
        details["causes"] = json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {namespace} is being terminated"),
            "field": "metadata.namespace",
        }]);
    }
    Err(err)
}

/// 403 for deleting one of the [`SYSTEM_NAMESPACES`] (the NamespaceLifecycle admission plugin).
pub(crate) fn admit_delete(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    if is_namespace(def) && SYSTEM_NAMESPACES.contains(&name) {
        return Err(forbidden(def, name, "this namespace may not be deleted"));
    }
    Ok(())
}

/// Kubernetes' `NewForbidden`: `{resource} "{name}" is forbidden: {why}`.
pub(crate) fn forbidden(def: &ResourceDef, name: &str, why: &str) -> ApiError {
    let resource = def.qualified_plural();
    let message = if name.is_empty() {
        format!("{resource} is forbidden: {why}")
    } else {
        format!("{resource} \"{name}\" is forbidden: {why}")
    };
    ApiError::new(403, "Forbidden", message)
        .with_details(json!({"name": name, "group": def.api.group, "kind": def.api.plural}))
}
