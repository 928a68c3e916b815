//! Printers of StorageClasses, PersistentVolumes and PersistentVolumeClaims
//! (`printStorageClass`, `printPersistentVolume`, `printPersistentVolumeClaim`; the name cell
//! of a default StorageClass is cells.rs's).

use kube_core::Resource;
use serde_json::{Map, Value, json};

use super::cells::{age, items, text};
use super::{AGE, Cells, Column};
use crate::object::Object;

type Data = Map<String, Value>;

const STORAGE_CLASS: &[Column] = &[
    Column(
        "Provisioner",
        "string",
        0,
        "provisioner indicates the type of the provisioner.",
    ),
    Column(
        "ReclaimPolicy",
        "string",
        0,
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
    ),
    Column(
        "VolumeBindingMode",
        "string",
        0,
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
    ),
    Column(
        "AllowVolumeExpansion",
        "string",
        0,
        "allowVolumeExpansion shows whether the storage class allow volume expand.",
    ),
    AGE,
];
const PERSISTENT_VOLUME: &[Column] = &[
    Column(
        "Capacity",
        "string",
        0,
        "capacity is the description of the persistent volume's resources and capacity.",
    ),
    Column(
        "Access Modes",
        "string",
        0,
        "accessModes contains all ways the volume can be mounted.",
    ),
    Column(
        "Reclaim Policy",
        "string",
        0,
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
    ),
    Column(
        "Status",
        "string",
        0,
        "phase indicates if a volume is available, bound to a claim, or released by a claim.",
    ),
    Column(
        "Claim",
        "string",
        0,
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
    ),
    Column("StorageClass", "string", 0, "StorageClass of the pv"),
    Column(
        "VolumeAttributesClass",
        "string",
        0,
        "VolumeAttributesClass of the pv",
    ),
    Column(
        "Reason",
        "string",
        0,
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
    ),
    AGE,
    Column(
        "VolumeMode",
        "string",
        1,
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
    ),
];
const PERSISTENT_VOLUME_CLAIM: &[Column] = &[
    Column(
        "Status",
        "string",
        0,
        "phase represents the current phase of PersistentVolumeClaim.",
    ),
    Column(
        "Volume",
        "string",
        0,
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    Column(
        "Capacity",
        "string",
        0,
        "capacity represents the actual resources of the underlying volume.",
    ),
    Column(
        "Access Modes",
        "string",
        0,
        "accessModes contains the actual access modes the volume backing the PVC has.",
    ),
    Column("StorageClass", "string", 0, "StorageClass of the pvc"),
    Column(
        "VolumeAttributesClass",
        "string",
        0,
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    Column(
        "VolumeMode",
        "string",
        1,
        "volumeMode defines what type of volume is required by the claim.",
    ),
];

/// The printer of a storage kind.
pub(super) fn printer(group: &str, kind: &str) -> Option<(&'static [Column], Cells)> {
    Some(match (group, kind) {
        ("storage.k8s.io", "StorageClass") => (STORAGE_CLASS, storage_class),
        ("", "PersistentVolume") => (PERSISTENT_VOLUME, persistent_volume),
        ("", "PersistentVolumeClaim") => (PERSISTENT_VOLUME_CLAIM, persistent_volume_claim),
        _ => return None,
    })
}

fn storage_class(obj: &Object, data: &Data) -> Vec<Value> {
    let or = |key: &str, default: &str| match data.get(key).and_then(Value::as_str) {
        Some(v) => v.to_owned(),
        None => default.to_owned(),
    };
    vec![
        json!(text(data, "/provisioner")),
        json!(or("reclaimPolicy", "Delete")),
        json!(or("volumeBindingMode", "Immediate")),
        json!(
            data.get("allowVolumeExpansion")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age(obj),
    ]
}

/// `helper.GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order.
fn access_modes(data: &Data, pointer: &str) -> String {
    let modes: Vec<&str> = items(data, pointer).filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The class of a volume or claim: the beta annotation, else `spec.storageClassName`.
fn class(obj: &Object, data: &Data) -> String {
    obj.meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
        .cloned()
        .unwrap_or_else(|| text(data, "/spec/storageClassName").to_owned())
}

/// The phase, or `Terminating` for an object being deleted.
fn phase(obj: &Object, data: &Data) -> String {
    match obj.meta().deletion_timestamp {
        Some(_) => "Terminating".to_owned(),
        None => text(data, "/status/phase").to_owned(),
    }
}

fn or_unset(data: &Data, pointer: &str) -> Value {
    match text(data, pointer) {
        "" => json!("<unset>"),
        v => json!(v),
    }
}

fn persistent_volume(obj: &Object, data: &Data) -> Vec<Value> {
    let claim = match data.get("spec").and_then(|s| s.get("claimRef")) {
        Some(r) if !r.is_null() => format!(
            "{}/{}",
            r["namespace"].as_str().unwrap_or(""),
            r["name"].as_str().unwrap_or("")
        ),
        _ => String::new(),
    };
    let capacity = match text(data, "/spec/capacity/storage") {
        "" => "0",
        c => c,
    };
    vec![
        json!(capacity),
        json!(access_modes(data, "/spec/accessModes")),
        json!(text(data, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase(obj, data)),
        json!(claim),
        json!(class(obj, data)),
        or_unset(data, "/spec/volumeAttributesClassName"),
        json!(text(data, "/status/reason")),
        age(obj),
        or_unset(data, "/spec/volumeMode"),
    ]
}

fn persistent_volume_claim(obj: &Object, data: &Data) -> Vec<Value> {
    let volume = text(data, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            text(data, "/status/capacity/storage").to_owned(),
            access_modes(data, "/status/accessModes"),
        )
    };
    vec![
        json!(phase(obj, data)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class(obj, data)),
        or_unset(data, "/spec/volumeAttributesClassName"),
        age(obj),
        or_unset(data, "/spec/volumeMode"),
    ]
}
