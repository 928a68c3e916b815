//! Indexer and ThreadSafeStore behaviour (client-go's store_test.go, index_test.go,
//! thread_safe_store_test.go).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Pod;
use kcache_store::{
    IndexFunc, IndexValues, Indexer, Indexers, NAMESPACE_INDEX, NODE_NAME_INDEX, OWNER_INDEX,
    Store, StoreError, label_index_func, namespace_index_func, node_name_index_func,
    owner_index_func, owner_index_value, owner_uid_index_func,
};
use kube_core::ObjectMeta;

use crate::pod;

/// Indexes pods by every value of the comma-separated label "users".
fn users_index() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod| {
        let users = p.metadata.labels.as_ref().and_then(|l| l.get("users"));
        Ok(users
            .map(|u| u.split(',').map(str::to_owned).collect())
            .unwrap_or_default())
    })
}

fn keys(indexer: &Indexer<Pod>, index: &str, value: &str) -> Vec<String> {
    indexer
        .index_keys(index, value)
        .unwrap()
        .iter()
        .map(|k| k.to_string())
        .collect()
}

fn with_users_index() -> Indexer<Pod> {
    Indexer::new(Indexers::from_iter([("users".to_owned(), users_index())]))
}

#[test]
fn add_get_update_delete() {
    let s = Indexer::<Pod>::default();
    s.add(pod("ns", "a", "1", &[])).unwrap();
    assert_eq!(
        s.get_by_key("ns/a")
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some("1")
    );
    s.update(pod("ns", "a", "2", &[])).unwrap();
    assert_eq!(
        s.get(&pod("ns", "a", "", &[]))
            .unwrap()
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some("2")
    );
    assert_eq!(s.list().len(), 1);
    assert_eq!(
        s.list_keys()
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        ["ns/a"]
    );
    s.delete(pod("ns", "a", "3", &[])).unwrap();
    assert!(s.get_by_key("ns/a").is_none());
    assert!(s.is_empty());
}

#[test]
fn reads_share_the_stored_arc() {
    let s = Indexer::<Pod>::with_namespace_index();
    let p = pod("ns", "a", "1", &[]);
    s.add(Arc::clone(&p)).unwrap();
    assert!(Arc::ptr_eq(&p, &s.get_by_key("ns/a").unwrap()));
    assert!(Arc::ptr_eq(
        &p,
        &s.by_index(NAMESPACE_INDEX, "ns").unwrap()[0]
    ));
    assert!(Arc::ptr_eq(&p, &s.list()[0]));
}

#[test]
fn key_errors_are_wrapped() {
    let s = Indexer::<Pod>::default();
    let nameless = Arc::new(Pod {
        metadata: ObjectMeta::default(),
        ..Default::default()
    });
    assert!(matches!(s.add(nameless), Err(StoreError::Key(_))));
}

#[test]
fn replace_swaps_items_and_rebuilds_indexes() {
    let s = with_users_index();
    s.add(pod("ns", "old", "1", &[("users", "ernie")])).unwrap();
    s.replace(
        vec![
            pod("ns", "a", "5", &[("users", "bert")]),
            pod("ns", "b", "6", &[("users", "bert,elmo")]),
        ],
        "10",
    )
    .unwrap();
    assert!(s.get_by_key("ns/old").is_none());
    assert!(keys(&s, "users", "ernie").is_empty());
    assert_eq!(keys(&s, "users", "bert"), ["ns/a", "ns/b"]);
    assert_eq!(keys(&s, "users", "elmo"), ["ns/b"]);
    assert_eq!(s.last_store_sync_resource_version(), "10");
}

#[test]
fn empty_index_sets_removed_non_empty_kept() {
    let s = with_users_index();
    s.add(pod("ns", "a", "1", &[("users", "ernie,bert")]))
        .unwrap();
    s.add(pod("ns", "b", "1", &[("users", "bert")])).unwrap();
    s.update(pod("ns", "a", "2", &[("users", "elmo")])).unwrap();
    let mut values = s.list_index_func_values("users");
    values.sort();
    assert_eq!(values, ["bert", "elmo"], "ernie's empty set is gone");
    assert_eq!(
        keys(&s, "users", "bert"),
        ["ns/b"],
        "bert keeps its other key"
    );
    s.delete(pod("ns", "b", "3", &[("users", "bert")])).unwrap();
    assert_eq!(s.list_index_func_values("users"), ["elmo"]);
}

