//! The server-side apply seam (see the module doc of `registry`): what an apply patch makes of
//! an object, and the managed fields of every other write.

use serde_json::Value;

use crate::error::ApiError;
use crate::object::Object;
use crate::patch::{PatchKind, apply_patch};
use crate::resource::ResourceDef;

/// Who writes, from the request's `fieldManager` and `force` query parameters.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldManager {
    /// The field manager (`fieldManager`; None when the request names none).
    pub(crate) name: Option<String>,
    /// `force=true`: an apply takes fields over from other managers.
    pub(crate) force: bool,
}

/// The object an apply of `applied` by `manager` makes of `live` (None: the object does not
/// exist, and the apply creates it). Today: `applied` merged over `live` as a JSON merge patch.
pub(crate) fn apply(
    _def: &ResourceDef,
    live: Option<&Object>,
    applied: &Value,
    manager: &FieldManager,
) -> Result<Value, ApiError> {
    tracing::trace!(manager = ?manager.name, force = manager.force, "apply as a merge patch");
    let Some(live) = live else {
        return Ok(applied.clone());
    };
    let mut value = live.to_value();
    apply_patch(PatchKind::Merge, &mut value, applied)?;
    Ok(value)
}

/// Updates `new`'s `metadata.managedFields` for a write by `manager` that is not an apply
/// (operation `Update`), `live` being the stored object (None on create). Today: nothing.
pub(crate) fn track_update(
    _def: &ResourceDef,
    _live: Option<&Object>,
    _new: &mut Object,
    _manager: &FieldManager,
) -> Result<(), ApiError> {
    Ok(())
}
