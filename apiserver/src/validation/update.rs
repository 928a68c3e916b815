//! Rules of updates every kind shares (`ValidateObjectMetaUpdate`) and the immutability of
//! immutable ConfigMaps and Secrets (`ValidateConfigMapUpdate`, `ValidateSecretUpdate`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};

use super::Cause;
use super::field::{forbidden, go_string, go_strings, invalid};

/// The causes of an update of `old`'s metadata to `new`'s: the uid may not change, and no
/// finalizer may be added to an object being deleted.
pub(crate) fn meta_update(new: &ObjectMeta, old: &ObjectMeta) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(uid) = new.uid.as_deref().filter(|u| !u.is_empty())
        && Some(uid) != old.uid.as_deref()
    {
        causes.push(invalid(
            "metadata.uid",
            &go_string(uid),
            "field is immutable",
        ));
    }
    if old.deletion_timestamp.is_some() {
        let old_finalizers = old.finalizers.as_deref().unwrap_or_default();
        let mut added: Vec<&String> = new
            .finalizers
            .iter()
            .flatten()
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        added.sort();
        added.dedup();
        if !added.is_empty() {
            causes.push(forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_strings(&added)
                ),
            ));
        }
    }
    causes
}

const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";

/// An immutable ConfigMap or Secret keeps its data and stays immutable.
pub(crate) fn immutable_data(
    new: &Map<String, Value>,
    old: &Map<String, Value>,
    fields: &[&str],
) -> Vec<Cause> {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return Vec::new();
    }
    let mut causes = Vec::new();
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        causes.push(forbidden("immutable", IMMUTABLE_SET));
    }
    for field in fields {
        if new.get(*field) != old.get(*field) {
            causes.push(forbidden(field, IMMUTABLE_SET));
        }
    }
    causes
}
