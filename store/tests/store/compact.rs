//! The compact store (feature `compact`): objects held as compressed JSON and decoded on read
//! behave as the shared ones; a failing decode is a typed error, never a panic.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_store::testing::pod_at;
use kcache_store::{
    Indexer, Indexers, NAMESPACE_INDEX, Store, StoreError, ThreadSafeStore, label_index_func,
    meta_namespace_key_func, namespace_index_func,
};
use serde::{Deserialize, Serialize};

use crate::pod;

fn compact_indexer() -> Indexer<Pod> {
    Indexer::compact(
        meta_namespace_key_func(),
        Indexers::from_iter([
            (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
            ("app".to_owned(), label_index_func("app")),
        ]),
    )
}

fn fixture(n: usize) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| Arc::new(pod_at(i, 4, 100 + i as u64)))
        .collect()
}

#[test]
fn compact_store_round_trips_realistic_pods_before_and_after_its_dictionary() {
    let indexer = compact_indexer();
    assert!(indexer.store().is_compact());
    let before = Arc::new(pod_at(1000, 4, 7));
    indexer.add(Arc::clone(&before)).unwrap();
    let key = indexer.key_of(&before).unwrap();
    assert_eq!(indexer.get_by_key(&key).as_deref(), Some(&*before));

    let pods = fixture(100);
    indexer.replace(pods.clone(), "200").unwrap();
    for p in &pods {
        let key = indexer.key_of(p).unwrap();
        assert_eq!(indexer.get_by_key(&key).as_deref(), Some(&**p));
    }
    let mut listed: Vec<Pod> = indexer
        .list()
        .into_iter()
        .map(Arc::unwrap_or_clone)
        .collect();
    listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut expected: Vec<Pod> = pods.iter().map(|p| (**p).clone()).collect();
    expected.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    assert_eq!(listed, expected);
    assert_eq!(indexer.last_store_sync_resource_version(), "200");

    let after = Arc::new(pod_at(2000, 4, 300));
    assert!(indexer.upsert(Arc::clone(&after)).unwrap().is_none());
    let key = indexer.key_of(&after).unwrap();
    assert_eq!(indexer.get_by_key(&key).as_deref(), Some(&*after));
    assert_eq!(indexer.last_store_sync_resource_version(), "300");
}

#[test]
fn compact_store_maintains_indexes_through_updates_and_deletes() {
    let indexer = compact_indexer();
    indexer.add(pod("a", "p1", "1", &[("app", "web")])).unwrap();
    indexer.add(pod("a", "p2", "2", &[("app", "web")])).unwrap();
    indexer.add(pod("b", "p3", "3", &[("app", "db")])).unwrap();
    assert_eq!(indexer.by_index("app", "web").unwrap().len(), 2);

    let old = indexer
        .upsert(pod("a", "p2", "4", &[("app", "db")]))
        .unwrap();
    assert_eq!(old.unwrap().metadata.resource_version.as_deref(), Some("2"));
    let keys: Vec<String> = indexer
        .index_keys("app", "db")
        .unwrap()
        .iter()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(keys, ["a/p2", "b/p3"]);
    let web = indexer.by_index("app", "web").unwrap();
    assert_eq!(web.len(), 1);
    assert_eq!(web[0].metadata.name.as_deref(), Some("p1"));
    let same_app = indexer
        .index("app", &pod("x", "y", "", &[("app", "db")]))
        .unwrap();
    assert_eq!(same_app.len(), 2);

    indexer.delete(pod("a", "p1", "5", &[])).unwrap();
    assert_eq!(indexer.list_index_func_values("app"), ["db"]);
    assert_eq!(indexer.by_index(NAMESPACE_INDEX, "a").unwrap().len(), 1);

    indexer
        .add_index(
            "name",
            Arc::new(|p: &Pod| Ok(p.metadata.name.clone().into())),
        )
        .unwrap();
    assert_eq!(indexer.by_index("name", "p3").unwrap().len(), 1);
}

