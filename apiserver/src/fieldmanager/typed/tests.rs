//! Merges, field sets and comparisons per list and map type. Cases carried over from
//! structured-merge-diff `typed/merge_test.go`, `typed/toset_test.go`, `typed/compare_test.go`
//! and `typed/remove_test.go` (inputs and outcomes; our built-in Pod schema stands in for their
//! test schemas of the same list and map types).

use serde_json::{Value, json};

use super::*;
use crate::schema::Schema;

fn pod() -> Ty<'static> {
    Schema::builtin().root("", "v1", "Pod").unwrap()
}

fn fields(set: &FieldSet) -> Value {
    set.to_fields_v1()
}

/// Items merge by key, as in Kubernetes. Their order differs (README "What still differs"):
/// here the live items, then the new ones in the applied order, as structured-merge-diff's
/// older `merge.go` orders them; its newer list walk interleaves new items with the applied
/// order. The order is asserted apart, labelled as this server's.
#[test]
fn associative_list_merges_items_by_key_in_an_order_that_differs_from_kubernetes() {
    let live = json!({"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}});
    let config = json!({"spec": {"containers": [{"name": "c", "image": "c:1"}, {"name": "a", "env": [{"name": "X", "value": "1"}]}]}});
    let merged = merge(&live, &config, pod()).unwrap();
    let mut items = merged["spec"]["containers"].as_array().unwrap().clone();
    let order: Vec<Value> = items.iter().map(|c| c["name"].clone()).collect();
    items.sort_by_key(|c| c["name"].to_string());
    assert_eq!(
        items,
        [
            json!({"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]}),
            json!({"name": "b", "image": "b:1"}),
            json!({"name": "c", "image": "c:1"})
        ]
    );
    assert_eq!(
        order,
        ["a", "b", "c"],
        "this server's order, not Kubernetes'"
    );
}

#[test]
fn set_list_merges_by_value() {
    let live = json!({"metadata": {"finalizers": ["a", "b"]}});
    let config = json!({"metadata": {"finalizers": ["c", "a"]}});
    let merged = merge(&live, &config, pod()).unwrap();
    assert_eq!(merged["metadata"]["finalizers"], json!(["a", "b", "c"]));
}

#[test]
fn atomic_list_and_atomic_map_are_replaced_whole() {
    let live = json!({"spec": {"nodeSelector": {"a": "1"}, "containers": [{"name": "x", "args": ["1", "2"]}]}});
    let config =
        json!({"spec": {"nodeSelector": {"b": "2"}, "containers": [{"name": "x", "args": ["3"]}]}});
    let merged = merge(&live, &config, pod()).unwrap();
    assert_eq!(merged["spec"]["nodeSelector"], json!({"b": "2"}));
    assert_eq!(merged["spec"]["containers"][0]["args"], json!(["3"]));
}

#[test]
fn granular_map_merges_key_by_key_and_null_removes() {
    let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let config = json!({"metadata": {"labels": {"b": null, "c": "3"}}});
    let merged = merge(&live, &config, pod()).unwrap();
    assert_eq!(merged["metadata"]["labels"], json!({"a": "1", "c": "3"}));
}

#[test]
fn duplicate_keys_in_an_applied_list_are_refused() {
    let config = json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
    let err = merge(&json!({}), &config, pod()).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#".spec.containers: duplicate entries for key [name="a"]"#
    );
}

#[test]
fn field_set_has_leaves_items_and_defaulted_keys() {
    let config = json!({"metadata": {"labels": {"app": "web"}, "finalizers": ["x"]}, "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}], "args": ["a"]}]}});
    assert_eq!(
        fields(&to_set(&config, pod())),
        json!({"f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}})
    );
}

#[test]
fn compare_marks_created_maps_and_items_but_not_structs_and_removes_whole_subtrees() {
    let old = json!({"spec": {"containers": [{"name": "a", "image": "1"}]}});
    let new = json!({"metadata": {"labels": {"x": "1"}}, "spec": {"containers": [{"name": "a", "image": "2"}, {"name": "b", "image": "1"}]}});
    let cmp = compare(&old, &new, pod());
    assert_eq!(
        fields(&cmp.added),
        json!({"f:metadata": {"f:labels": {".": {}, "f:x": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
    );
    assert_eq!(
        fields(&cmp.modified),
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {"f:image": {}}}}})
    );
    assert!(cmp.removed.is_empty());
    let back = compare(&new, &old, pod());
    assert_eq!(
        fields(&back.removed),
        json!({"f:metadata": {".": {}, "f:labels": {".": {}, "f:x": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
    );
}

#[test]
fn remove_drops_members_whole_and_keeps_key_fields_of_kept_items() {
    let mut value = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "a", "image": "1", "env": []}, {"name": "b"}]}});
    let set = FieldSet::from_fields_v1(&json!({"f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {"f:name": {}, "f:image": {}}, "k:{\"name\":\"b\"}": {}}}}))
    .unwrap();
    remove(&mut value, pod(), &set);
    assert_eq!(
        value,
        json!({"spec": {"containers": [{"name": "a", "env": []}]}})
    );
}
