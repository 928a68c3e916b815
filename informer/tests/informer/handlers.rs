//! Handler helpers: closures and the filtering handler.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{
    FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs,
};
use kcache_store::MaybeTombstone;

use crate::common::{Recorder, key, pod};

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
