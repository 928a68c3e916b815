//! The parts of `ValidateObjectMetaAccessor` (`k8s.io/apimachinery/pkg/api/validation/
//! objectmeta.go`) beyond names, labels and annotations: `generateName` (validated as a name
//! prefix, `ValidateObjectMeta` with the kind's name function), owner references
//! (`ValidateOwnerReferences`) and finalizers (`ValidateFinalizers`), and the warning the API
//! server sends for a custom object's finalizer name without a path (built-in kinds refuse
//! such names: core's `validateKubeFinalizerName`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use super::field::{go_string, invalid};
use super::{Cause, qualified_name_errors};
use crate::resource::ResourceDef;

/// The finalizer of orphaning deletion.
const ORPHAN: &str = "orphan";
/// The finalizer of foreground deletion.
const FOREGROUND: &str = "foregroundDeletion";
/// Finalizer names that need no domain (`pkg/apis/core/helper`'s `standardFinalizers`).
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", ORPHAN, FOREGROUND];

/// `maskTrailingDash`: a generated name's prefix may end with `-` (Kubernetes replaces the
/// last two characters with `a`, as it does).
pub(super) fn mask_trailing_dash(prefix: &str) -> String {
    if prefix.len() > 1 && prefix.ends_with('-') {
        let mut end = prefix.len() - 2;
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}a", &prefix[..end])
    } else {
        prefix.to_owned()
    }
}

/// An owner reference as Go's `encoding/json` prints a `metav1.OwnerReference` (in the
/// struct's field order, unset pointers left out).
fn owner_json(r: &OwnerReference) -> Value {
    let mut v = json!({"apiVersion": r.api_version, "kind": r.kind, "name": r.name, "uid": r.uid});
    if let (Some(c), Value::Object(m)) = (r.controller, &mut v) {
        m.insert("controller".into(), Value::Bool(c));
    }
    if let (Some(b), Value::Object(m)) = (r.block_owner_deletion, &mut v) {
        m.insert("blockOwnerDeletion".into(), Value::Bool(b));
    }
    v
}

