//! Quantities of pod specs stored as Kubernetes stores them: a `resource.Quantity` is written
//! back by its `MarshalJSON`, in its canonical form (`0.5` is stored `500m`, `1024Mi` is
//! `1Gi`, a number `1` is the string `"1"`). Text that does not parse is left as it is.

use serde_json::{Map, Value};

use super::{items_at, object_at};
use crate::validation::quantity::Quantity;

/// The canonical form of the quantity `value`, in place.
fn canonicalize(value: &mut Value) {
    if let Some(q) = Quantity::from_json(value) {
        *value = Value::String(q.canonical());
    }
}

/// Every value of the map at `key`, canonical.
fn map_values(map: &mut Map<String, Value>, key: &str) {
    for value in object_at(map, key).into_iter().flat_map(|m| m.values_mut()) {
        canonicalize(value);
    }
}

/// The quantities of a pod spec: containers' limits and requests, the pod's resources and
/// overhead, `emptyDir` size limits.
pub(super) fn pod_spec(spec: &mut Map<String, Value>) {
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in items_at(spec, list) {
            if let Some(resources) = object_at(container, "resources") {
                map_values(resources, "limits");
                map_values(resources, "requests");
            }
        }
    }
    if let Some(resources) = object_at(spec, "resources") {
        map_values(resources, "limits");
        map_values(resources, "requests");
    }
    map_values(spec, "overhead");
    for volume in items_at(spec, "volumes") {
        if let Some(size) = object_at(volume, "emptyDir").and_then(|e| e.get_mut("sizeLimit")) {
            canonicalize(size);
        }
    }
}