#[test]
fn multi_value_index_functions_exact_through_updates() {
    let s = with_users_index();
    s.add(pod("ns", "one", "1", &[("users", "ernie,bert")]))
        .unwrap();
    s.add(pod("ns", "two", "1", &[("users", "bert,oscar")]))
        .unwrap();
    s.add(pod("ns", "tre", "1", &[("users", "ernie,elmo")]))
        .unwrap();
    assert_eq!(keys(&s, "users", "ernie"), ["ns/one", "ns/tre"]);
    assert_eq!(keys(&s, "users", "bert"), ["ns/one", "ns/two"]);
    assert_eq!(keys(&s, "users", "elmo"), ["ns/tre"]);
    assert_eq!(keys(&s, "users", "oscar"), ["ns/two"]);

    s.update(pod("ns", "one", "2", &[("users", "oscar,elmo")]))
        .unwrap();
    assert_eq!(keys(&s, "users", "ernie"), ["ns/tre"]);
    assert_eq!(keys(&s, "users", "bert"), ["ns/two"]);
    assert_eq!(keys(&s, "users", "elmo"), ["ns/one", "ns/tre"]);
    assert_eq!(keys(&s, "users", "oscar"), ["ns/one", "ns/two"]);

    // `index` returns each object once even when it shares several values with the query.
    let query = pod("x", "q", "", &[("users", "oscar,elmo")]);
    let mut names: Vec<_> = s
        .index("users", &query)
        .unwrap()
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["one", "tre", "two"]);
}

#[test]
fn unchanged_single_value_costs_no_index_work() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let ns = namespace_index_func::<Pod>();
    let counting: IndexFunc<Pod> = Arc::new(move |p: &Pod| {
        counted.fetch_add(1, Ordering::Relaxed);
        ns(p)
    });
    let s = Indexer::new(Indexers::from_iter([(
        NAMESPACE_INDEX.to_owned(),
        counting,
    )]));
    s.add(pod("ns", "a", "1", &[])).unwrap();
    s.update(pod("ns", "a", "2", &[])).unwrap();
    // The index function ran for the new and the old object; the index still has one entry.
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    assert_eq!(keys(&s, NAMESPACE_INDEX, "ns"), ["ns/a"]);
}

#[test]
fn rv_follows_last_write() {
    let s = Indexer::<Pod>::default();
    assert_eq!(s.last_store_sync_resource_version(), "");
    s.add(pod("ns", "a", "3", &[])).unwrap();
    assert_eq!(s.last_store_sync_resource_version(), "3");
    s.update(pod("ns", "a", "4", &[])).unwrap();
    assert_eq!(s.last_store_sync_resource_version(), "4");
    s.delete(pod("ns", "a", "5", &[])).unwrap();
    assert_eq!(s.last_store_sync_resource_version(), "5");
    s.replace(vec![pod("ns", "b", "6", &[])], "9").unwrap();
    assert_eq!(s.last_store_sync_resource_version(), "9");
    s.bookmark("12");
    assert_eq!(s.last_store_sync_resource_version(), "12");
    s.delete_by_key("ns/b");
    assert_eq!(
        s.last_store_sync_resource_version(),
        "12",
        "delete by key does not move the RV"
    );
}

#[test]
fn rv_keeps_the_last_non_empty_version() {
    let s = Indexer::<Pod>::default();
    s.add(pod("ns", "a", "7", &[])).unwrap();
    s.update(pod("ns", "a", "", &[])).unwrap();
    assert_eq!(
        s.last_store_sync_resource_version(),
        "7",
        "an object without a version leaves the recorded one"
    );
    let mut bare = Pod::default();
    bare.metadata.namespace = Some("ns".into());
    bare.metadata.name = Some("c".into());
    s.add(Arc::new(bare)).unwrap();
    s.replace(vec![pod("ns", "b", "8", &[])], "").unwrap();
    s.bookmark("");
    assert_eq!(s.last_store_sync_resource_version(), "7");
    s.replace(vec![pod("ns", "b", "8", &[])], "9").unwrap();
    assert_eq!(s.last_store_sync_resource_version(), "9");
}

#[test]
fn upsert_returns_the_replaced_object() {
    let s = Indexer::<Pod>::default();
    assert!(s.upsert(pod("ns", "a", "1", &[])).unwrap().is_none());
    let old = s.upsert(pod("ns", "a", "2", &[])).unwrap().unwrap();
    assert_eq!(old.metadata.resource_version.as_deref(), Some("1"));
    assert_eq!(s.last_store_sync_resource_version(), "2");
}

#[test]
fn missing_value_gives_empty_result() {
    let s = Indexer::<Pod>::with_namespace_index();
    s.add(pod("ns", "a", "1", &[])).unwrap();
    assert!(s.by_index(NAMESPACE_INDEX, "nope").unwrap().is_empty());
    assert!(s.index_keys(NAMESPACE_INDEX, "nope").unwrap().is_empty());
}