#[test]
fn compact_store_replace_rebuilds_items_and_indexes() {
    let indexer = compact_indexer();
    indexer
        .add(pod("a", "gone", "1", &[("app", "old")]))
        .unwrap();
    let pods = fixture(40);
    indexer.replace(pods.clone(), "50").unwrap();
    assert_eq!(indexer.len(), 40);
    assert!(indexer.get_by_key("a/gone").is_none());
    assert!(indexer.by_index("app", "old").unwrap().is_empty());
    let in_ns0 = indexer.by_index(NAMESPACE_INDEX, "ns-0").unwrap();
    assert_eq!(in_ns0.len(), 10);
    assert!(
        in_ns0
            .iter()
            .all(|p| p.metadata.namespace.as_deref() == Some("ns-0"))
    );
    let mut keys: Vec<String> = indexer.list_keys().iter().map(|k| k.to_string()).collect();
    keys.sort();
    let mut expected: Vec<String> = pods.iter().map(|p| indexer.key_of(p).unwrap()).collect();
    expected.sort();
    assert_eq!(keys, expected);
}

/// A type whose JSON does not decode back: written as `written`, read as `read`.
#[derive(Debug, Serialize, Deserialize)]
struct OneWay {
    #[serde(rename(serialize = "written", deserialize = "read"))]
    value: u32,
}

#[test]
fn compact_store_failing_decode_is_a_typed_error_and_changes_nothing() {
    let store = ThreadSafeStore::<OneWay>::compact(Indexers::default());
    store.add("k", Arc::new(OneWay { value: 1 })).unwrap();
    match store.try_get("k") {
        Some(Err(StoreError::Decode { key, source })) => {
            assert_eq!(key, "k");
            assert!(
                source.to_string().contains("missing field `read`"),
                "{source}"
            );
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
    assert!(store.get("k").is_none());
    assert!(store.list().is_empty());
    assert!(matches!(store.try_list(), Err(StoreError::Decode { .. })));
    // Replacing the object needs the old one back: refused, the store as it was.
    assert!(matches!(
        store.upsert("k", Arc::new(OneWay { value: 2 })),
        Err(StoreError::Decode { .. })
    ));
    assert_eq!(store.len(), 1);
    // Deleting removes it all the same.
    assert!(store.delete("k").is_none());
    assert!(store.is_empty());
}

/// A type with a 128-bit integer: serde_json writes and reads it; simd-json does not read a number
/// past 64 bits, so the store's decoder hands such JSON to serde_json.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Wide {
    value: u128,
}

#[test]
fn compact_store_decodes_json_simd_json_rejects_with_serde_json() {
    let store = ThreadSafeStore::<Wide>::compact(Indexers::default());
    let object = Arc::new(Wide { value: u128::MAX });
    store.add("k", Arc::clone(&object)).unwrap();
    assert_eq!(store.get("k").as_deref(), Some(&*object));
    let old = store.upsert("k", Arc::new(Wide { value: 1 })).unwrap();
    assert_eq!(old.as_deref(), Some(&*object));
}

/// An object of `len` bytes of payload.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Blob {
    payload: String,
}

fn blob(len: usize, fill: char) -> Arc<Blob> {
    Arc::new(Blob {
        payload: std::iter::repeat_n(fill, len).collect(),
    })
}

#[test]
fn compact_store_round_trips_objects_past_its_kept_buffers_between_small_ones() {
    let store = ThreadSafeStore::<Blob>::compact(Indexers::default());
    // The store keeps its encoders' and decoders' buffers up to 1 MiB between calls.
    let (small, large, after) = (blob(100, 'a'), blob(3 << 20, 'b'), blob(200, 'c'));
    store.add("small", Arc::clone(&small)).unwrap();
    store.add("large", Arc::clone(&large)).unwrap();
    assert_eq!(store.get("large").as_deref(), Some(&*large));
    let old = store.upsert("small", Arc::clone(&after)).unwrap();
    assert_eq!(old.as_deref(), Some(&*small));
    assert_eq!(store.get("small").as_deref(), Some(&*after));
    let old = store.upsert("large", Arc::clone(&small)).unwrap();
    assert_eq!(old.as_deref(), Some(&*large));
    assert_eq!(store.get("large").as_deref(), Some(&*small));
}
