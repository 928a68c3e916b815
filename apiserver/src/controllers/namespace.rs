//! The namespace controller (`pkg/controller/namespace/deletion`): a terminating namespace's
//! content is deleted (each object's finalizers and grace honoured), its conditions say what
//! remains, and once it is empty the `kubernetes` finalizer is removed (the `/finalize`
//! update), which deletes the namespace.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use kube_core::Resource;
use serde_json::{Value, json};

use super::action::{Action, Change, set_data};
use super::graph::{Entry, Graph};
use crate::deletion::{DeleteOptions, KUBERNETES, is_namespace};

/// One condition as the controller writes it.
fn condition(kind: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": if status { "True" } else { "False" }, "reason": reason, "message": message})
}

/// A condition that is `True` while `counts` is not empty: `reasons` are its reason when
/// false and when true, `messages` its message when false and the prefix of the list when true.
fn remaining(
    kind: &str,
    counts: &BTreeMap<String, usize>,
    reasons: [&str; 2],
    messages: [&str; 2],
    item: fn(&str, usize) -> String,
) -> Value {
    if counts.is_empty() {
        return condition(kind, false, reasons[0], messages[0]);
    }
    let list: Vec<String> = counts.iter().map(|(name, n)| item(name, *n)).collect();
    let message = format!("{}{}", messages[1], list.join(", "));
    condition(kind, true, reasons[1], &message)
}

/// The conditions of a namespace with this content left.
fn conditions(
    resources: &BTreeMap<String, usize>,
    finalizers: &BTreeMap<String, usize>,
) -> Vec<Value> {
    vec![
        condition(
            "NamespaceDeletionDiscoveryFailure",
            false,
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            false,
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        condition(
            "NamespaceDeletionContentFailure",
            false,
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        remaining(
            "NamespaceContentRemaining",
            resources,
            ["ContentRemoved", "SomeResourcesRemain"],
            [
                "All content successfully removed",
                "Some resources are remaining: ",
            ],
            |resource, n| format!("{resource} has {n} resource instances"),
        ),
        remaining(
            "NamespaceFinalizersRemaining",
            finalizers,
            ["ContentHasNoFinalizers", "SomeFinalizersRemain"],
            [
                "All content-preserving finalizers finished",
                "Some content in the namespace has finalizers remaining: ",
            ],
            |finalizer, n| format!("{finalizer} in {n} resource instances"),
        ),
    ]
}

/// The conditions without their times (what decides whether they changed).
fn untimed(conditions: &Value) -> Vec<Value> {
    conditions
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let mut c = c.clone();
            if let Some(m) = c.as_object_mut() {
                m.remove("lastTransitionTime");
            }
            c
        })
        .collect()
}

/// Adds the actions for one terminating namespace.
fn finish(ns: &Entry, graph: &Graph, actions: &mut Vec<Action>) {
    let name = ns.object.meta().name.clone().unwrap_or_default();
    let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
    let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
    for entry in graph.in_namespace(&name) {
        let meta = entry.object.meta();
        *remaining
            .entry(format!("{}.{}", entry.def.api.plural, entry.def.api.group))
            .or_default() += 1;
        for f in meta.finalizers.iter().flatten() {
            *finalizers.entry(f.clone()).or_default() += 1;
        }
        if meta.deletion_timestamp.is_none() {
            let change = Change::Delete(DeleteOptions::default());
            actions.push(Action::on(&entry.def, &entry.object, change));
        }
    }
    let value = ns.object.to_value();
    let wanted = conditions(&remaining, &finalizers);
    if untimed(&value["status"]["conditions"]) != wanted {
        let now = json!(Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        let mut status = value["status"].clone();
        if !status.is_object() {
            status = json!({"phase": "Terminating"});
        }
        status["conditions"] = Value::Array(
            wanted
                .into_iter()
                .map(|mut c| {
                    c["lastTransitionTime"] = now.clone();
                    c
                })
                .collect(),
        );
        actions.push(Action::on(&ns.def, &ns.object, set_data("status", status)));
    }
    if remaining.is_empty() {
        let mut spec = value["spec"].clone();
        if let Some(f) = spec["finalizers"].as_array_mut() {
            f.retain(|x| x != KUBERNETES);
        }
        actions.push(Action::on(&ns.def, &ns.object, set_data("spec", spec)));
    }
}

/// Adds the namespace controller's actions for `entry`, when it is a terminating namespace
/// (`syncNamespaceFromKey`).
pub(super) fn examine(graph: &Graph, entry: &Entry, actions: &mut Vec<Action>) {
    let terminating = is_namespace(&entry.def)
        && entry.object.meta().deletion_timestamp.is_some()
        && entry.object.to_value()["spec"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x == KUBERNETES));
    if terminating {
        finish(entry, graph, actions);
    }
}
