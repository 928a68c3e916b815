//! Hostile input: selectors and objects as a client or a server may send them. Each is a typed
//! error, never a panic, and the store keeps what it held.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_store::{
    Indexer, KeyError, NAMESPACE_INDEX, SelectorError, Store, StoreError, parse_label_selector,
};
use proptest::prelude::*;

use crate::pod;

#[test]
fn multi_byte_characters_after_a_key_are_selector_errors_not_panics() {
    for selector in [
        "a €",
        "a in (€)",
        "a notin (€)",
        "a i€",
        "a in€",
        "€",
        "a=€",
        "a!=€",
        "!€",
        "a in (b,€)",
        "a,€",
        "é in (x)",
        "a\u{1F600}",
    ] {
        assert!(
            matches!(
                parse_label_selector(selector),
                Err(SelectorError::Syntax { .. } | SelectorError::Invalid { .. })
            ),
            "{selector:?}"
        );
    }
}

/// What any string must give: a selector that prints as a string parsing back to the same
/// selector, or a typed error naming the whole string.
fn parses_and_round_trips_or_names_itself(s: &str) -> Result<(), TestCaseError> {
    match parse_label_selector(s) {
        Ok(selector) => {
            let printed = selector.to_string();
            prop_assert_eq!(
                parse_label_selector(&printed),
                Ok(selector),
                "printed {:?}",
                printed
            );
        }
        Err(SelectorError::Syntax { selector, .. } | SelectorError::Invalid { selector, .. }) => {
            prop_assert_eq!(selector, s);
        }
        Err(other) => prop_assert!(false, "unexpected error kind {:?}", other),
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_string_parses_to_a_round_tripping_selector_or_an_error_naming_it(s in "\\PC{0,24}") {
        parses_and_round_trips_or_names_itself(&s)?;
    }

    #[test]
    fn any_selector_shaped_string_parses_to_a_round_tripping_selector_or_an_error_naming_it(
        s in "[a-z!=(),€é \u{00A0}]{0,24}(in|notin)?[a-z!=(),€é ]{0,8}",
    ) {
        parses_and_round_trips_or_names_itself(&s)?;
    }
}

fn held(indexer: &Indexer<Pod>) -> Vec<String> {
    let mut keys: Vec<String> = Store::list_keys(indexer)
        .iter()
        .map(ToString::to_string)
        .collect();
    keys.sort();
    keys
}

fn nameless() -> Arc<Pod> {
    Arc::new(Pod::default())
}

#[test]
fn objects_without_a_name_are_key_errors_and_the_store_is_unchanged() {
    let indexer = Indexer::with_namespace_index();
    indexer.add(pod("ns", "a", "1", &[])).unwrap();
    let before = held(&indexer);
    let rv_before = indexer.last_store_sync_resource_version();
    let is_missing_name =
        |r: Result<(), StoreError>| matches!(r, Err(StoreError::Key(KeyError::MissingName)));
    assert!(is_missing_name(indexer.add(nameless())));
    assert!(is_missing_name(indexer.update(nameless())));
    assert!(is_missing_name(indexer.delete(nameless())));
    // One bad item in a relist: nothing is replaced, not even the good ones.
    assert!(is_missing_name(
        indexer.replace(vec![pod("ns", "b", "2", &[]), nameless()], "9")
    ));
    assert_eq!(held(&indexer), before);
    assert_eq!(indexer.by_index(NAMESPACE_INDEX, "ns").unwrap().len(), 1);
    assert_eq!(indexer.last_store_sync_resource_version(), rv_before);
}

#[test]
fn malformed_keys_and_unknown_indexes_are_typed_errors() {
    let indexer = Indexer::with_namespace_index();
    indexer.add(pod("ns", "a", "1", &[])).unwrap();
    for key in ["", "/", "a/b/c", "€/", "ns/a/", "\u{0}"] {
        assert!(indexer.get_by_key(key).is_none(), "{key:?}");
    }
    assert!(matches!(
        indexer.by_index("no-such-index", "x"),
        Err(StoreError::UnknownIndex(_))
    ));
    assert!(
        indexer
            .by_index(NAMESPACE_INDEX, "€\u{0}")
            .unwrap()
            .is_empty()
    );
    assert_eq!(held(&indexer), ["ns/a"]);
}
