//! StorageClasses (`pkg/apis/storage/v1/defaults.go`), PersistentVolumes and
//! PersistentVolumeClaims (`pkg/apis/core/v1/defaults.go`).

use serde_json::{Map, Value};

use super::{object_at, object_entry, set_default};

pub(super) fn storage_class(obj: &mut Map<String, Value>) {
    set_default(obj, "reclaimPolicy", "Delete");
    set_default(obj, "volumeBindingMode", "Immediate");
}

/// `SetDefaults_PersistentVolume` (and `SetDefaults_HostPathVolumeSource` of its source).
pub(super) fn persistent_volume(obj: &mut Map<String, Value>) {
    if let Some(spec) = object_entry(obj, "spec") {
        set_default(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_default(spec, "volumeMode", "Filesystem");
        if let Some(host_path) = object_at(spec, "hostPath") {
            set_default(host_path, "type", "");
        }
    }
    if let Some(status) = object_entry(obj, "status") {
        set_default(status, "phase", "Pending");
    }
}

/// `SetDefaults_PersistentVolumeClaim` and `SetDefaults_PersistentVolumeClaimSpec`.
pub(super) fn persistent_volume_claim(obj: &mut Map<String, Value>) {
    if let Some(spec) = object_entry(obj, "spec") {
        set_default(spec, "volumeMode", "Filesystem");
    }
    if let Some(status) = object_entry(obj, "status") {
        set_default(status, "phase", "Pending");
    }
}
