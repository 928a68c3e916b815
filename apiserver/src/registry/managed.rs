//! The server-side apply seam (see the module doc of `registry`): what an apply patch makes of
//! an object, and the managed fields of every other write, by `crate::fieldmanager` with the
//! strategy's reset fields left out of the field sets.

use serde_json::Value;

use super::strategy::{Subresource, reset_fields};
use crate::error::ApiError;
pub(crate) use crate::fieldmanager::FieldManager;
use crate::object::Object;
use crate::resource::ResourceDef;

fn subresource(manager: &FieldManager) -> Subresource {
    if manager.status() {
        Subresource::Status
    } else {
        Subresource::Main
    }
}

/// The object an apply of `applied` by `manager` makes of `live` (None: the object does not
/// exist, and the apply creates it), with its managedFields: merged by the kind's schema,
/// fields the manager stopped applying removed, 409 Conflict on other managers' fields unless
/// forced.
pub(crate) fn apply(
    def: &ResourceDef,
    live: Option<&Object>,
    applied: &Value,
    manager: &FieldManager,
) -> Result<Value, ApiError> {
    manager.apply(def, live, applied, reset_fields(def, subresource(manager)))
}

/// Updates `new`'s `metadata.managedFields` for a write by `manager` that is not an apply
/// (operation `Update`), `live` being the stored object (None on create).
pub(crate) fn track_update(
    def: &ResourceDef,
    live: Option<&Object>,
    new: &mut Object,
    manager: &FieldManager,
) -> Result<(), ApiError> {
    *new = manager.record(def, live, new, reset_fields(def, subresource(manager)))?;
    Ok(())
}

/// Gives `next` (what the strategy made of an applied object) the managedFields the apply
/// computed in `applied`.
pub(crate) fn keep_applied(
    def: &ResourceDef,
    next: &mut Object,
    applied: &Value,
) -> Result<(), ApiError> {
    *next = crate::fieldmanager::with_managed_fields(def, next, applied)?;
    Ok(())
}
