//! Comparing resource versions as Kubernetes allows (apimachinery's
//! `k8s.io/apimachinery/pkg/util/resourceversion.CompareResourceVersion`, which client-go 1.36's
//! read-your-writes check, KEP-5647, uses).
//!
//! Resource versions are opaque strings to clients. Since Kubernetes 1.35 the API server
//! guarantees that those of one resource are decimal integers, ordered as the writes that made
//! them: a well-formed version (digits, no leading zero, any length) may be compared with another
//! of the same resource. Anything else may only be compared for equality.

use std::cmp::Ordering;

/// A resource version that is not a decimal integer without leading zeros, so cannot be ordered
/// (apimachinery's `InvalidResourceVersion`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource version is not well formed: {0:?}")]
pub struct InvalidResourceVersion(pub String);

fn is_well_formed(rv: &str) -> bool {
    !rv.is_empty() && !rv.starts_with('0') && rv.bytes().all(|b| b.is_ascii_digit())
}

/// Orders two resource versions of the same resource: a shorter well-formed version is smaller,
/// versions of equal length compare digit by digit (no length limit, as apimachinery). An empty,
/// zero-padded or non-decimal version is an error.
///
/// ```
/// use std::cmp::Ordering;
/// use kcache_store::compare_resource_versions;
/// assert_eq!(compare_resource_versions("9", "10"), Ok(Ordering::Less));
/// assert_eq!(compare_resource_versions("42", "42"), Ok(Ordering::Equal));
/// assert!(compare_resource_versions("", "1").is_err());
/// assert!(compare_resource_versions("01", "1").is_err());
/// ```
pub fn compare_resource_versions(a: &str, b: &str) -> Result<Ordering, InvalidResourceVersion> {
    for rv in [a, b] {
        if !is_well_formed(rv) {
            return Err(InvalidResourceVersion(rv.to_owned()));
        }
    }
    Ok(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// Whether a cache at resource version `cache` has seen the write that returned `written`
/// (client-go 1.36's consistency check, `ConsistencyStore.IsReady`):
///
/// - an empty `written` asks for nothing: true; an empty `cache` (nothing synced yet): false;
/// - equal strings: true, whatever their form;
/// - two well-formed versions: `cache >= written`;
/// - otherwise the two cannot be ordered: true, logged at warn, as client-go does ("comparison
///   errors indicate there's a data problem with resource versions, continue so we don't block
///   syncing") — a server whose versions are not integers cannot be waited for.
///
/// ```
/// use kcache_store::resource_version_reached;
/// assert!(resource_version_reached("12", "9"));
/// assert!(!resource_version_reached("9", "12"));
/// assert!(!resource_version_reached("", "12"));
/// ```
pub fn resource_version_reached(cache: &str, written: &str) -> bool {
    if written.is_empty() || cache == written {
        return true;
    }
    if cache.is_empty() {
        return false;
    }
    match compare_resource_versions(cache, written) {
        Ok(order) => order != Ordering::Less,
        Err(err) => {
            tracing::warn!(cache, written, error = %err, "resource versions cannot be ordered; treated as reached");
            true
        }
    }
}
