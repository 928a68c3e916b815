//! Store transactions.

use k8s_openapi::api::core::v1::Pod;
use kcache_store::{Indexer, Store, StoreError, Transaction, TransactionType};

use crate::pod;

#[test]
fn transaction_applies_every_operation_in_order() {
    let s = Indexer::<Pod>::with_namespace_index();
    s.add(pod("ns", "gone", "1", &[])).unwrap();
    s.transaction(vec![
        Transaction::new(TransactionType::Added, pod("ns", "a", "2", &[])),
        Transaction::new(TransactionType::Updated, pod("ns", "a", "3", &[])),
        Transaction::new(TransactionType::Deleted, pod("ns", "gone", "4", &[])),
    ])
    .unwrap();
    assert_eq!(
        s.get_by_key("ns/a")
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some("3")
    );
    assert!(s.get_by_key("ns/gone").is_none());
    assert_eq!(s.last_store_sync_resource_version(), "4");
}

#[test]
fn transaction_error_lists_the_successful_entries() {
    let s = Indexer::<Pod>::default();
    let mut nameless = (*pod("ns", "x", "", &[])).clone();
    nameless.metadata.name = None;
    let err = s
        .transaction(vec![
            Transaction::new(TransactionType::Added, pod("ns", "a", "1", &[])),
            Transaction::new(TransactionType::Added, std::sync::Arc::new(nameless)),
            Transaction::new(TransactionType::Added, pod("ns", "b", "2", &[])),
        ])
        .unwrap_err();
    let StoreError::Transaction(t) = err else {
        panic!("expected a transaction error, got {err}")
    };
    assert_eq!(t.successful, [0, 2]);
    assert_eq!(t.errors.len(), 1);
    assert_eq!(t.errors[0].0, 1);
    assert!(t.to_string().contains("1 of 3"), "{t}");
    assert_eq!(s.len(), 2);
    assert_eq!(s.last_store_sync_resource_version(), "2");
}
