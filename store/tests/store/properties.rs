//! Property test: random operations keep every index equal to one recomputed from scratch.

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

/// The same index recomputed from the stored objects.
fn recomputed(indexer: &Indexer<Pod>, name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let func = &indexer.get_indexers()[name];
    let mut index: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in indexer.list() {
        let key = indexer.key_of(&p).unwrap();
        for v in func(&p).unwrap() {
            index.entry(v).or_default().insert(key.clone());
        }
    }
    index
}

/// Applies `ops` to `indexer`, checking every index against one recomputed after each.
fn check(indexer: &Indexer<Pod>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    for op in ops {
        match op {
            Op::Add { ns, name, users } => indexer.add(make(ns, name, &users)).unwrap(),
            Op::Delete { ns, name } => indexer.delete(make(ns, name, &[])).unwrap(),
            Op::Replace(objs) => indexer
                .replace(
                    objs.iter()
                        .map(|(ns, name, users)| make(*ns, *name, users))
                        .collect(),
                    "1",
                )
                .unwrap(),
        }
        for name in [NAMESPACE_INDEX, "users"] {
            prop_assert_eq!(actual(indexer, name), recomputed(indexer, name));
        }
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
    fn random_operations_keep_indexes_equal_to_recomputed(ops in proptest::collection::vec(op(), 1..60)) {
        check(&Indexer::new(indexers()), ops)?;
    }

    #[test]
    fn compact_store_random_operations_keep_indexes_equal_to_recomputed(ops in proptest::collection::vec(op(), 1..60)) {
        check(&Indexer::compact(meta_namespace_key_func(), indexers()), ops)?;
    }
}