#[test]
fn unknown_index_name_is_an_error() {
    let s = Indexer::<Pod>::default();
    assert!(matches!(s.by_index("nope", "x"), Err(StoreError::UnknownIndex(n)) if n == "nope"));
    assert!(matches!(
        s.index_keys("nope", "x"),
        Err(StoreError::UnknownIndex(_))
    ));
    assert!(matches!(
        s.index("nope", &pod("a", "b", "", &[])),
        Err(StoreError::UnknownIndex(_))
    ));
    assert!(s.list_index_func_values("nope").is_empty());
}

#[test]
fn index_keys_are_sorted() {
    let s = Indexer::<Pod>::with_namespace_index();
    for name in ["zeta", "alpha", "mid", "beta"] {
        s.add(pod("ns", name, "1", &[])).unwrap();
    }
    assert_eq!(
        keys(&s, NAMESPACE_INDEX, "ns"),
        ["ns/alpha", "ns/beta", "ns/mid", "ns/zeta"]
    );
}

#[test]
fn index_added_while_running_covers_existing_items() {
    let s = Indexer::<Pod>::with_namespace_index();
    s.add(pod("ns", "a", "1", &[("app", "web")])).unwrap();
    s.add(pod("ns", "b", "1", &[("app", "db")])).unwrap();
    s.add_index("app", label_index_func("app")).unwrap();
    assert_eq!(keys(&s, "app", "web"), ["ns/a"]);
    s.add(pod("ns", "c", "1", &[("app", "web")])).unwrap();
    assert_eq!(keys(&s, "app", "web"), ["ns/a", "ns/c"]);
    assert_eq!(
        keys(&s, NAMESPACE_INDEX, "ns"),
        ["ns/a", "ns/b", "ns/c"],
        "existing index untouched"
    );
    let mut names: Vec<_> = s.get_indexers().into_keys().collect();
    names.sort();
    assert_eq!(names, ["app", NAMESPACE_INDEX]);
}

#[test]
fn add_indexers_rejects_name_conflicts() {
    let s = Indexer::<Pod>::with_namespace_index();
    let err = s
        .add_indexers(Indexers::from_iter([
            (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
            ("owner".to_owned(), owner_uid_index_func()),
        ]))
        .unwrap_err();
    assert!(matches!(err, StoreError::IndexerConflict(names) if names == [NAMESPACE_INDEX]));
    assert_eq!(s.get_indexers().len(), 1, "nothing added on conflict");
}

fn failing_for(name: &'static str) -> IndexFunc<Pod> {
    Arc::new(move |p: &Pod| {
        if p.metadata.name.as_deref() == Some(name) {
            Err("boom".into())
        } else {
            Ok(IndexValues::from_iter([p
                .metadata
                .name
                .clone()
                .unwrap_or_default()]))
        }
    })
}

#[test]
fn failing_index_function_leaves_store_and_indexes_unchanged() {
    let s = Indexer::new(Indexers::from_iter([
        (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
        ("fails".to_owned(), failing_for("bad")),
    ]));
    s.add(pod("ns", "a", "1", &[])).unwrap();
    let err = s.add(pod("ns", "bad", "2", &[])).unwrap_err();
    assert!(
        matches!(err, StoreError::IndexFunc { ref index, .. } if index == "fails"),
        "{err}"
    );
    assert!(s.get_by_key("ns/bad").is_none());
    assert_eq!(keys(&s, NAMESPACE_INDEX, "ns"), ["ns/a"]);
    assert!(s.replace(vec![pod("ns", "bad", "3", &[])], "3").is_err());
    assert!(
        s.get_by_key("ns/a").is_some(),
        "a failed replace changes nothing"
    );
    assert!(s.add_index("fails-too", failing_for("a")).is_err());
    assert_eq!(s.get_indexers().len(), 2);
}

#[test]
fn owner_and_label_index_helpers() {
    use kcache_store::testing::pod as fixture;
    let s = Indexer::new(Indexers::from_iter([
        ("owner".to_owned(), owner_uid_index_func()),
        ("app".to_owned(), label_index_func("app")),
    ]));
    let p = Arc::new(fixture(0, 10));
    s.add(Arc::clone(&p)).unwrap();
    let uid = p.metadata.owner_references.as_ref().unwrap()[0].uid.clone();
    assert_eq!(s.by_index("owner", &uid).unwrap().len(), 1);
    assert_eq!(s.by_index("app", "app-0").unwrap().len(), 1);
    let none: IndexValues = kcache_store::label_index_func::<Pod>("missing")(&p).unwrap();
    assert!(none.is_empty());
}

#[test]
fn node_name_index_finds_the_pods_of_a_node_and_skips_unscheduled_ones() {
    let pods = Indexer::<Pod>::with_namespace_index();
    pods.add_index(NODE_NAME_INDEX, node_name_index_func())
        .unwrap();
    let mut on_node = (*pod("a", "p1", "1", &[])).clone();
    on_node.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        node_name: Some("node-1".into()),
        ..Default::default()
    });
    pods.add(Arc::new(on_node)).unwrap();
    pods.add(pod("a", "p2", "1", &[])).unwrap();
    assert_eq!(keys(&pods, NODE_NAME_INDEX, "node-1"), ["a/p1"]);
    assert_eq!(pods.list_index_func_values(NODE_NAME_INDEX), ["node-1"]);
}

