//! The `scale` subresource of deployments, replicasets and statefulsets: an `autoscaling/v1`
//! `Scale` read from and written to the object's `spec.replicas` (what `kubectl scale` uses).

use std::sync::Arc;

use kube_core::Resource;
use serde_json::{Value, json};

use super::PatchRequest;
use super::update::guaranteed_update;
use super::{Target, conflict_stale, not_found};
use crate::error::ApiError;
use crate::object::Object;
use crate::patch::apply_patch;
use crate::schema::Schema;
use crate::storage::UpdateFn;

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

/// The `Scale` of an object (GET of `.../{name}/scale`).
pub(crate) async fn get_scale(target: &Target<'_>, name: &str) -> Result<Value, ApiError> {
    let obj = target
        .get(name)
        .await?
        .ok_or_else(|| target.not_found(name))?;
    Ok(scale_of(&obj))
}

/// A write of a `Scale`: a PUT's body or a PATCH.
pub(crate) enum ScaleWrite {
    /// PUT: the new `Scale`.
    Put(Value),
    /// PATCH of the current `Scale`.
    Patch(PatchRequest),
}

/// PUT or PATCH of `.../{name}/scale`: answers the new `Scale`.
pub(crate) async fn write_scale(
    target: &Target<'_>,
    name: &str,
    write: ScaleWrite,
) -> Result<Value, ApiError> {
    let owned_name = name.to_owned();
    let def = Arc::clone(target.def);
    let f: UpdateFn = Box::new(move |cur| {
        let cur = cur.ok_or_else(|| not_found(&def, &owned_name))?;
        let scale = match &write {
            ScaleWrite::Patch(request) => {
                let mut scale = scale_of(cur);
                let ty = Schema::builtin().root("autoscaling", "v1", "Scale");
                let ty = ty.unwrap_or_else(|| Schema::builtin().untyped());
                apply_patch(request.kind, &mut scale, &request.patch, ty)?;
                scale
            }
            ScaleWrite::Put(body) => {
                let expected = body["metadata"]["resourceVersion"].as_str().unwrap_or("");
                if !expected.is_empty() && expected != cur.resource_version_u64().to_string() {
                    return Err(conflict_stale(&def, &owned_name));
                }
                body.clone()
            }
        };
        Ok(with_replicas(cur, replicas_of(&owned_name, &scale)?))
    });
    let obj = guaranteed_update(target, name, f).await?;
    Ok(scale_of(&obj))
}
