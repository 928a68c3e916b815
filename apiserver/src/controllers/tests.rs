//! What a change of the graph marks dirty.

use std::sync::Arc;

use serde_json::{Value, json};

use super::graph::Graph;
use super::queue::Queue;
use crate::object::Object;
use crate::resource::{ResourceDef, builtin_resources};

fn def(plural: &str) -> Arc<ResourceDef> {
    Arc::new(
        builtin_resources()
            .into_iter()
            .find(|d| d.api.plural == plural && d.api.group.is_empty())
            .unwrap(),
    )
}

fn object(kind: &str, metadata: Value) -> Arc<Object> {
    Arc::new(
        Object::from_value(json!({"apiVersion": "v1", "kind": kind, "metadata": metadata}))
            .unwrap(),
    )
}

/// The keys queued, in order.
fn queued(queue: &mut Queue) -> Vec<String> {
    std::iter::from_fn(|| queue.pop())
        .map(|k| k.to_string())
        .collect()
}

fn owned(name: &str, owner_uid: &str) -> Arc<Object> {
    object(
        "ConfigMap",
        json!({"name": name, "namespace": "ns", "uid": name,
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner_uid, "uid": owner_uid}]}),
    )
}

#[test]
fn a_plain_create_in_an_active_namespace_queues_nothing() {
    let (mut graph, mut queue) = (Graph::default(), Queue::default());
    graph.upsert(
        &def("namespaces"),
        object("Namespace", json!({"name": "ns", "uid": "ns"})),
        &mut queue,
    );
    let cm = object(
        "ConfigMap",
        json!({"name": "a", "namespace": "ns", "uid": "a"}),
    );
    graph.upsert(&def("configmaps"), cm, &mut queue);
    assert_eq!(queued(&mut queue), [""; 0]);
    assert!(graph.get("a").is_some());
}

#[test]
fn an_owned_object_is_examined_and_an_owners_removal_marks_its_dependents() {
    let (mut graph, mut queue) = (Graph::default(), Queue::default());
    let cms = def("configmaps");
    graph.upsert(
        &cms,
        object(
            "ConfigMap",
            json!({"name": "o", "namespace": "ns", "uid": "o"}),
        ),
        &mut queue,
    );
    graph.upsert(&cms, owned("d1", "o"), &mut queue);
    graph.upsert(&cms, owned("d2", "o"), &mut queue);
    assert_eq!(queued(&mut queue), ["d1", "d2"], "each owned object, once");
    graph.remove("o", &mut queue);
    let mut dependents = queued(&mut queue);
    dependents.sort();
    assert_eq!(dependents, ["d1", "d2"], "the owner is gone");
}

#[test]
fn a_dependent_change_marks_its_owner_being_deleted_and_its_terminating_namespace() {
    let (mut graph, mut queue) = (Graph::default(), Queue::default());
    let cms = def("configmaps");
    let deleting = json!({"name": "o", "namespace": "ns", "uid": "o",
        "deletionTimestamp": "2026-11-24T00:00:00Z", "finalizers": ["foregroundDeletion"]});
    graph.upsert(&cms, object("ConfigMap", deleting), &mut queue);
    let terminating =
        json!({"name": "ns", "uid": "ns", "deletionTimestamp": "2026-11-24T00:00:00Z"});
    graph.upsert(
        &def("namespaces"),
        object("Namespace", terminating),
        &mut queue,
    );
    assert_eq!(queued(&mut queue), ["o", "ns"], "both are being deleted");
    graph.upsert(&cms, owned("d", "o"), &mut queue);
    assert_eq!(queued(&mut queue), ["d", "o", "ns"]);
    graph.remove("d", &mut queue);
    assert_eq!(queued(&mut queue), ["o", "ns"]);
}
