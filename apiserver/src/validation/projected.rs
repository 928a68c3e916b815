//! Projected volumes (`validateProjectedVolumeSource` and `validateProjectionSources` of
//! `pkg/apis/core/validation/validation.go`): one kind per source, named secrets and config
//! maps, service account token lifetimes and paths, no path projected twice. Kubernetes
//! reports duplicate paths and token paths under the volume's `projected` path.

use std::collections::BTreeSet;

use serde_json::Value;

use super::Cause;
use super::field::{forbidden, go_string, invalid, is_set, items, required, text};
use super::files::{downward_item, key_to_path, local_non_reserved};

const KINDS: &[&str] = &[
    "secret",
    "configMap",
    "downwardAPI",
    "serviceAccountToken",
    "clusterTrustBundle",
];
const DUPLICATE: &str = "conflicting duplicate paths";

/// The sources of the projected volume `projection` at `path` (its `defaultMode` is checked by
/// the caller).
pub(super) fn sources(projection: &Value, path: &str, causes: &mut Vec<Cause>) {
    let mut paths = BTreeSet::new();
    for (i, source) in items(projection, "sources").iter().enumerate() {
        let at = format!("{path}.sources[{i}]");
        for kind in ["secret", "configMap"].iter().filter(|k| is_set(source, k)) {
            let s = &source[*kind];
            let name = text(s, "name");
            if name.is_empty() {
                causes.push(required(&format!("{at}.{kind}.name"), ""));
            }
            for (j, item) in items(s, "items").iter().enumerate() {
                key_to_path(item, &format!("{at}.{kind}.items[{j}]"), causes);
                let target = text(item, "path");
                if !target.is_empty() && !paths.insert(target.to_owned()) {
                    causes.push(invalid(path, &go_string(name), DUPLICATE));
                }
            }
        }
        if is_set(source, "downwardAPI") {
            let projection_path = format!("{at}.downwardAPI");
            for item in items(&source["downwardAPI"], "items") {
                downward_item(item, &projection_path, causes);
                let target = text(item, "path");
                if !target.is_empty() && !paths.insert(target.to_owned()) {
                    causes.push(invalid(path, &go_string(target), DUPLICATE));
                }
            }
        }
        if is_set(source, "serviceAccountToken") {
            token(
                &source["serviceAccountToken"],
                path,
                &format!("{at}.serviceAccountToken"),
                causes,
            );
        }
        if KINDS.iter().filter(|k| is_set(source, k)).count() > 1 {
            causes.push(forbidden(
                &at,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
}

/// A service account token projection: at least 10 minutes, at most 2^32 seconds, a local path
/// (whose errors Kubernetes reports at the volume's `projected.path`).
fn token(t: &Value, volume_path: &str, path: &str, causes: &mut Vec<Cause>) {
    let seconds = t
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let at = format!("{path}.expirationSeconds");
    if seconds < 600 {
        causes.push(invalid(
            &at,
            &seconds.to_string(),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > 1 << 32 {
        causes.push(invalid(
            &at,
            &seconds.to_string(),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let token_path = text(t, "path");
    if token_path.is_empty() {
        causes.push(required(&format!("{volume_path}.path"), ""));
    } else {
        local_non_reserved(token_path, &format!("{volume_path}.path"), causes);
    }
}
