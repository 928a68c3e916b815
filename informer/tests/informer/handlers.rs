//! Handler helpers: closures, the filtering handler and the enqueue handlers.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{
    EnqueueHandler, FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs,
};
use kcache_store::MaybeTombstone;
use kcache_workqueue::WorkQueue;

use crate::common::{Recorder, key, pod};
use kcache_testkit::within;

fn labelled(i: usize, rv: &str, selected: bool) -> Arc<Pod> {
    let mut p = pod(i);
    p.metadata.resource_version = Some(rv.into());
    p.metadata.labels = Some([("selected".to_string(), selected.to_string())].into());
    Arc::new(p)
}

fn selected(p: &Pod) -> bool {
    p.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.get("selected").map(String::as_str) == Some("true"))
}

#[test]
fn filtering_handler_update_crossing_the_filter_becomes_add_or_delete() {
    let (rec, mut rx) = Recorder::new();
    let handler = FilteringResourceEventHandler::new(selected, rec);
    handler.on_add(&labelled(0, "1", false), true);
    handler.on_add(&labelled(0, "1", true), true);
    handler.on_update(&labelled(0, "1", false), &labelled(0, "2", true));
    handler.on_update(&labelled(0, "2", true), &labelled(0, "3", true));
    handler.on_update(&labelled(0, "3", true), &labelled(0, "4", false));
    handler.on_update(&labelled(0, "4", false), &labelled(0, "5", false));
    handler.on_delete(&MaybeTombstone::Object(labelled(0, "5", false)));
    handler.on_delete(&MaybeTombstone::Object(labelled(0, "6", true)));
    let mut got = Vec::new();
    while let Ok(e) = rx.try_recv() {
        got.push(e);
    }
    let k = key(0);
    assert_eq!(
        got,
        vec![
            format!("add {k} true"),
            format!("add {k} false"),
            format!("update {k} 2->3"),
            format!("delete {k}"),
            format!("delete {k}"),
        ]
    );
}

#[test]
fn closure_handler_calls_only_the_closures_set() {
    let (tx, rx) = std::sync::mpsc::channel();
    let handler = ResourceEventHandlerFuncs::<Pod>::new().update_func(move |old, new| {
        tx.send((
            old.metadata.resource_version.clone(),
            new.metadata.resource_version.clone(),
        ))
        .unwrap();
    });
    handler.on_add(&labelled(0, "1", true), false);
    handler.on_update(&labelled(0, "1", true), &labelled(0, "2", true));
    handler.on_delete(&MaybeTombstone::Object(labelled(0, "2", true)));
    assert_eq!(
        rx.try_iter().collect::<Vec<_>>(),
        vec![(Some("1".into()), Some("2".into()))]
    );
}

fn owned_by(name: &str, owner: &str, controller: bool) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.namespace = Some("prod".into());
    p.metadata.name = Some(name.into());
    p.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            kind: "ReplicaSet".into(),
            name: owner.into(),
            controller: Some(controller),
            ..Default::default()
        },
    ]);
    Arc::new(p)
}

#[tokio::test]
async fn enqueue_key_handler_enqueues_the_object_key_on_add_update_and_tombstone_delete() {
    let queue = WorkQueue::<String>::new();
    let h = EnqueueHandler::<Pod>::key(queue.clone());
    let p = Arc::new(pod(1));
    h.on_add(&p, true);
    h.on_update(&p, &p); // already waiting: collapsed
    assert_eq!(queue.len(), 1);
    assert_eq!(within("the enqueued key", queue.get()).await, Some(key(1)));
    h.on_delete(&MaybeTombstone::Tombstone(
        kcache_store::DeletedFinalStateUnknown {
            key: key(1),
            obj: p.clone(),
        },
    ));
    assert_eq!(
        queue.len(),
        0,
        "a key being processed is queued again on done"
    );
    queue.done(key(1).as_str());
    assert_eq!(
        within("the key queued again on done", queue.get()).await,
        Some(key(1))
    );
}

#[tokio::test]
async fn enqueue_owner_handler_enqueues_the_controlling_owner_of_that_kind_only() {
    let queue = WorkQueue::<String>::new();
    let h = EnqueueHandler::<Pod>::owner(queue.clone(), "ReplicaSet");
    h.on_add(&owned_by("web-1", "web", true), false);
    h.on_add(&owned_by("db-1", "db", false), false); // not the controller
    let mut orphan = pod(2);
    orphan.metadata.owner_references = None;
    h.on_add(&Arc::new(orphan), false);
    assert_eq!(queue.len(), 1);
    assert_eq!(
        within("the owner's key", queue.get()).await.as_deref(),
        Some("prod/web")
    );
    let other_kind = EnqueueHandler::<Pod>::owner(queue.clone(), "StatefulSet");
    other_kind.on_add(&owned_by("web-2", "web", true), false);
    assert_eq!(queue.len(), 0);
}
