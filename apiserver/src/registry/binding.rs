//! The `binding` subresource of pods (`BindingREST` of
//! `pkg/registry/core/pod/storage/storage.go`): a `Binding` assigns a pod to a node, once.

use serde_json::{Value, json};

use super::field_text;
use super::{Target, now};
use crate::error::ApiError;
use crate::storage::UpdateFn;
use crate::validation::Cause;
use crate::validation::field::{go_string, required, text, unsupported};

/// `ValidatePodBinding`: the target is a node, named.
fn binding_causes(binding: &Value) -> Vec<Cause> {
    let target = binding.get("target").unwrap_or(&Value::Null);
    let mut causes = Vec::new();
    let kind = text(target, "kind");
    if !kind.is_empty() && kind != "Node" {
        causes.push(unsupported("target.kind", kind, &["Node", "<empty>"]));
    }
    if text(target, "name").is_empty() {
        causes.push(required("target.name", ""));
    }
    causes
}

/// Why a binding cannot change the stored pod (`setPodNodeAndMetadata`): the message of the
/// 409 Conflict on `pods/binding` that `assignPod` makes of it.
fn refusal(pod: &Value, name: &str) -> Option<String> {
    let meta = pod.get("metadata").unwrap_or(&Value::Null);
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    if meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return Some(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        ));
    }
    let node = text(spec, "nodeName");
    if !node.is_empty() {
        return Some(format!(
            "pod {name} is already assigned to node {}",
            go_string(node)
        ));
    }
    if spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        return Some(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    None
}

/// The storage precondition a binding's uid and resource version set, checked as storage's
/// `Preconditions.Check` (a Conflict on `pods`).
fn precondition_failure(binding: &Value, pod: &Value) -> Option<String> {
    let given = |field| field_text(binding, "metadata", field);
    let stored = |field| field_text(pod, "metadata", field);
    for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        if !given(field).is_empty() && given(field) != stored(field) {
            return Some(format!(
                "Precondition failed: {label} in precondition: {}, {label} in object meta: {}",
                given(field),
                stored(field)
            ));
        }
    }
    None
}

/// POST of a `Binding` to `pods/{name}/binding`: sets the pod's node name, adds the binding's
/// annotations and marks it `PodScheduled`. Answers a `Status` Success.
pub(crate) async fn bind(
    target: &Target<'_>,
    name: &str,
    binding: &Value,
) -> Result<Value, ApiError> {
    super::check_body_name(binding, name, "Binding")?;
    let causes = binding_causes(binding);
    if !causes.is_empty() {
        // `BindingREST.Create` returns the aggregate itself, not an Invalid status.
        let text: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let message = match text.len() {
            1 => text[0].clone(),
            _ => format!("[{}]", text.join(", ")),
        };
        return Err(ApiError::unconverted(message));
    }
    let node = field_text(binding, "target", "name").to_owned();
    let annotations = binding
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let binding = binding.clone();
    let owned_name = name.to_owned();
    let def = std::sync::Arc::clone(target.def);
    let f: UpdateFn = Box::new(move |cur| {
        let cur = cur.ok_or_else(|| super::not_found(&def, &owned_name))?;
        let mut pod = cur.to_value();
        if let Some(why) = precondition_failure(&binding, &pod) {
            return Err(ApiError::conflict("", "pods", &owned_name, &why));
        }
        if let Some(why) = refusal(&pod, &owned_name) {
            return Err(ApiError::conflict("", "pods/binding", &owned_name, &why));
        }
        pod["spec"]["nodeName"] = Value::String(node.clone());
        if !annotations.is_empty() {
            let meta = &mut pod["metadata"];
            if !meta["annotations"].is_object() {
                meta["annotations"] = json!({});
            }
            for (k, v) in &annotations {
                meta["annotations"][k] = v.clone();
            }
        }
        scheduled(&mut pod);
        crate::object::Object::from_value(pod)
            .map_err(|e| ApiError::internal(format!("binding pod {owned_name}: {e}")))
    });
    super::guaranteed_update(target, name, f).await?;
    Ok(super::created_status())
}

/// Sets the pod's `PodScheduled` condition to True (`UpdatePodCondition`: the transition time
/// changes only with the status).
fn scheduled(pod: &mut Value) {
    let status = &mut pod["status"];
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else {
        return;
    };
    let time = serde_json::to_value(now()).unwrap_or_default();
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
    {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => {}
        Some(c) => {
            c["status"] = json!("True");
            c["lastTransitionTime"] = time;
        }
        None => conditions.push(json!({
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": null,
            "lastTransitionTime": time,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_pod_binding_needs_a_named_node() {
        let causes = binding_causes(&json!({"target": {"kind": "Pod"}}));
        assert_eq!(
            causes,
            vec![
                (
                    "target.kind".to_owned(),
                    "Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\""
                        .to_owned()
                ),
                ("target.name".to_owned(), "Required value".to_owned()),
            ]
        );
        assert!(binding_causes(&json!({"target": {"name": "n1"}})).is_empty());
    }
}
