//! Integration tests of kcache-store, one module per part of the crate.

mod compact;
mod concurrency;
mod hostile;
mod indexer;
mod keys;
mod lister;
mod properties;
mod resource_version;
mod selector;
mod transaction;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube_core::ObjectMeta;

/// A small pod with a namespace (empty for none), name, resource version and labels.
pub fn pod(ns: &str, name: &str, rv: &str, labels: &[(&str, &str)]) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            namespace: (!ns.is_empty()).then(|| ns.to_owned()),
            name: Some(name.to_owned()),
            resource_version: (!rv.is_empty()).then(|| rv.to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    })
}
