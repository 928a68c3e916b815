//! Key functions and tombstones.

use std::sync::Arc;

use kcache_store::{
    DeletedFinalStateUnknown, ExplicitKey, IndexValues, KeyError, MaybeTombstone,
    deletion_handling_meta_namespace_key, index_func_to_key_func, label_index_func,
    meta_namespace_key, split_meta_namespace_key,
};

use crate::pod;

#[test]
fn meta_namespace_key_is_namespace_slash_name() {
    assert_eq!(
        meta_namespace_key(&*pod("prod", "web", "", &[])).unwrap(),
        "prod/web"
    );
}

#[test]
fn meta_namespace_key_of_cluster_scoped_object_is_its_name() {
    assert_eq!(
        meta_namespace_key(&*pod("", "node-1", "", &[])).unwrap(),
        "node-1"
    );
}

#[test]
fn meta_namespace_key_without_name_is_a_key_error() {
    let mut p = (*pod("ns", "x", "", &[])).clone();
    p.metadata.name = None;
    assert!(matches!(meta_namespace_key(&p), Err(KeyError::MissingName)));
}

#[test]
fn explicit_key_passes_through() {
    assert_eq!(ExplicitKey("any/thing".into()).key(), "any/thing");
}

#[test]
fn deletion_handling_key_returns_the_tombstone_key() {
    let tombstone = MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
        key: "recorded/key".into(),
        obj: pod("other", "name", "", &[]),
    });
    assert_eq!(
        deletion_handling_meta_namespace_key(&tombstone).unwrap(),
        "recorded/key"
    );
    let live = MaybeTombstone::Object(pod("ns", "a", "", &[]));
    assert_eq!(deletion_handling_meta_namespace_key(&live).unwrap(), "ns/a");
    assert!(tombstone.is_tombstone() && !live.is_tombstone());
    assert_eq!(tombstone.object().metadata.name.as_deref(), Some("name"));
}

#[test]
fn split_meta_namespace_key_accepts_one_or_two_parts_only() {
    assert_eq!(split_meta_namespace_key("a").unwrap(), ("", "a"));
    assert_eq!(split_meta_namespace_key("ns/a").unwrap(), ("ns", "a"));
    assert!(
        matches!(split_meta_namespace_key("a/b/c"), Err(KeyError::InvalidKey(k)) if k == "a/b/c")
    );
}

#[test]
fn index_func_becomes_key_func_only_with_exactly_one_value() {
    let key = index_func_to_key_func(label_index_func::<k8s_openapi::api::core::v1::Pod>("app"));
    assert_eq!(key(&pod("ns", "a", "", &[("app", "web")])).unwrap(), "web");
    assert!(matches!(
        key(&pod("ns", "a", "", &[])),
        Err(KeyError::NotExactlyOneValue(0))
    ));
    let two = index_func_to_key_func(Arc::new(|_: &k8s_openapi::api::core::v1::Pod| {
        Ok::<IndexValues, kcache_store::BoxError>(IndexValues::from(["a", "b"]))
    }));
    assert!(matches!(
        two(&pod("ns", "a", "", &[])),
        Err(KeyError::NotExactlyOneValue(2))
    ));
}

#[test]
fn a_failing_index_func_used_as_key_func_keeps_its_error_as_the_source() {
    let failing = index_func_to_key_func(Arc::new(|_: &k8s_openapi::api::core::v1::Pod| {
        Err::<IndexValues, kcache_store::BoxError>("no owner".into())
    }));
    let err = failing(&pod("ns", "a", "", &[])).err();
    assert!(matches!(err, Some(KeyError::IndexFunc(_))), "{err:?}");
    let source = err.as_ref().and_then(std::error::Error::source);
    assert_eq!(source.map(ToString::to_string).as_deref(), Some("no owner"));
}
