//! An object of a resource's kind from JSON: the built-in kinds must decode into their
//! k8s-openapi type (and their quantities parse), `apiVersion` and `kind` must be the resource's (or absent), and the kind's
//! defaults are filled in (as Kubernetes' decoder runs the defaulting functions).

use serde_json::Value;

use super::builtin::strategy_for;
use super::{Body, PatchRequest};
use crate::error::ApiError;
use crate::object::Object;
use crate::patch::PatchKind;
use crate::resource::ResourceDef;
use crate::validation::{self, FieldValidation, field, quantity};

/// Builds an object of `def`'s kind from JSON, defaulted.
pub(super) fn object_of(def: &ResourceDef, mut value: Value) -> Result<Object, ApiError> {
    validation::decode_builtin(def, &value)?;
    if crate::kinds::find(&def.api.api_version, &def.api.kind).is_some()
        && let Some(e) = quantity::malformed_in(&def.api.kind, &value)
    {
        // As a `resource.Quantity`'s `UnmarshalJSON` fails the whole decode.
        let kind = &def.api.kind;
        return Err(ApiError::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {kind}: {e}",
            def.api.version
        )));
    }
    strategy_for(def).default(def, &mut value);
    let mut obj = Object::from_value(value).map_err(|e| ApiError::bad_request(e.to_string()))?;
    check_type(def, &mut obj)?;
    Ok(obj)
}

/// The warnings of the strict decoder's `errors` under `Warn`.
fn warnings(errors: Vec<String>, directive: FieldValidation) -> Vec<String> {
    match directive {
        FieldValidation::Warn => errors,
        FieldValidation::Ignore | FieldValidation::Strict => Vec::new(),
    }
}

/// [`object_of`] for a create or update body, its unknown fields handled as the request's
/// `fieldValidation` says (the create and update handlers' strict decoding): under `Strict`
/// 400 `Kind in version "v1" cannot be handled as a Kind: strict decoding error: unknown
/// field "spec.foo"` (after any other decoding error), under `Warn` one warning each.
pub(super) fn body_object(
    def: &ResourceDef,
    body: Body,
    directive: FieldValidation,
) -> Result<(Object, Vec<String>), ApiError> {
    let Body {
        mut value,
        duplicates,
    } = body;
    let unknown = validation::unknown_fields(def, &mut value, directive);
    let errors = validation::strict_errors(&duplicates, &unknown);
    let obj = object_of(def, value)?;
    if directive == FieldValidation::Strict && !errors.is_empty() {
        let error = validation::strict_decoding_error(&errors);
        return Err(validation::cannot_handle(def, &error));
    }
    Ok((obj, warnings(errors, directive)))
}

/// [`object_of`] for an object patched by `request` (a JSON, merge or strategic merge patch),
/// the patch's duplicate fields and the object's unknown fields handled as the patch handler
/// does: under `Strict` 422 with the cause `patch: Invalid value: "<patched object, or Go's
/// print of a strategic patch>": strict decoding error: ...`, under `Warn` one warning each.
pub(super) fn patched_object(
    def: &ResourceDef,
    mut value: Value,
    request: &PatchRequest,
    directive: FieldValidation,
) -> Result<(Object, Vec<String>), ApiError> {
    let strategic = request.kind == PatchKind::Strategic;
    // What the message shows: the patched object as it was, or the strategic patch.
    let original = (directive == FieldValidation::Strict && !strategic).then(|| value.clone());
    let unknown = validation::unknown_fields(def, &mut value, directive);
    let errors = validation::strict_errors(&request.duplicates, &unknown);
    let refused = (directive == FieldValidation::Strict && !errors.is_empty()).then(|| {
        let shown = match &original {
            Some(patched) => patched.to_string(),
            None => crate::patch::go_value(&request.patch),
        };
        field::invalid(
            "patch",
            &field::go_string(&shown),
            &validation::strict_decoding_error(&errors),
        )
    });
    // A decoding error other than unknown fields comes first.
    let obj = object_of(def, value)?;
    match refused {
        Some(cause) => Err(ApiError::invalid("", "", "", &[cause])),
        None => Ok((obj, warnings(errors, directive))),
    }
}

/// Checks `apiVersion` and `kind` against `def` and sets them, and extracts `def`'s selectable
/// fields.
pub(super) fn check_type(def: &ResourceDef, obj: &mut Object) -> Result<(), ApiError> {
    if !obj.kind().is_empty() && obj.kind() != def.api.kind {
        return Err(ApiError::bad_request(format!(
            "the kind of the object ({}) does not match the kind of the resource ({})",
            obj.kind(),
            def.api.kind
        )));
    }
    if !obj.api_version().is_empty() && obj.api_version() != def.api.api_version {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            obj.api_version(),
            def.api.api_version
        )));
    }
    obj.set_type(&def.api.api_version, &def.api.kind);
    obj.select_fields(&def.fields);
    Ok(())
}
