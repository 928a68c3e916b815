//! The vendored definitions compile into the merge rules Kubernetes' API types declare
//! (`k8s.io/api/core/v1/types.go` markers, as published in its OpenAPI).

use serde_json::json;

use super::{ListKind, Schema, Type};

#[test]
fn builtin_schema_has_a_root_per_kind() {
    let schema = Schema::builtin();
    assert!(schema.root("", "v1", "Pod").is_some());
    assert!(schema.root("apps", "v1", "Deployment").is_some());
    assert!(schema.root("", "v1", "NoSuchKind").is_none());
}

#[test]
fn containers_are_a_map_list_keyed_by_name_with_patch_merge_key() {
    let pod = Schema::builtin().root("", "v1", "Pod").unwrap();
    let list = pod.field("spec").field("containers").list().unwrap();
    assert_eq!(list.patch_merge_key.as_deref(), Some("name"));
    assert_eq!(list.patch_strategy.as_deref(), Some("merge"));
    let ListKind::Map(keys) = &list.kind else {
        panic!("containers are {:?}", list.kind)
    };
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].name, "name");
}

#[test]
fn container_port_protocol_key_defaults_to_tcp() {
    let pod = Schema::builtin().root("", "v1", "Pod").unwrap();
    let ports = pod.field("spec").field("containers").items().field("ports");
    let ListKind::Map(keys) = &ports.list().unwrap().kind else {
        panic!("ports are not a map list")
    };
    let names: Vec<_> = keys.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["containerPort", "protocol"]);
    assert_eq!(keys[1].default, Some(json!("TCP")));
}

#[test]
fn finalizers_are_a_set_and_args_atomic() {
    let pod = Schema::builtin().root("", "v1", "Pod").unwrap();
    let finalizers = pod.field("metadata").field("finalizers").list().unwrap();
    assert_eq!(finalizers.kind, ListKind::Set);
    let args = pod.field("spec").field("containers").items().field("args");
    assert_eq!(args.list().unwrap().kind, ListKind::Atomic);
}

#[test]
fn label_selector_and_node_selector_are_atomic_labels_granular() {
    let deploy = Schema::builtin().root("apps", "v1", "Deployment").unwrap();
    let selector = deploy.field("spec").field("selector");
    assert!(selector.is_struct() && selector.is_atomic(&json!({})));
    let pod = Schema::builtin().root("", "v1", "Pod").unwrap();
    assert!(
        pod.field("spec")
            .field("nodeSelector")
            .is_atomic(&json!({}))
    );
    let labels = pod.field("metadata").field("labels");
    assert!(matches!(labels.get(), Type::Map { atomic: false, .. }));
}

#[test]
fn structural_schema_of_a_custom_resource_compiles_with_the_same_rules() {
    let schema = Schema::from_structural(
        ("example.com".into(), "v1".into(), "Widget".into()),
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                "items": {"type": "object", "properties": {"port": {"type": "integer"}, "proto": {"type": "string", "default": "TCP"}}}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}),
    );
    let spec = schema
        .root("example.com", "v1", "Widget")
        .unwrap()
        .field("spec");
    assert_eq!(spec.field("tags").list().unwrap().kind, ListKind::Set);
    assert!(matches!(
        spec.field("ports").list().unwrap().kind,
        ListKind::Map(_)
    ));
    assert_eq!(spec.field("raw").get(), &Type::Untyped);
    assert_eq!(spec.field("undeclared").get(), &Type::Untyped);
}
