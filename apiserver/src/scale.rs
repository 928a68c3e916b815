//! The `scale` subresource of deployments, replicasets and statefulsets: an `autoscaling/v1`
//! `Scale` read from and written to the object's `spec.replicas` (what `kubectl scale` uses).

use std::sync::Arc;

use axum::response::Response;
use kube_core::Resource;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::http::{RequestCtx, json_response};
use crate::object::Object;
use crate::patch::apply_patch;
use crate::storage::UpdateFn;
use crate::write::{guaranteed_update, read_patch};

/// `spec.selector.matchLabels` as a label selector string (`app=web,tier=front`).
fn selector(spec: &Value) -> String {
    spec["selector"]["matchLabels"]
        .as_object()
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// The `Scale` of an object.
fn scale_of(obj: &Object) -> Value {
    let data = obj.data();
    let spec = data.get("spec").cloned().unwrap_or(Value::Null);
    let meta = obj.meta();
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta.name, "namespace": meta.namespace, "uid": meta.uid,
            "resourceVersion": meta.resource_version,
            "creationTimestamp": meta.creation_timestamp,
        },
        "spec": {"replicas": spec["replicas"].as_i64().unwrap_or(1)},
        "status": {
            "replicas": data.get("status").and_then(|s| s["replicas"].as_i64()).unwrap_or(0),
            "selector": selector(&spec),
        },
    })
}

fn not_found(ctx: &RequestCtx<'_>, name: &str) -> ApiError {
    ApiError::not_found(&ctx.def.api.group, &ctx.def.api.plural, name)
}

/// `spec.replicas` of a written `Scale`: a non-negative integer (else 422 as Kubernetes).
fn replicas_of(name: &str, scale: &Value) -> Result<i64, ApiError> {
    let replicas = &scale["spec"]["replicas"];
    match replicas.as_i64() {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            &[(
                "spec.replicas".to_owned(),
                format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            )],
        )),
    }
}

/// The object with `spec.replicas` set (generation bumped when it changes).
fn with_replicas(cur: &Object, replicas: i64) -> Object {
    let mut data = cur.data();
    let spec = data
        .entry("spec")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let changed = spec["replicas"].as_i64() != Some(replicas);
    spec["replicas"] = json!(replicas);
    let mut next = cur.clone();
    next.set_data(data);
    if changed {
        let generation = cur.meta().generation.unwrap_or(1) + 1;
        next.meta_mut().generation = Some(generation);
    }
    next
}

/// GET of `.../{name}/scale`.
pub(crate) async fn get(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    let obj = ctx
        .shared
        .storage
        .get(ctx.key(name))
        .await
        .map_err(|e| crate::cacher::storage_status(ctx.def, name, e))?
        .ok_or_else(|| not_found(ctx, name))?;
    Ok(json_response(200, scale_of(&obj).to_string().into()))
}

/// PUT (`patch == false`) or PATCH of `.../{name}/scale`.
pub(crate) async fn write(
    ctx: &RequestCtx<'_>,
    name: &str,
    patch: bool,
) -> Result<Response, ApiError> {
    let change = if patch { Some(read_patch(ctx)?) } else { None };
    let body: Value = match change {
        Some(_) => Value::Null,
        None => serde_json::from_slice(&ctx.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding Scale: {e}")))?,
    };
    let owned_name = name.to_owned();
    let def = Arc::clone(ctx.def);
    let f: UpdateFn = Box::new(move |cur| {
        let cur =
            cur.ok_or_else(|| ApiError::not_found(&def.api.group, &def.api.plural, &owned_name))?;
        let scale = match &change {
            Some((kind, p)) => {
                let mut scale = scale_of(cur);
                apply_patch(*kind, &mut scale, p)?;
                scale
            }
            None => {
                let expected = body["metadata"]["resourceVersion"].as_str().unwrap_or("");
                if !expected.is_empty() && expected != cur.resource_version_u64().to_string() {
                    return Err(ApiError::conflict(
                        &def.api.group,
                        &def.api.plural,
                        &owned_name,
                        "the object has been modified; please apply your changes to the latest version and try again",
                    ));
                }
                body.clone()
            }
        };
        Ok(with_replicas(cur, replicas_of(&owned_name, &scale)?))
    });
    let obj = guaranteed_update(ctx, name, f).await?;
    Ok(json_response(200, scale_of(&obj).to_string().into()))
}
