//! Label selector parsing.

use std::collections::BTreeMap;

use kcache_store::{SelectorError, parse_label_selector};
use kube_core::SelectorExt;
use proptest::prelude::*;

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

/// One requirement as the model holds it: key, operator, values.
#[derive(Debug, Clone)]
enum Requirement {
    Exists(&'static str),
    DoesNotExist(&'static str),
    Equal(&'static str, &'static str),
    NotEqual(&'static str, &'static str),
    In(&'static str, Vec<&'static str>),
    NotIn(&'static str, Vec<&'static str>),
}

const KEYS: [&str; 3] = ["a", "b.io/c", "d"];
const VALUES: [&str; 3] = ["", "x", "y-1"];

impl Requirement {
    /// The requirement in the selector syntax, with the given padding around its tokens.
    fn render(&self, pad: &str) -> String {
        let set = |values: &[&str]| values.join(&format!("{pad},{pad}"));
        match self {
            Self::Exists(k) => format!("{pad}{k}{pad}"),
            Self::DoesNotExist(k) => format!("{pad}!{pad}{k}{pad}"),
            Self::Equal(k, v) => format!("{pad}{k}{pad}={pad}{v}{pad}"),
            Self::NotEqual(k, v) => format!("{pad}{k}{pad}!={pad}{v}{pad}"),
            Self::In(k, vs) => format!("{pad}{k} in{pad}({pad}{}{pad}){pad}", set(vs)),
            Self::NotIn(k, vs) => format!("{pad}{k} notin{pad}({pad}{}{pad}){pad}", set(vs)),
        }
    }

    /// Kubernetes' meaning (labels.Requirement.Matches): a missing key satisfies `!=` and `notin`.
    fn holds(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = |k: &str| labels.get(k).map(String::as_str);
        match self {
            Self::Exists(k) => value(k).is_some(),
            Self::DoesNotExist(k) => value(k).is_none(),
            Self::Equal(k, v) => value(k) == Some(*v),
            Self::NotEqual(k, v) => value(k) != Some(*v),
            Self::In(k, vs) => value(k).is_some_and(|x| vs.contains(&x)),
            Self::NotIn(k, vs) => value(k).is_none_or(|x| !vs.contains(&x)),
        }
    }
}

fn requirement() -> impl Strategy<Value = Requirement> {
    let key = proptest::sample::select(&KEYS[..]);
    let value = proptest::sample::select(&VALUES[..]);
    let values = proptest::collection::vec(value.clone(), 1..3);
    prop_oneof![
        key.clone().prop_map(Requirement::Exists),
        key.clone().prop_map(Requirement::DoesNotExist),
        (key.clone(), value.clone()).prop_map(|(k, v)| Requirement::Equal(k, v)),
        (key.clone(), value).prop_map(|(k, v)| Requirement::NotEqual(k, v)),
        (key.clone(), values.clone()).prop_map(|(k, vs)| Requirement::In(k, vs)),
        (key, values).prop_map(|(k, vs)| Requirement::NotIn(k, vs)),
    ]
}

fn label_set() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(
        proptest::sample::select(&KEYS[..]).prop_map(str::to_owned),
        proptest::sample::select(&VALUES[..]).prop_map(str::to_owned),
        0..=3,
    )
}

proptest! {
    #[test]
    fn parsed_selectors_match_labels_as_the_model_evaluates_them(
        requirements in proptest::collection::vec(requirement(), 0..4),
        pad in proptest::sample::select(&["", " ", "  "][..]),
        labels in label_set(),
    ) {
        let text = requirements.iter().map(|r| r.render(pad)).collect::<Vec<_>>().join(",");
        let selector = parse_label_selector(&text).unwrap();
        let expected = requirements.iter().all(|r| r.holds(&labels));
        prop_assert_eq!(selector.matches(&labels), expected, "{:?} on {:?}", text, labels);
    }
}
