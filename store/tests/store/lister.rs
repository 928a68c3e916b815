//! Listers.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kcache_store::{Indexer, Lister, Store, parse_label_selector};
use kube_core::Selector;

use crate::pod;

fn names(pods: Vec<Arc<Pod>>) -> Vec<String> {
    let mut n: Vec<_> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    n.sort();
    n
}

fn populated(indexer: Indexer<Pod>) -> Lister<Pod> {
    for (ns, name, app) in [
        ("a", "web-1", "web"),
        ("a", "db-1", "db"),
        ("b", "web-2", "web"),
    ] {
        indexer.add(pod(ns, name, "1", &[("app", app)])).unwrap();
    }
    Lister::new(Arc::new(indexer))
}

#[test]
fn lister_lists_with_a_label_selector() {
    let lister = populated(Indexer::with_namespace_index());
    assert_eq!(
        names(lister.list(&parse_label_selector("app=web").unwrap())),
        ["web-1", "web-2"]
    );
    assert_eq!(lister.list(&Selector::default()).len(), 3);
}

#[test]
fn namespace_lister_uses_the_namespace_index() {
    let lister = populated(Indexer::with_namespace_index());
    let a = lister.namespace("a");
    assert_eq!(names(a.list(&Selector::default())), ["db-1", "web-1"]);
    assert_eq!(
        names(a.list(&parse_label_selector("app in (web)").unwrap())),
        ["web-1"]
    );
    assert!(a.get("web-1").is_some());
    assert!(a.get("web-2").is_none());
}

#[test]
fn namespace_lister_without_index_scans() {
    let lister = populated(Indexer::default());
    assert_eq!(
        names(lister.namespace("b").list(&Selector::default())),
        ["web-2"]
    );
}

#[test]
fn lister_gets_cluster_scoped_objects_by_name() {
    let nodes = Arc::new(Indexer::<Node>::default());
    let mut node = Node::default();
    node.metadata.name = Some("node-1".into());
    nodes.add(Arc::new(node)).unwrap();
    let lister = Lister::new(nodes);
    assert!(lister.get("node-1").is_some());
    assert!(lister.namespace("").get("node-1").is_some());
}
