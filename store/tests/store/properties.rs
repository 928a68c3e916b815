//! Property test: random operations keep the stored keys and every index equal to a model, a plain
//! map of key → object computed from the same operations.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_store::{
    IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, Store, meta_namespace_key_func,
    namespace_index_func,
};
use proptest::prelude::*;

use crate::pod;

#[derive(Debug, Clone)]
enum Op {
    Add { ns: u8, name: u8, users: Vec<u8> },
    Delete { ns: u8, name: u8 },
    Replace(Vec<(u8, u8, Vec<u8>)>),
}

fn object() -> impl Strategy<Value = (u8, u8, Vec<u8>)> {
    (0..3u8, 0..8u8, proptest::collection::vec(0..5u8, 0..4))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => object().prop_map(|(ns, name, users)| Op::Add { ns, name, users }),
        3 => (0..3u8, 0..8u8).prop_map(|(ns, name)| Op::Delete { ns, name }),
        1 => proptest::collection::vec(object(), 0..10).prop_map(Op::Replace),
    ]
}

fn make(ns: u8, name: u8, users: &[u8]) -> Arc<Pod> {
    let users: Vec<String> = users.iter().map(|u| format!("u{u}")).collect();
    pod(
        &format!("ns{ns}"),
        &format!("p{name}"),
        "1",
        &[("users", &users.join(","))],
    )
}

fn users_index() -> IndexFunc<Pod> {
    Arc::new(|p: &Pod| {
        let users = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("users"))
            .cloned()
            .unwrap_or_default();
        Ok(users
            .split(',')
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect())
    })
}

/// Every index of `indexer` as value → keys, read through its public API.
fn actual(indexer: &Indexer<Pod>, name: &str) -> BTreeMap<String, BTreeSet<String>> {
    indexer
        .list_index_func_values(name)
        .into_iter()
        .map(|v| {
            let keys = indexer
                .index_keys(name, &v)
                .unwrap()
                .iter()
                .map(|k| k.to_string())
                .collect();
            (v, keys)
        })
        .collect()
}

/// The model: what each operation leaves stored, key → (namespace, users).
type Model = BTreeMap<String, (String, BTreeSet<String>)>;

fn model_key(ns: u8, name: u8) -> String {
    format!("ns{ns}/p{name}")
}

fn model_entry(ns: u8, users: &[u8]) -> (String, BTreeSet<String>) {
    (
        format!("ns{ns}"),
        users.iter().map(|u| format!("u{u}")).collect(),
    )
}

/// The model's indexes, value → keys, computed from the model's entries alone.
fn model_indexes(model: &Model) -> [BTreeMap<String, BTreeSet<String>>; 2] {
    let mut by_namespace: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut by_user: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (key, (ns, users)) in model {
        by_namespace
            .entry(ns.clone())
            .or_default()
            .insert(key.clone());
        for user in users {
            by_user.entry(user.clone()).or_default().insert(key.clone());
        }
    }
    [by_namespace, by_user]
}

/// Applies `ops` to `indexer` and to the model, checking the stored keys and every index against
/// the model's after each.
fn check(indexer: &Indexer<Pod>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut model = Model::new();
    for op in ops {
        match op {
            Op::Add { ns, name, users } => {
                indexer.add(make(ns, name, &users)).unwrap();
                model.insert(model_key(ns, name), model_entry(ns, &users));
            }
            Op::Delete { ns, name } => {
                indexer.delete(make(ns, name, &[])).unwrap();
                model.remove(&model_key(ns, name));
            }
            Op::Replace(objs) => {
                indexer
                    .replace(
                        objs.iter()
                            .map(|(ns, name, users)| make(*ns, *name, users))
                            .collect(),
                        "1",
                    )
                    .unwrap();
                model = objs
                    .iter()
                    .map(|(ns, name, users)| (model_key(*ns, *name), model_entry(*ns, users)))
                    .collect();
            }
        }
        let keys: BTreeSet<String> = indexer.list_keys().iter().map(|k| k.to_string()).collect();
        prop_assert_eq!(keys, model.keys().cloned().collect::<BTreeSet<_>>());
        let [by_namespace, by_user] = model_indexes(&model);
        prop_assert_eq!(actual(indexer, NAMESPACE_INDEX), by_namespace);
        prop_assert_eq!(actual(indexer, "users"), by_user);
    }
    Ok(())
}

fn indexers() -> Indexers<Pod> {
    Indexers::from_iter([
        (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
        ("users".to_owned(), users_index()),
    ])
}

proptest! {
    #[test]
    fn random_operations_keep_keys_and_indexes_equal_to_a_model(ops in proptest::collection::vec(op(), 1..60)) {
        check(&Indexer::new(indexers()), ops)?;
    }

    #[test]
    fn compact_store_random_operations_keep_keys_and_indexes_equal_to_a_model(ops in proptest::collection::vec(op(), 1..60)) {
        check(&Indexer::compact(meta_namespace_key_func(), indexers()), ops)?;
    }
}
