//! The volumes of a pod spec and the mounts of its containers
//! (`pkg/apis/core/validation/validation.go`: `ValidateVolumes`, `validateVolumeSource` with
//! the checks of the common sources, `ValidateVolumeMounts`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::field::{
    duplicate, forbidden, go_string, invalid, items, not_found, required, text, unsupported,
};
use super::files::{downward_item, file_mode, key_to_path, local_descending, no_backsteps};
use super::quantity::Quantity;
use super::{Cause, invalid_value, label_errors, projected, subdomain_errors};

/// The valid volumes of a pod spec by name.
pub(super) type Volumes<'a> = BTreeMap<&'a str, &'a Value>;

/// The sources a volume can have (one of them; defaulting gives `emptyDir` to a volume with
/// none), in the order `validateVolumeSource` checks them, with the path Kubernetes names when
/// one is a second source (`cephFS`, and its `downwarAPI` typo).
pub(crate) const SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];
const PROPAGATIONS: &[&str] = &["Bidirectional", "HostToContainer", "None"];
/// `ValidateVolumes`: each volume's source and name; the valid ones by name.
pub(super) fn volumes<'a>(spec: &'a Value, path: &str, causes: &mut Vec<Cause>) -> Volumes<'a> {
    let mut valid = Volumes::new();
    let mut names = BTreeSet::new();
    for (i, volume) in items(spec, "volumes").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let mut errs = source(volume, &at);
        let name = text(volume, "name");
        let name_path = format!("{at}.name");
        if name.is_empty() {
            errs.push(required(&name_path, ""));
        } else {
            errs.extend(
                label_errors(name)
                    .iter()
                    .map(|m| (name_path.clone(), invalid_value(name, m))),
            );
        }
        if names.contains(name) {
            errs.push(duplicate(&name_path, &go_string(name)));
        }
        if errs.is_empty() {
            names.insert(name);
            valid.insert(name, volume);
        } else {
            causes.append(&mut errs);
        }
    }
    valid
}

/// `validateVolumeSource`: exactly one source, and the checks of the first.
fn source(volume: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut found = 0;
    for (key, name) in SOURCES {
        let Some(s) = volume.get(*key).filter(|v| !v.is_null()) else {
            continue;
        };
        if found > 0 {
            causes.push(forbidden(
                &format!("{path}.{name}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found += 1;
        source_fields(key, s, &format!("{path}.{key}"), &mut causes);
    }
    if found == 0 {
        causes.push(required(path, "must specify a volume type"));
    }
    causes
}

/// The checks of the common sources (`validateHostPathVolumeSource`,
/// `validateSecretVolumeSource`...).
fn source_fields(key: &str, s: &Value, path: &str, causes: &mut Vec<Cause>) {
    let need = |field: &str, causes: &mut Vec<Cause>| {
        if text(s, field).is_empty() {
            causes.push(required(&format!("{path}.{field}"), ""));
        }
    };
    match key {
        "emptyDir" => {
            let limit = s
                .get("sizeLimit")
                .and_then(Value::as_str)
                .and_then(|s| Quantity::parse(s).ok());
            if limit.is_some_and(|q| q.is_negative()) {
                causes.push(forbidden(
                    &format!("{path}.sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                ));
            }
        }
        "hostPath" => {
            let host = text(s, "path");
            if host.is_empty() {
                need("path", causes);
                return;
            }
            no_backsteps(host, &format!("{path}.path"), causes);
            if let Some(kind) = s.get("type").and_then(Value::as_str)
                && !HOST_PATH_TYPES.contains(&kind)
            {
                causes.push(unsupported(&format!("{path}.type"), kind, HOST_PATH_TYPES));
            }
        }
        "gitRepo" => {
            need("repository", causes);
            local_descending(text(s, "directory"), &format!("{path}.directory"), causes);
        }
        "secret" | "configMap" => {
            need(
                if key == "secret" {
                    "secretName"
                } else {
                    "name"
                },
                causes,
            );
            file_mode(s, "defaultMode", path, causes);
            for (i, item) in items(s, "items").iter().enumerate() {
                key_to_path(item, &format!("{path}.items[{i}]"), causes);
            }
        }
        "persistentVolumeClaim" => need("claimName", causes),
        "nfs" => {
            need("server", causes);
            need("path", causes);
            let nfs_path = text(s, "path");
            if !nfs_path.starts_with('/') {
                causes.push(invalid(
                    &format!("{path}.path"),
                    &go_string(nfs_path),
                    "must be an absolute path",
                ));
            }
        }
        "downwardAPI" => {
            file_mode(s, "defaultMode", path, causes);
            for item in items(s, "items") {
                downward_item(item, path, causes);
            }
        }
        "projected" => {
            file_mode(s, "defaultMode", path, causes);
            projected::sources(s, path, causes);
        }
        "csi" => {
            let driver = text(s, "driver");
            let at = format!("{path}.driver");
            if driver.is_empty() {
                causes.push(required(&at, ""));
            }
            if driver.len() > 63 {
                causes.push((
                    at.clone(),
                    "Too long: may not be more than 63 bytes".to_owned(),
                ));
            }
            for m in subdomain_errors(&driver.to_lowercase()) {
                causes.push((at.clone(), invalid_value(driver, &m)));
            }
        }
        _ => {}
    }
}

/// `ValidateVolumeMounts` of a container: each mount names a valid volume, has a unique
/// mount path, and relative sub-paths. As in Kubernetes, sub-path errors are reported at the
/// list's path (`volumeMounts.subPath`).
pub(super) fn volume_mounts(c: &Value, path: &str, volumes: &Volumes<'_>, causes: &mut Vec<Cause>) {
    let mut mount_points = BTreeSet::new();
    let privileged = c
        .pointer("/securityContext/privileged")
        .and_then(Value::as_bool)
        == Some(true);
    for (i, mount) in items(c, "volumeMounts").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = text(mount, "name");
        if name.is_empty() {
            causes.push(required(&format!("{at}.name"), ""));
        }
        if !volumes.contains_key(name) {
            causes.push(not_found(&format!("{at}.name"), &go_string(name)));
        }
        let mount_path = text(mount, "mountPath");
        if mount_path.is_empty() {
            causes.push(required(&format!("{at}.mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            causes.push(invalid(
                &format!("{at}.mountPath"),
                &go_string(mount_path),
                "must be unique",
            ));
        }
        let image = volumes
            .get(name)
            .is_some_and(|v| v.get("image").is_some_and(|i| !i.is_null()));
        for field in ["subPath", "subPathExpr"] {
            let sub = text(mount, field);
            if image && !sub.is_empty() {
                causes.push(invalid(
                    &format!("{at}.{field}"),
                    &go_string(sub),
                    "not allowed in image volume sources",
                ));
            }
        }
        let sub_path = text(mount, "subPath");
        if !sub_path.is_empty() {
            local_descending(sub_path, &format!("{path}.subPath"), causes);
        }
        let expr = text(mount, "subPathExpr");
        if !expr.is_empty() {
            if !sub_path.is_empty() {
                causes.push(invalid(
                    &format!("{at}.subPathExpr"),
                    &go_string(expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            local_descending(expr, &format!("{path}.subPathExpr"), causes);
        }
        if let Some(mode) = mount.get("mountPropagation").and_then(Value::as_str) {
            let at = format!("{path}.mountPropagation");
            if !PROPAGATIONS.contains(&mode) {
                causes.push(unsupported(&at, mode, PROPAGATIONS));
            }
            if mode == "Bidirectional" && !privileged {
                causes.push(forbidden(
                    &at,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
    }
}
