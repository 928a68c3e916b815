//! The files volumes project and the paths containers see them at
//! (`pkg/apis/core/validation/validation.go`: `validateKeyToPath`,
//! `validateDownwardAPIVolumeFile`, file modes, `ValidateLocalNonReservedPath`,
//! `validateLocalDescendingPath`, `validatePathNoBacksteps`).

use serde_json::Value;

use super::field::{go_string, invalid, is_set, required, text};
use super::{Cause, downward};

/// `validVolumeDownwardAPIFieldPathExpressions`, sorted.
const VOLUME_FIELDS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];
const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// A file mode at `key`, if set, between 0 and 0777.
pub(super) fn file_mode(s: &Value, key: &str, path: &str, causes: &mut Vec<Cause>) {
    if let Some(mode) = s.get(key).and_then(Value::as_i64)
        && !(0..=0o777).contains(&mode)
    {
        causes.push(invalid(
            &format!("{path}.{key}"),
            &mode.to_string(),
            FILE_MODE,
        ));
    }
}

/// `validateKeyToPath`.
pub(super) fn key_to_path(item: &Value, path: &str, causes: &mut Vec<Cause>) {
    for field in ["key", "path"] {
        if text(item, field).is_empty() {
            causes.push(required(&format!("{path}.{field}"), ""));
        }
    }
    local_non_reserved(text(item, "path"), &format!("{path}.path"), causes);
    file_mode(item, "mode", path, causes);
}

/// `ValidateLocalNonReservedPath`: relative, without `..`, not starting with `..`.
pub(super) fn local_non_reserved(target: &str, path: &str, causes: &mut Vec<Cause>) {
    local_descending(target, path, causes);
    if target.starts_with("..") && !target.starts_with("../") {
        causes.push(invalid(
            path,
            &go_string(target),
            "must not start with '..'",
        ));
    }
}

/// `validateDownwardAPIVolumeFile`; as in Kubernetes, an item's errors are reported under the
/// source's path, without the item's index.
pub(super) fn downward_item(item: &Value, path: &str, causes: &mut Vec<Cause>) {
    if text(item, "path").is_empty() {
        causes.push(required(&format!("{path}.path"), ""));
    }
    local_non_reserved(text(item, "path"), &format!("{path}.path"), causes);
    if is_set(item, "fieldRef") {
        downward::object_field(
            &item["fieldRef"],
            VOLUME_FIELDS,
            &format!("{path}.fieldRef"),
            causes,
        );
        if is_set(item, "resourceFieldRef") {
            causes.push(invalid(
                path,
                "\"resource\"",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if is_set(item, "resourceFieldRef") {
        let at = format!("{path}.resourceFieldRef");
        downward::resource_field(&item["resourceFieldRef"], true, &at, causes);
    } else {
        causes.push(required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    file_mode(item, "mode", path, causes);
}

/// `validateLocalDescendingPath`: relative, without `..`.
pub(super) fn local_descending(target: &str, path: &str, causes: &mut Vec<Cause>) {
    if target.starts_with('/') {
        causes.push(invalid(path, &go_string(target), "must be a relative path"));
    }
    no_backsteps(target, path, causes);
}

/// `validatePathNoBacksteps`.
pub(super) fn no_backsteps(target: &str, path: &str, causes: &mut Vec<Cause>) {
    if target
        .replace('\\', "/")
        .split('/')
        .any(|part| part == "..")
    {
        causes.push(invalid(path, &go_string(target), "must not contain '..'"));
    }
}
