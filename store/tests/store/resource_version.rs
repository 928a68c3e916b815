use std::cmp::Ordering;

use kcache_store::{InvalidResourceVersion, compare_resource_versions, resource_version_reached};

#[test]
fn resource_versions_order_by_length_then_digits() {
    assert_eq!(compare_resource_versions("9", "10"), Ok(Ordering::Less));
    assert_eq!(
        compare_resource_versions("100", "99"),
        Ok(Ordering::Greater)
    );
    assert_eq!(compare_resource_versions("123", "124"), Ok(Ordering::Less));
    assert_eq!(compare_resource_versions("7", "7"), Ok(Ordering::Equal));
    // No length limit: longer than u64 still orders.
    let big = "184467440737095516150";
    assert_eq!(
        compare_resource_versions(big, "18446744073709551615"),
        Ok(Ordering::Greater)
    );
}

#[test]
fn malformed_resource_versions_are_errors() {
    for bad in ["", "0", "012", "12a", "-1", " 1"] {
        assert_eq!(
            compare_resource_versions(bad, "5"),
            Err(InvalidResourceVersion(bad.to_owned())),
            "{bad:?}"
        );
        assert!(compare_resource_versions("5", bad).is_err(), "{bad:?}");
    }
}

#[test]
fn resource_version_reached_needs_the_cache_at_or_past_the_write() {
    assert!(resource_version_reached("10", "10"));
    assert!(resource_version_reached("11", "10"));
    assert!(!resource_version_reached("9", "10"));
    assert!(!resource_version_reached("", "10"));
    assert!(resource_version_reached("", ""));
    assert!(resource_version_reached("10", ""));
}

#[test]
fn unorderable_resource_versions_are_reached_only_as_client_go_allows() {
    // Equal opaque strings: reached.
    assert!(resource_version_reached("abc", "abc"));
    // Different opaque strings cannot be ordered: client-go does not block on them.
    assert!(resource_version_reached("abc", "abd"));
    assert!(resource_version_reached("5", "opaque"));
}
