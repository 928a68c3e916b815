//! The apply conflict error (k8s.io/apimachinery `util/managedfields/internal/conflict.go`,
//! `api/errors` NewApplyConflict; structured-merge-diff `merge/conflict.go`).

use serde_json::json;

use super::managers::Entry;
use super::path::{Path, display};
use super::set::FieldSet;
use crate::error::ApiError;

/// Fields an apply would take from other managers: (manager as printed, field path).
#[derive(Debug, Default, thiserror::Error)]
#[error("{}", self.text())]
pub(crate) struct Conflicts(Vec<(String, Path)>);

impl Conflicts {
    /// Adds the fields of `set` as conflicts with `entry`'s manager.
    pub(crate) fn add(&mut self, entry: &Entry, set: &FieldSet) {
        let manager = entry.describe();
        for path in set.members() {
            self.0.push((manager.clone(), path));
        }
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One conflict: `conflict with <manager>: <path>`; several: per manager (sorted)
    /// `conflicts with <manager>:` and a `- <path>` line per field.
    fn text(&self) -> String {
        if let [(manager, path)] = self.0.as_slice() {
            return format!("conflict with {manager}: {}", display(path));
        }
        let mut managers: Vec<&str> = self.0.iter().map(|(m, _)| m.as_str()).collect();
        managers.sort_unstable();
        managers.dedup();
        let mut lines = Vec::new();
        for manager in managers {
            lines.push(format!("conflicts with {manager}:"));
            for (_, path) in self.0.iter().filter(|(m, _)| m == manager) {
                lines.push(format!("- {}", display(path)));
            }
        }
        lines.join("\n")
    }
}

impl From<Conflicts> for ApiError {
    /// 409 Conflict whose details hold only the causes (`FieldManagerConflict`, one per field).
    fn from(c: Conflicts) -> Self {
        let n = c.0.len();
        let plural = if n == 1 { "" } else { "s" };
        let causes: Vec<_> =
            c.0.iter()
                .map(|(manager, path)| {
                    json!({"reason": "FieldManagerConflict", "message": format!("conflict with {manager}"), "field": display(path)})
                })
                .collect();
        ApiError::new(
            409,
            "Conflict",
            format!("Apply failed with {n} conflict{plural}: {}", c.text()),
        )
        .with_details(json!({"causes": causes}))
    }
}
