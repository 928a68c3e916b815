//! What a pod update may change (`ValidatePodUpdate` of `pkg/apis/core/validation/
//! validation.go`), and what a write of `pods/ephemeralcontainers` may
//! (`ValidatePodEphemeralContainersUpdate`). The node name is not among what an update may
//! change: a pod is bound through `pods/binding` (or created with one).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};

use super::Cause;
use super::field::{forbidden, go_string, invalid, items, required, text};
use super::pod::spec_of_pod;
use super::toleration::tolerations;

type Data = Map<String, Value>;

/// A pod as the write path holds it: its metadata and its other fields.
pub(crate) type Pod<'a> = (&'a ObjectMeta, &'a Data);

/// The fields `ValidatePodUpdate`'s message lists (`updatablePodSpecFields`).
const POD_UPDATE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";
/// The annotation of static (mirror) pods.
const MIRROR: &str = "kubernetes.io/config.mirror";
const GRACE: &str = "terminationGracePeriodSeconds";
const DEADLINE: &str = "activeDeadlineSeconds";

/// The causes of an invalid pod update, in `ValidatePodUpdate`'s order: the new spec as a
/// pod's, the mirror annotation, containers neither added nor removed and their images set,
/// the active deadline only set or lowered, tolerations only added (or their
/// `tolerationSeconds` changed), scheduling gates only removed (a gated pod may also add to
/// its node selector and required node affinity), and nothing else changed.
pub(crate) fn pod_update(new: Pod<'_>, old: Pod<'_>) -> Vec<Cause> {
    let (new_meta, new, old_meta, old) = (new.0, new.1, old.0, old.1);
    let null = Value::Null;
    let (new_spec, old_spec) = (
        new.get("spec").unwrap_or(&null),
        old.get("spec").unwrap_or(&null),
    );
    let mut causes = Vec::new();
    spec_of_pod(new_spec, &mut causes);
    mirror_annotation(new_meta, old_meta, &mut causes);
    for list in ["containers", "initContainers"] {
        if container_updates(new_spec, old_spec, list, &mut causes) {
            return causes;
        }
    }
    if active_deadline(new_spec, old_spec, &mut causes) {
        return causes;
    }
    only_added_tolerations(new_spec, old_spec, &mut causes);
    only_deleted_gates(new_spec, old_spec, &mut causes);
    if new_spec == old_spec || zeroless(new_spec) == zeroless(old_spec) {
        return causes;
    }
    let mut munged = new_spec.clone();
    if let Some(m) = munged.as_object_mut() {
        for list in ["containers", "initContainers"] {
            let old_list = items(old_spec, list);
            if let Some(new_list) = m.get_mut(list).and_then(Value::as_array_mut) {
                for (n, o) in new_list.iter_mut().zip(old_list) {
                    if let Some(n) = n.as_object_mut() {
                        set(n, "image", o.get("image"));
                    }
                }
            }
        }
        for field in [DEADLINE, "schedulingGates", "tolerations"] {
            set(m, field, old_spec.get(field));
        }
        let was_negative = old_spec
            .get(GRACE)
            .and_then(Value::as_i64)
            .is_some_and(|g| g < 0);
        if was_negative && m.get(GRACE).and_then(Value::as_i64) == Some(1) {
            set(m, GRACE, old_spec.get(GRACE));
        }
        if !items(old_spec, "schedulingGates").is_empty() {
            node_selector_additions(m, old_spec, &mut causes);
            node_affinity_additions(m, old_spec, &mut causes);
        }
    }
    if zeroless(&munged) != zeroless(old_spec) {
        causes.push(forbidden("spec", POD_UPDATE));
    }
    causes
}

