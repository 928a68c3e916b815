//! The Warning a deprecated CRD version's requests carry (apiextensions-apiserver's
//! customresource_handler.go: the version's `deprecationWarning`, or by default
//! `<group>/<version> <Kind> is deprecated`, with `; use <group>/<version> <Kind>` naming the
//! newest served, non-deprecated version that is newer).

use std::cmp::Ordering;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};

/// The warning for requests to `v` of `crd` (None unless `v` is deprecated).
pub(super) fn warning(
    crd: &CustomResourceDefinition,
    v: &CustomResourceDefinitionVersion,
) -> Option<String> {
    if v.deprecated != Some(true) {
        return None;
    }
    if let Some(text) = &v.deprecation_warning {
        return Some(text.clone());
    }
    let spec = &crd.spec;
    let (group, kind) = (&spec.group, &spec.names.kind);
    let mut msg = format!("{group}/{} {kind} is deprecated", v.name);
    let newest = spec
        .versions
        .iter()
        .filter(|o| o.served && o.deprecated != Some(true))
        .filter(|o| compare_kube_aware(&v.name, &o.name) == Ordering::Less)
        .max_by(|a, b| compare_kube_aware(&a.name, &b.name));
    if let Some(newer) = newest {
        msg.push_str(&format!("; use {group}/{} {kind}", newer.name));
    }
    Some(msg)
}

/// A Kubernetes-like version: `v<major>` optionally followed by `alpha<minor>` / `beta<minor>`.
/// Ordered by stability (alpha, beta, GA), then major, then minor.
fn parse(v: &str) -> Option<(u8, u64, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (major, rest) = rest.split_at(digits);
    if major.is_empty() {
        return None;
    }
    let major = major.parse().ok()?;
    if rest.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = if let Some(m) = rest.strip_prefix("alpha") {
        (0, m)
    } else {
        (1, rest.strip_prefix("beta")?)
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, minor.parse().ok()?))
}

/// apimachinery's `version.CompareKubeAwareVersionStrings`: Greater is the higher priority
/// (`v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1` > other strings, those in reverse
/// lexical order).
fn compare_kube_aware(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceDefinition, CustomResourceDefinitionVersion,
    };
    use serde_json::json;

    use super::{compare_kube_aware, warning};

    /// apimachinery's version tests: `TestCompareKubeAwareVersionStrings` orderings.
    #[test]
    fn compare_kube_aware_version_strings() {
        let ordered = [
            "v2", "v1", "v10beta3", "v1beta2", "v1beta1", "v2alpha1", "v1alpha1", "foo1", "foo10",
        ];
        for pair in ordered.windows(2) {
            assert_eq!(
                compare_kube_aware(pair[0], pair[1]),
                Ordering::Greater,
                "{pair:?}"
            );
        }
        assert_eq!(compare_kube_aware("v1", "v1"), Ordering::Equal);
    }

    fn crd(versions: serde_json::Value) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions},
        }))
        .unwrap()
    }

    fn version(crd: &CustomResourceDefinition, name: &str) -> CustomResourceDefinitionVersion {
        crd.spec
            .versions
            .iter()
            .find(|v| v.name == name)
            .cloned()
            .unwrap()
    }

    #[test]
    fn default_deprecation_warning_names_the_newest_served_version() {
        let crd = crd(json!([
            {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true},
            {"name": "v1beta1", "served": true, "storage": false, "deprecated": true},
            {"name": "v1", "served": true, "storage": true},
            {"name": "v2", "served": false, "storage": false},
        ]));
        assert_eq!(
            warning(&crd, &version(&crd, "v1alpha1")).as_deref(),
            Some("example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget")
        );
        assert_eq!(warning(&crd, &version(&crd, "v1")), None);
        let alone = self::crd(json!([
            {"name": "v1", "served": true, "storage": true, "deprecated": true},
            {"name": "v1beta1", "served": true, "storage": false},
        ]));
        assert_eq!(
            warning(&alone, &version(&alone, "v1")).as_deref(),
            Some("example.com/v1 Widget is deprecated"),
            "no newer version to name"
        );
        let custom = self::crd(json!([
            {"name": "v1", "served": true, "storage": true, "deprecated": true,
             "deprecationWarning": "use something else"},
        ]));
        assert_eq!(
            warning(&custom, &version(&custom, "v1")).as_deref(),
            Some("use something else")
        );
    }
}
