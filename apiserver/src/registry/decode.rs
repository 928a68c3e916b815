//! An object of a resource's kind from JSON: the built-in kinds must decode into their
//! k8s-openapi type (and their quantities parse), `apiVersion` and `kind` must be the resource's (or absent), and the kind's
//! defaults are filled in (as Kubernetes' decoder runs the defaulting functions).

use serde_json::Value;

use super::builtin::strategy_for;
use crate::error::ApiError;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::validation;
use crate::validation::quantity;

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