#[test]
fn owner_index_is_namespaced_so_same_named_owners_stay_apart() {
    let pods = Indexer::<Pod>::with_namespace_index();
    pods.add_index(OWNER_INDEX, owner_index_func()).unwrap();
    for ns in ["a", "b"] {
        let mut p = (*pod(ns, "web-1", "1", &[])).clone();
        p.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                kind: "ReplicaSet".into(),
                name: "web".into(),
                ..Default::default()
            },
        ]);
        pods.add(Arc::new(p)).unwrap();
    }
    assert_eq!(
        keys(
            &pods,
            OWNER_INDEX,
            &owner_index_value("ReplicaSet", "a", "web")
        ),
        ["a/web-1"]
    );
    assert_eq!(owner_index_value("Node", "", "n1"), "Node/n1");
}

#[test]
fn index_values_build_from_a_vec() {
    let values: IndexValues = vec!["x".to_string(), "y".to_string()].into();
    assert_eq!(values.as_slice(), ["x", "y"]);
}

#[test]
fn index_values_build_from_one_value_an_option_an_array_or_an_iterator() {
    assert_eq!(IndexValues::from("x").as_slice(), ["x"]);
    assert_eq!(IndexValues::from("x".to_string()), IndexValues::one("x"));
    assert_eq!(IndexValues::from(Some("x".to_string())).as_slice(), ["x"]);
    assert!(IndexValues::from(None::<String>).is_empty());
    assert_eq!(IndexValues::from(["x", "y"]).as_slice(), ["x", "y"]);
    let mut collected: IndexValues = ["x"].into_iter().collect();
    collected.push("y");
    collected.extend(["z"]);
    assert_eq!(collected.as_slice(), ["x", "y", "z"]);
    assert_eq!(collected.into_iter().collect::<Vec<_>>(), ["x", "y", "z"]);
}

#[test]
fn an_index_function_returning_a_vec_indexes_every_value() {
    let s = Indexer::<Pod>::with_namespace_index();
    s.add_index(
        "letters",
        Arc::new(|_: &Pod| Ok(IndexValues::from(vec!["a".to_string(), "b".to_string()]))),
    )
    .unwrap();
    s.add(Arc::new(kcache_store::testing::pod(0, 10))).unwrap();
    assert_eq!(s.by_index("letters", "a").unwrap().len(), 1);
    assert_eq!(s.by_index("letters", "b").unwrap().len(), 1);
}

#[test]
fn panicking_index_function_is_an_index_error_and_the_store_goes_on() {
    let boom: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        if p.metadata.name.as_deref() == Some("bad") {
            panic!("index function bug");
        }
        Ok(IndexValues::one("v"))
    });
    let s = Indexer::<Pod>::new(Indexers::from_iter([("boom".to_string(), boom)]));
    let err = s.add(pod("ns", "bad", "1", &[])).unwrap_err();
    assert!(
        matches!(&err, StoreError::IndexFunc { index, .. } if index == "boom"),
        "{err:?}"
    );
    assert!(
        std::error::Error::source(&err)
            .is_some_and(|e| e.to_string().contains("index function bug"))
    );
    s.add(pod("ns", "good", "2", &[])).unwrap();
    assert_eq!(keys(&s, "boom", "v"), ["ns/good"]);
}

#[test]
fn upsert_keyed_stores_a_new_object_under_the_given_shared_key_and_records_its_version() {
    let s = Indexer::<Pod>::default();
    let key: kcache_store::ObjectKey = Arc::from("ns/a");
    assert!(
        s.upsert_keyed(&key, pod("ns", "a", "3", &[]))
            .unwrap()
            .is_none()
    );
    let stored = s.list_keys();
    assert!(Arc::ptr_eq(&stored[0], &key), "the queue's key, not a copy");
    let old = s.upsert_keyed(&key, pod("ns", "a", "4", &[])).unwrap();
    assert_eq!(old.unwrap().metadata.resource_version.as_deref(), Some("3"));
    assert_eq!(s.last_store_sync_resource_version(), "4");
    s.delete_keyed("ns/a", &pod("ns", "a", "5", &[]));
    assert!(s.is_empty());
    assert_eq!(s.last_store_sync_resource_version(), "5");
}
