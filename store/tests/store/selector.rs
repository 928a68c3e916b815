//! Label selector parsing.

use std::collections::BTreeMap;

use kcache_store::{SelectorError, parse_label_selector};
use kube_core::SelectorExt;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn empty_selector_selects_everything() {
    let s = parse_label_selector("  ").unwrap();
    assert!(s.selects_all());
    assert!(s.matches(&labels(&[])));
}

#[test]
fn selector_with_every_operator_matches_exactly() {
    let s = parse_label_selector("a=b, c!=d,e in (x, y),f notin (z),g,!h,i==j").unwrap();
    let good = labels(&[
        ("a", "b"),
        ("c", "x"),
        ("e", "y"),
        ("f", "q"),
        ("g", ""),
        ("i", "j"),
    ]);
    assert!(s.matches(&good));
    for (k, v) in [
        ("a", "other"),
        ("c", "d"),
        ("e", "w"),
        ("f", "z"),
        ("h", "1"),
        ("i", "k"),
    ] {
        let mut bad = good.clone();
        bad.insert(k.into(), v.into());
        assert!(!s.matches(&bad), "{k}={v} should not match");
    }
    let mut no_g = good.clone();
    no_g.remove("g");
    assert!(!s.matches(&no_g));
}

#[test]
fn prefixed_keys_and_empty_values_parse() {
    let s = parse_label_selector("app.kubernetes.io/name=web,empty=").unwrap();
    assert!(s.matches(&labels(&[("app.kubernetes.io/name", "web"), ("empty", "")])));
}

#[test]
fn malformed_selectors_give_clear_errors() {
    for bad in ["a in b", "a in (b", "=b", "a=b,", "a b", "a > 3", "!"] {
        let err = parse_label_selector(bad).unwrap_err();
        assert!(matches!(err, SelectorError::Syntax { .. }), "{bad}: {err}");
        assert!(err.to_string().contains(bad), "{err}");
    }
}

#[test]
fn empty_values_in_sets_are_allowed() {
    let s = parse_label_selector("x in (foo,,baz),y,z notin ()").unwrap();
    assert!(s.matches(&labels(&[("x", ""), ("y", "1"), ("z", "1")])));
}

#[test]
fn invalid_keys_and_values_are_rejected() {
    for bad in [
        "-a=b",
        "a=b-",
        "UPPER.example/x=y",
        "a=b c",
        &format!("a={}", "v".repeat(64)),
    ] {
        assert!(
            parse_label_selector(bad).is_err(),
            "{bad} should be rejected"
        );
    }
}