/// The causes of a write of `pods/ephemeralcontainers` (the stored pod with the sent
/// ephemeral containers): the new spec as a pod's, and no existing ephemeral container
/// removed or changed (the diff Kubernetes appends to the message is left out).
pub(crate) fn ephemeral_containers_update(new: Pod<'_>, old: Pod<'_>) -> Vec<Cause> {
    let (new_meta, new, old_meta, old) = (new.0, new.1, old.0, old.1);
    let null = Value::Null;
    let new_spec = new.get("spec").unwrap_or(&null);
    let mut causes = Vec::new();
    spec_of_pod(new_spec, &mut causes);
    mirror_annotation(new_meta, old_meta, &mut causes);
    if annotation(old_meta, MIRROR).is_some() {
        return vec![forbidden(
            "",
            "static pods do not support ephemeral containers",
        )];
    }
    let old_spec = old.get("spec").unwrap_or(&null);
    let path = "spec.ephemeralContainers";
    for o in items(old_spec, "ephemeralContainers") {
        let name = text(o, "name");
        match items(new_spec, "ephemeralContainers")
            .iter()
            .find(|n| text(n, "name") == name)
        {
            None => causes.push(forbidden(
                path,
                &format!(
                    "existing ephemeral containers {} may not be removed\n",
                    go_string(name)
                ),
            )),
            Some(n) if zeroless(n) != zeroless(o) => causes.push(forbidden(
                path,
                &format!(
                    "existing ephemeral containers {} may not be changed\n",
                    go_string(name)
                ),
            )),
            Some(_) => {}
        }
    }
    causes
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a String> {
    meta.annotations.as_ref()?.get(key)
}

/// `ValidatePodSpecificAnnotationUpdates`: the mirror annotation is neither added, changed nor
/// removed.
fn mirror_annotation(new: &ObjectMeta, old: &ObjectMeta, causes: &mut Vec<Cause>) {
    let path = format!("metadata.annotations[{MIRROR}]");
    match (annotation(old, MIRROR), annotation(new, MIRROR)) {
        (Some(o), n) if n != Some(o) => causes.push(forbidden(
            &path,
            "may not remove or update mirror pod annotation",
        )),
        (None, Some(_)) => causes.push(forbidden(&path, "may not add mirror pod annotation")),
        _ => {}
    }
}

/// `ValidateContainerUpdates` of `list`: true (stop) when containers were added or removed.
fn container_updates(new: &Value, old: &Value, list: &str, causes: &mut Vec<Cause>) -> bool {
    let path = format!("spec.{list}");
    let new_list = items(new, list);
    if new_list.len() != items(old, list).len() {
        causes.push(forbidden(
            &path,
            "pod updates may not add or remove containers",
        ));
        return true;
    }
    for (i, c) in new_list.iter().enumerate() {
        let image = text(c, "image");
        if image.is_empty() {
            causes.push(required(&format!("{path}[{i}].image"), ""));
        }
        if image.trim() != image {
            causes.push(invalid(
                &format!("{path}[{i}].image"),
                &go_string(image),
                "must not have leading or trailing whitespace",
            ));
        }
    }
    false
}

/// The active deadline may be set, or lowered to a non-negative value, never removed: true
/// (stop) on the errors after which `ValidatePodUpdate` returns.
fn active_deadline(new: &Value, old: &Value, causes: &mut Vec<Cause>) -> bool {
    let path = "spec.activeDeadlineSeconds";
    let old_deadline = old.get(DEADLINE).and_then(Value::as_i64);
    let Some(deadline) = new.get(DEADLINE).and_then(Value::as_i64) else {
        if old_deadline.is_some() {
            causes.push(invalid(
                path,
                "null",
                "must not update from a positive integer to nil value",
            ));
        }
        return false;
    };
    let detail = if !(0..=i64::from(i32::MAX)).contains(&deadline) {
        "must be between 0 and 2147483647, inclusive"
    } else if old_deadline.is_some_and(|o| o < deadline) {
        "must be less than or equal to previous value"
    } else {
        return false;
    };
    causes.push(invalid(path, &deadline.to_string(), detail));
    true
}

/// `validateOnlyAddedTolerations`: every old toleration is still there (its
/// `tolerationSeconds` may change), then the new ones are validated.
fn only_added_tolerations(new: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let without_seconds = |t: &Value| {
        let mut t = zeroless(t);
        if let Some(t) = t.as_object_mut() {
            t.remove("tolerationSeconds");
        }
        t
    };
    let new_list: Vec<Value> = items(new, "tolerations")
        .iter()
        .map(without_seconds)
        .collect();
    if items(old, "tolerations")
        .iter()
        .any(|o| !new_list.contains(&without_seconds(o)))
    {
        causes.push(forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ));
        return;
    }
    tolerations(new, "spec.tolerations", causes);
}

/// `validateOnlyDeletedSchedulingGates`: no scheduling gate added.
fn only_deleted_gates(new: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let old_names: Vec<&str> = items(old, "schedulingGates")
        .iter()
        .map(|g| text(g, "name"))
        .collect();
    // Kubernetes reports each added name once, at its last index.
    let mut added = BTreeMap::new();
    for (i, gate) in items(new, "schedulingGates").iter().enumerate() {
        let name = text(gate, "name");
        if !old_names.contains(&name) {
            added.insert(name, i);
        }
    }
    let mut added: Vec<(&str, usize)> = added.into_iter().collect();
    added.sort_by_key(|(_, i)| *i);
    for (name, i) in added {
        causes.push(forbidden(
            &format!("spec.schedulingGates[{i}].name"),
            &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
        ));
    }
}