/// Go's `json.Marshal` of `v` with the keys in insertion order (serde_json's map is sorted,
/// so objects are written by hand).
fn go_json(v: &Value, order: &[&str]) -> String {
    match v {
        Value::Object(m) => {
            let fields: Vec<String> = order
                .iter()
                .filter_map(|k| m.get(*k).map(|x| format!("{}:{x}", go_string(k))))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|i| go_json(i, order)).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

const OWNER_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];

/// The version of an `apiVersion` as `schema.ParseGroupVersion` reads it (none when it does
/// not parse: more than one `/`).
fn version_of(api_version: &str) -> (&str, &str) {
    match api_version.split('/').collect::<Vec<_>>()[..] {
        [version] => ("", version),
        [group, version] => (group, version),
        _ => ("", ""),
    }
}

/// `ValidateOwnerReferences`: each reference's apiVersion (its version part), kind, name and
/// uid set, no `v1` Event as an owner, and at most one reference with `controller: true`.
pub(crate) fn owner_references(refs: &[OwnerReference]) -> Vec<Cause> {
    const PATH: &str = "metadata.ownerReferences";
    let mut causes = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let (group, version) = version_of(&r.api_version);
        let empty = [
            (
                "apiVersion",
                &r.api_version,
                version.is_empty(),
                "version must not be empty",
            ),
            ("kind", &r.kind, r.kind.is_empty(), "must not be empty"),
            ("name", &r.name, r.name.is_empty(), "must not be empty"),
            ("uid", &r.uid, r.uid.is_empty(), "must not be empty"),
        ];
        for (field, value, is_empty, detail) in empty {
            if is_empty {
                causes.push(invalid(
                    &format!("{PATH}.{field}"),
                    &go_string(value),
                    detail,
                ));
            }
        }
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            causes.push(invalid(
                PATH,
                &go_json(&owner_json(r), OWNER_FIELDS),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => {
                    let all = Value::Array(refs.iter().map(owner_json).collect());
                    causes.push(invalid(
                        PATH,
                        &go_json(&all, OWNER_FIELDS),
                        &format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                        ),
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
    causes
}

/// `ValidateFinalizers`: each name a qualified name, and not both `orphan` and
/// `foregroundDeletion`.
pub(crate) fn finalizers(finalizers: &[String]) -> Vec<Cause> {
    const PATH: &str = "metadata.finalizers";
    let mut causes = Vec::new();
    for f in finalizers {
        for m in qualified_name_errors(f) {
            causes.push(invalid(PATH, &go_string(f), &m));
        }
    }
    if finalizers.iter().any(|f| f == ORPHAN) && finalizers.iter().any(|f| f == FOREGROUND) {
        let list = Value::from(finalizers.to_vec()).to_string();
        causes.push(invalid(
            PATH,
            &list,
            &format!("finalizer {ORPHAN} and {FOREGROUND} cannot be both set"),
        ));
    }
    causes
}

/// The owner reference and finalizer causes of `meta`.
pub(crate) fn references_and_finalizers(meta: &ObjectMeta) -> Vec<Cause> {
    let mut causes = owner_references(meta.owner_references.as_deref().unwrap_or_default());
    causes.extend(finalizers(meta.finalizers.as_deref().unwrap_or_default()));
    causes
}

/// `dedupOwnerReferencesAndAddWarning` (`handlers/rest.go`): an owner reference given twice
/// (the same uid and fields) is dropped, with a warning naming the duplicate uids. A patch is
/// deduplicated after mutating admission, and worded so.
pub(crate) fn dedup_owner_references(meta: &mut ObjectMeta, patch: bool) -> Option<String> {
    let refs = meta.owner_references.as_mut()?;
    let mut kept: Vec<OwnerReference> = Vec::with_capacity(refs.len());
    let mut duplicates = Vec::new();
    for r in refs.drain(..) {
        if kept.contains(&r) {
            duplicates.push(r.uid);
        } else {
            kept.push(r);
        }
    }
    *refs = kept;
    if duplicates.is_empty() {
        return None;
    }
    let when = if patch {
        " after mutating admission happens"
    } else {
        ""
    };
    Some(format!(
        ".metadata.ownerReferences contains duplicate entries{when}; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: {}",
        duplicates.join(", ")
    ))
}

/// Whether `def`'s kind is validated with core's `ValidateObjectMeta` /
/// `ValidateObjectMetaUpdate` (`pkg/apis/core/validation`), which also refuse finalizer names
/// without a path that are not standard: the built-in kinds but CRDs (apiextensions'
/// validation calls apimachinery's).
fn has_kube_finalizer_rule(def: &ResourceDef) -> bool {
    crate::kinds::find(&def.api.api_version, &def.api.kind).is_some() && !crate::crd::is_crd(def)
}

/// Whether `name` is a domain-qualified finalizer name or a standard one.
fn is_kube_finalizer(name: &str) -> bool {
    name.contains('/') || STANDARD_FINALIZERS.contains(&name)
}

/// `validateKubeFinalizerName` of core's `ValidateObjectMeta` for a built-in kind:
/// `metadata.finalizers[i]: Invalid value: "x": name is neither a standard finalizer name nor
/// is it fully qualified`.
pub(crate) fn kube_finalizers(def: &ResourceDef, meta: &ObjectMeta) -> Vec<Cause> {
    if meta.finalizers.as_ref().is_none_or(Vec::is_empty) || !has_kube_finalizer_rule(def) {
        return Vec::new();
    }
    let names = meta.finalizers.iter().flatten().enumerate();
    names
        .filter(|(_, f)| !is_kube_finalizer(f))
        .map(|(i, f)| {
            invalid(
                &format!("metadata.finalizers[{i}]"),
                &go_string(f),
                "name is neither a standard finalizer name nor is it fully qualified",
            )
        })
        .collect()
}

/// The warnings of a write of a custom object (`customresource` strategy's
/// `WarningsOnCreate` / `WarningsOnUpdate`): one for each finalizer name the write adds to
/// `old` (sorted, as a set lists them) without a path that is not standard.
pub(crate) fn finalizer_warnings(
    def: &ResourceDef,
    meta: &ObjectMeta,
    old: &[String],
) -> Vec<String> {
    if meta.finalizers.as_ref().is_none_or(Vec::is_empty)
        || crate::kinds::find(&def.api.api_version, &def.api.kind).is_some()
    {
        return Vec::new();
    }
    let mut added: Vec<&String> = meta
        .finalizers
        .iter()
        .flatten()
        .filter(|f| !old.contains(f) && !is_kube_finalizer(f))
        .collect();
    added.sort();
    added.dedup();
    added
        .into_iter()
        .map(|f| {
            format!(
                "metadata.finalizers: {}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
                go_string(f)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(kind: &str, name: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: "1".into(),
            controller,
            block_owner_deletion: None,
        }
    }

    /// TestValidateObjectMetaOwnerReferences (objectmeta_test.go).
    #[test]
    fn validate_object_meta_owner_references() {
        let mut bad = owner("", "", None);
        bad.api_version = "extensions/".into();
        bad.uid = String::new();
        let causes = owner_references(&[bad]);
        let fields: Vec<&str> = causes.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.ownerReferences.apiVersion",
                "metadata.ownerReferences.kind",
                "metadata.ownerReferences.name",
                "metadata.ownerReferences.uid"
            ]
        );
        assert_eq!(
            causes[0].1,
            "Invalid value: \"extensions/\": version must not be empty"
        );
        let event = owner_references(&[owner("Event", "e", None)]);
        assert_eq!(
            event[0].1,
            r#"Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"1"}: /v1, Kind=Event is disallowed from being an owner"#
        );
        assert!(
            owner_references(&[
                owner("Pod", "a", Some(true)),
                owner("Pod", "b", Some(false))
            ])
            .is_empty()
        );
    }

    /// TestValidateObjectMetaOwnerReferences's "multiple controllers" case.
    #[test]
    fn only_one_reference_can_have_controller_set_to_true() {
        let causes = owner_references(&[owner("A", "a", Some(true)), owner("B", "b", Some(true))]);
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].1,
            r#"Invalid value: [{"apiVersion":"v1","kind":"A","name":"a","uid":"1","controller":true},{"apiVersion":"v1","kind":"B","name":"b","uid":"1","controller":true}]: Only one reference can have Controller set to true. Found "true" in references for A/a and B/b"#
        );
    }

    /// TestValidateFinalizersUpdate / TestValidateFinalizersPreventConflictingFinalizers.
    #[test]
    fn validate_finalizers_prevent_conflicting_finalizers() {
        let both = finalizers(&[ORPHAN.into(), FOREGROUND.into()]);
        assert_eq!(
            both[0].1,
            r#"Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set"#
        );
        assert_eq!(finalizers(&["a b".into()]).len(), 1);
        assert!(finalizers(&["example.com/x".into(), "kubernetes".into()]).is_empty());
    }

    #[test]
    fn trailing_dashes_are_masked_as_kubernetes_does() {
        assert_eq!(mask_trailing_dash("web-"), "wea");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert_eq!(mask_trailing_dash("web"), "web");
    }
}
