//! Conversion of objects between the served versions of one resource, as the API server's
//! converter: objects are stored in the resource's storage version
//! ([`ResourceDef::storage_version`]) and answered in the version a request addresses.
//!
//! Custom resources convert as apiextensions-apiserver's `None` strategy
//! (`pkg/apiserver/conversion/nop_converter.go`: only `apiVersion` changes); the built-in kinds
//! served in several versions have their kind's conversion (hpa.rs: `autoscaling/v1` and `v2`
//! HorizontalPodAutoscalers, as `pkg/apis/autoscaling/v1/conversion.go`).
//!
//! An object already in the wanted version is handed on as it is (the shared encoding of a
//! stored object is what list, get and watch answers copy), so only requests through another
//! version than the stored one pay for a conversion.

use std::sync::Arc;

use crate::object::Object;
use crate::resource::ResourceDef;

mod hpa;

pub(crate) use hpa::{drop_round_trip_annotations, set_status_annotations};

/// `obj` as `def`'s version serves it (the same `Arc` when it is already in that version).
pub(crate) fn served(def: &ResourceDef, obj: &Arc<Object>) -> Arc<Object> {
    if obj.api_version() == def.api.api_version {
        return Arc::clone(obj);
    }
    Arc::new(convert(def, obj, &def.api.api_version))
}

/// `obj`, written through `def`'s version, as stored: in `def`'s storage version.
pub(crate) fn stored(def: &ResourceDef, obj: Object) -> Object {
    let api_version = def.storage_api_version();
    if obj.api_version() == api_version {
        return obj;
    }
    convert(def, &obj, &api_version)
}

/// `obj` (of `def`'s kind, in any of its versions) in `api_version`.
fn convert(def: &ResourceDef, obj: &Object, api_version: &str) -> Object {
    match (def.api.group.as_str(), def.api.kind.as_str()) {
        ("autoscaling", "HorizontalPodAutoscaler") => hpa::convert(obj, api_version),
        _ => {
            let mut out = obj.clone();
            out.set_type(api_version, &def.api.kind);
            out
        }
    }
}