/// `validateNodeSelectorMutation` of a gated pod: entries may be added to the node selector,
/// none changed or removed; the munged spec then takes the old selector.
fn node_selector_additions(munged: &mut Data, old_spec: &Value, causes: &mut Vec<Cause>) {
    let new_selector = munged.get("nodeSelector").cloned().unwrap_or(Value::Null);
    let old_selector = old_spec.get("nodeSelector");
    if zeroless(&new_selector) == old_selector.map_or(Value::Null, zeroless) {
        return;
    }
    let kept = old_selector
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| new_selector.get(k) == Some(v));
    if !kept {
        let sorted: BTreeMap<&String, &Value> =
            new_selector.as_object().into_iter().flatten().collect();
        let value = match new_selector.is_object() {
            true => serde_json::to_string(&sorted).unwrap_or_default(),
            false => "null".to_owned(),
        };
        causes.push(invalid(
            "spec.nodeSelector",
            &value,
            "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
        ));
    }
    set(munged, "nodeSelector", old_selector);
}

/// `validateNodeAffinityMutation` of a gated pod: a required node affinity with terms keeps
/// their number, and each term only gains requirements at its end (preferred terms may
/// change); the munged spec then takes the old node affinity.
fn node_affinity_additions(munged: &mut Data, old_spec: &Value, causes: &mut Vec<Cause>) {
    let node_affinity = |spec: &Value| spec.get("affinity")?.get("nodeAffinity").cloned();
    let old = node_affinity(old_spec);
    let new = node_affinity(&Value::Object(munged.clone()));
    let zero = |v: &Option<Value>| v.as_ref().map_or(Value::Null, zeroless);
    if zero(&new) == zero(&old) {
        return;
    }
    let terms = |affinity: &Option<Value>| -> Vec<Value> {
        let required = affinity
            .as_ref()
            .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"));
        required.map_or(Vec::new(), |r| items(r, "nodeSelectorTerms").to_vec())
    };
    let (old_terms, new_terms) = (terms(&old), terms(&new));
    let path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    match (old_terms.len(), new_terms.len()) {
        (0, _) => {}
        (o, n) if o != n => {
            let printed: Vec<Value> = new_terms.iter().map(go_term).collect();
            causes.push(invalid(
                path,
                &Value::Array(printed).to_string(),
                "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
            ));
        }
        _ => {
            for (i, (n, o)) in new_terms.iter().zip(&old_terms).enumerate() {
                if !only_additions(n, o) {
                    causes.push(invalid(
                        &format!("{path}[{i}]"),
                        &go_term(n).to_string(),
                        "only additions are allowed (no mutations or deletions)",
                    ));
                }
            }
        }
    }
    let affinity = munged
        .entry("affinity")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(affinity) = affinity.as_object_mut() {
        set(affinity, "nodeAffinity", old.as_ref());
    }
}

/// `validateNodeSelectorTermHasOnlyAdditions`: the old term's requirements are the new
/// term's first ones.
fn only_additions(new: &Value, old: &Value) -> bool {
    ["matchExpressions", "matchFields"].iter().all(|list| {
        let (n, o) = (items(new, list), items(old, list));
        o.len() <= n.len() && o.iter().zip(n).all(|(o, n)| zeroless(o) == zeroless(n))
    })
}

/// A node selector term as 1.34 prints a value of Kubernetes' internal type: JSON with Go's
/// field names (the internal types have no JSON tags), nil lists as `null`.
fn go_term(term: &Value) -> Value {
    let requirements = |list: &str| {
        let printed: Vec<Value> = items(term, list)
            .iter()
            .map(|r| {
                serde_json::json!({
                    "Key": text(r, "key"),
                    "Operator": text(r, "operator"),
                    "Values": r.get("values").filter(|v| !is_zero(v)).cloned(),
                })
            })
            .collect();
        match printed.is_empty() {
            true => Value::Null,
            false => Value::Array(printed),
        }
    };
    serde_json::json!({
        "MatchExpressions": requirements("matchExpressions"),
        "MatchFields": requirements("matchFields"),
    })
}

fn set(data: &mut Data, field: &str, value: Option<&Value>) {
    match value {
        Some(v) => data.insert(field.to_owned(), v.clone()),
        None => data.remove(field),
    };
}

/// `value` without the fields that hold Go's zero values (null, "", false, 0, empty lists and
/// maps), so that a field left out equals one given as its zero value, as the Go structs
/// Kubernetes compares (`apiequality.Semantic.DeepEqual` also equates nil and empty).
fn zeroless(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), zeroless(v)))
                .filter(|(_, v)| !is_zero(v))
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(zeroless).collect()),
        other => other.clone(),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}
