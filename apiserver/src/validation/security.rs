//! Security contexts (`pkg/apis/core/validation/validation.go`:
//! `validatePodSpecSecurityContext`, `validateSeccompProfileField`; `ValidateSecurityContext`
//! of a container): user and group ids in range, process namespace sharing, the fsGroup
//! change policy and seccomp profiles.

use serde_json::Value;

use super::Cause;
use super::field::{invalid, items, required, text, unsupported};
use super::files::local_descending;

/// `validation.IsValidUserID` / `IsValidGroupID`'s message.
const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";
const SECCOMP_TYPES: &[&str] = &["Localhost", "RuntimeDefault", "Unconfined"];
const FS_GROUP_POLICIES: &[&str] = &["Always", "OnRootMismatch"];

/// An id at `key` of `context` (if set) in `0..=MaxInt32`.
fn id(context: &Value, key: &str, path: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = context.get(key).and_then(Value::as_i64) {
        id_value(n, &format!("{path}.{key}"), causes);
    }
}

fn id_value(n: i64, path: &str, causes: &mut Vec<Cause>) {
    if !(0..=i64::from(i32::MAX)).contains(&n) {
        causes.push(invalid(path, &n.to_string(), ID_RANGE));
    }
}

/// `validatePodSpecSecurityContext` of `spec.securityContext` at `path` (Kubernetes' internal
/// type holds `hostPID` and `shareProcessNamespace` there, so their error is reported there).
pub(super) fn pod_context(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(context) = spec.get("securityContext").filter(|c| c.is_object()) else {
        return;
    };
    id(context, "fsGroup", path, causes);
    id(context, "runAsUser", path, causes);
    id(context, "runAsGroup", path, causes);
    for (i, gid) in items(context, "supplementalGroups").iter().enumerate() {
        if let Some(n) = gid.as_i64() {
            id_value(n, &format!("{path}.supplementalGroups[{i}]"), causes);
        }
    }
    let flag = |key: &str| spec.get(key).and_then(Value::as_bool) == Some(true);
    if flag("shareProcessNamespace") && flag("hostPID") {
        causes.push(invalid(
            &format!("{path}.shareProcessNamespace"),
            "true",
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    if let Some(policy) = context.get("fsGroupChangePolicy").and_then(Value::as_str)
        && !FS_GROUP_POLICIES.contains(&policy)
    {
        let at = format!("{path}.fsGroupChangePolicy");
        causes.push(unsupported(&at, policy, FS_GROUP_POLICIES));
    }
    seccomp(context, path, causes);
}

/// `ValidateSecurityContext` of a container's `securityContext` at `path`: its ids.
pub(super) fn container_context(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    if let Some(context) = c.get("securityContext").filter(|c| c.is_object()) {
        id(context, "runAsUser", path, causes);
        id(context, "runAsGroup", path, causes);
    }
}

/// `validateSeccompProfileField`: a known type, a local profile path for `Localhost`.
fn seccomp(context: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(profile) = context.get("seccompProfile").filter(|p| p.is_object()) else {
        return;
    };
    let at = format!("{path}.seccompProfile");
    match text(profile, "type") {
        "" => causes.push(required(
            &format!("{at}.type"),
            "type is required when seccompProfile is set",
        )),
        t if !SECCOMP_TYPES.contains(&t) => {
            causes.push(unsupported(&format!("{at}.type"), t, SECCOMP_TYPES));
        }
        _ => {}
    }
    if text(profile, "type") == "Localhost" {
        match profile.get("localhostProfile").and_then(Value::as_str) {
            None => causes.push(required(
                &format!("{at}.localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(local) => local_descending(local, &format!("{at}.localhostProfile"), causes),
        }
    }
}
