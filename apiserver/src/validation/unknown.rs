//! `fieldValidation` (k8s.io/apiserver's handlers and decoders): the fields of a write that
//! the resource's schema does not know. Built-in kinds are checked against their OpenAPI
//! definitions (what Go's strict decoding into the kind's type rejects), custom objects against
//! their version's structural schema (the fields pruning would drop) and `metadata` against
//! `ObjectMeta`. `Strict` refuses them, `Warn` (the default) answers them as warnings,
//! `Ignore` does neither; duplicate fields of JSON bodies (duplicates.rs) are treated alike.

use serde_json::Value;

use super::Cause;
use super::field::{go_string, unsupported};
use crate::resource::ResourceDef;
use crate::schema::Schema;

/// The `fieldValidation` directive of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Unknown fields are dropped silently.
    Ignore,
    /// Unknown fields are dropped, each with a warning (the default).
    Warn,
    /// Unknown fields fail the write.
    Strict,
}

impl FieldValidation {
    /// The directive of the query's `fieldValidation` (absent or empty: `Warn`); another value
    /// is the cause of `ValidateFieldValidation`.
    pub(crate) fn parse(value: Option<&str>) -> Result<Self, Cause> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(Self::Warn),
            "Ignore" => Ok(Self::Ignore),
            "Strict" => Ok(Self::Strict),
            other => Err(unsupported(
                "fieldValidation",
                other,
                &["", "Ignore", "Strict", "Warn"],
            )),
        }
    }
}

/// The paths of the fields of `value`, a whole object of `def`'s kind, that its schema does
/// not know; none for kinds without a schema. A built-in kind's are removed from `value` (and
/// its `metadata`'s from a custom object), as decoding into the Go type drops them; a custom
/// object's are left to pruning, unless `directive` ignores them, when they are not looked for.
pub(crate) fn unknown_fields(
    def: &ResourceDef,
    value: &mut Value,
    directive: FieldValidation,
) -> Vec<String> {
    let builtin = Schema::builtin();
    let Some(schema) = def.schema.as_deref() else {
        return builtin
            .root(&def.api.group, &def.api.version, &def.api.kind)
            .map(|ty| ty.take_unknown_fields(value))
            .unwrap_or_default();
    };
    let Value::Object(map) = value else {
        return Vec::new();
    };
    // Every kind's metadata is ObjectMeta; a ConfigMap's is as good as any.
    let object_meta = builtin
        .root("", "v1", "ConfigMap")
        .map(|ty| ty.field("metadata"));
    let mut fields: Vec<String> = match (object_meta, map.get_mut("metadata")) {
        (Some(ty), Some(meta)) => ty
            .take_unknown_fields(meta)
            .into_iter()
            .map(|f| format!("metadata.{f}"))
            .collect(),
        _ => Vec::new(),
    };
    if directive != FieldValidation::Ignore {
        fields.extend(crate::crd::pruned_paths(schema, map));
    }
    fields
}

/// The strict decoder's errors, each also a `Warn` warning: `duplicate field "spec.a"` for each
/// of `duplicates`, then `unknown field "spec.foo"` for each of `unknown`.
pub(crate) fn strict_errors(duplicates: &[String], unknown: &[String]) -> Vec<String> {
    let duplicate = duplicates
        .iter()
        .map(|f| format!("duplicate field {}", go_string(f)));
    let unknown = unknown
        .iter()
        .map(|f| format!("unknown field {}", go_string(f)));
    duplicate.chain(unknown).collect()
}

/// Strict decoding's error text: `strict decoding error: unknown field "a", unknown field "b"`.
pub(crate) fn strict_decoding_error(errors: &[String]) -> String {
    format!("strict decoding error: {}", errors.join(", "))
}
