//! StorageClasses (`pkg/apis/storage/validation/validation.go`), PersistentVolumes and
//! PersistentVolumeClaims (`pkg/apis/core/validation/validation.go`:
//! `ValidatePersistentVolumeSpec`, `ValidatePersistentVolumeClaimSpec` and their updates).
//! Where Kubernetes appends a diff of the specs to a message, the message ends before it.

use serde_json::{Map, Value};

use super::Cause;
use super::field::{forbidden, go_scalar, go_string, invalid, required, text, unsupported};
use super::quantity::Quantity;

type Data = Map<String, Value>;

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];
/// The volume sources of a PersistentVolume (`PersistentVolumeSource`'s fields).
const VOLUME_SOURCES: &[&str] = &[
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// `field.NotSupported` when `value` (if set) is not one of `supported`.
fn one_of(path: &str, value: &Value, supported: &[&str], causes: &mut Vec<Cause>) {
    if let Some(v) = value.as_str().filter(|v| !supported.contains(v)) {
        causes.push(unsupported(path, v, supported));
    }
}

/// `validateProvisioner`, the reclaim policy and the volume binding mode.
pub(crate) fn storage_class(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let provisioner = data
        .get("provisioner")
        .and_then(Value::as_str)
        .unwrap_or("");
    if provisioner.is_empty() {
        causes.push(required("provisioner", ""));
    } else {
        causes.extend(
            super::qualified_name_errors(&provisioner.to_ascii_lowercase())
                .iter()
                .map(|m| invalid("provisioner", &go_string(provisioner), m)),
        );
    }
    let null = Value::Null;
    one_of(
        "reclaimPolicy",
        data.get("reclaimPolicy").unwrap_or(&null),
        &["Delete", "Retain"],
        &mut causes,
    );
    one_of(
        "volumeBindingMode",
        data.get("volumeBindingMode").unwrap_or(&null),
        &["Immediate", "WaitForFirstConsumer"],
        &mut causes,
    );
    causes
}

/// `ValidateStorageClassUpdate`: parameters, provisioner and reclaim policy are forbidden to
/// change, the volume binding mode is immutable.
pub(crate) fn storage_class_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    for field in ["parameters", "provisioner", "reclaimPolicy"] {
        if new.get(field) != old.get(field) {
            causes.push(forbidden(
                field,
                &format!("updates to {field} are forbidden."),
            ));
        }
    }
    if new.get("volumeBindingMode") != old.get("volumeBindingMode") {
        let value = new.get("volumeBindingMode").unwrap_or(&Value::Null);
        causes.push(invalid(
            "volumeBindingMode",
            &go_scalar(value),
            "field is immutable",
        ));
    }
    causes
}

fn access_modes(spec: &Value, detail: &str, causes: &mut Vec<Cause>) {
    let modes = spec.get("accessModes").and_then(Value::as_array);
    if modes.is_none_or(Vec::is_empty) {
        causes.push(required("spec.accessModes", detail));
    }
    for mode in modes.into_iter().flatten() {
        one_of("spec.accessModes", mode, ACCESS_MODES, causes);
    }
}

/// `ValidatePositiveQuantityValue` of a storage quantity at `path` (if any, printed as
/// `Quantity.String()`), then the volume mode.
fn storage_and_mode(path: &str, storage: Option<&Value>, spec: &Value, causes: &mut Vec<Cause>) {
    if let Some(q) = storage.and_then(Quantity::from_json)
        && !q.is_positive()
    {
        causes.push(invalid(
            path,
            &go_string(&q.canonical()),
            "must be greater than zero",
        ));
    }
    one_of("spec.volumeMode", &spec["volumeMode"], VOLUME_MODES, causes);
}

/// `ValidatePersistentVolumeSpec`: access modes, a storage capacity, one volume source, the
/// reclaim policy and volume mode.
pub(crate) fn persistent_volume(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    access_modes(spec, "", &mut causes);
    let capacity = spec.get("capacity").and_then(Value::as_object);
    if capacity.is_none_or(Map::is_empty) {
        causes.push(required("spec.capacity", ""));
        causes.push((
            "spec.capacity".to_owned(),
            "Unsupported value: core.ResourceList(nil): supported values: \"storage\"".to_owned(),
        ));
    }
    let storage = capacity.and_then(|c| c.get("storage"));
    storage_and_mode("spec.capacity[storage]", storage, spec, &mut causes);
    one_of(
        "spec.persistentVolumeReclaimPolicy",
        &spec["persistentVolumeReclaimPolicy"],
        &["Delete", "Recycle", "Retain"],
        &mut causes,
    );
    if !VOLUME_SOURCES
        .iter()
        .any(|s| spec.get(*s).is_some_and(|v| !v.is_null()))
    {
        causes.push(required("spec", "must specify a volume type"));
    }
    causes
}

/// `ValidatePersistentVolumeUpdate`: the volume source and mode may not change.
pub(crate) fn persistent_volume_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let (new_spec, old_spec) = (&new["spec"], &old["spec"]);
    if VOLUME_SOURCES
        .iter()
        .any(|s| new_spec.get(*s) != old_spec.get(*s))
    {
        causes.push(forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    if new_spec.get("volumeMode") != old_spec.get("volumeMode") {
        causes.push(invalid(
            "volumeMode",
            &go_scalar(&new_spec["volumeMode"]),
            "field is immutable",
        ));
    }
    causes
}

/// `ValidatePersistentVolumeClaimSpec`: access modes and a positive storage request.
pub(crate) fn persistent_volume_claim(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    access_modes(spec, "at least 1 access mode is required", &mut causes);
    let storage = spec
        .pointer("/resources/requests/storage")
        .filter(|s| !s.is_null());
    if storage.is_none() {
        causes.push(required("spec.resources[storage]", ""));
    }
    storage_and_mode("spec.resources[storage]", storage, spec, &mut causes);
    causes
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is immutable but for a first volume name
/// and, for a bound claim, its storage request (which may not shrink).
pub(crate) fn persistent_volume_claim_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut new_spec = new.get("spec").cloned().unwrap_or(Value::Null);
    let mut old_spec = old.get("spec").cloned().unwrap_or(Value::Null);
    if text(&old_spec, "volumeName").is_empty()
        && let Some(name) = new_spec.get("volumeName")
    {
        old_spec["volumeName"] = name.clone();
    }
    let bound = new["status"]["phase"] == "Bound";
    for spec in [&mut new_spec, &mut old_spec] {
        if let Some(s) = spec.as_object_mut() {
            s.remove("volumeAttributesClassName");
            if bound
                && let Some(requests) = s
                    .get_mut("resources")
                    .and_then(|r| r.get_mut("requests"))
                    .and_then(Value::as_object_mut)
            {
                requests.remove("storage");
            }
        }
    }
    if new_spec != old_spec {
        causes.push(forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    causes
}
