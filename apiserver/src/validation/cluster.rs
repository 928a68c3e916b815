//! The main rules of the cluster-level kinds: ControllerRevisions
//! (`pkg/apis/apps/validation`), IngressClasses (`pkg/apis/networking/validation`),
//! RuntimeClasses (`pkg/apis/node/validation`), CSIDrivers, CSINodes and VolumeAttachments
//! (`pkg/apis/storage/validation`), FlowSchemas and PriorityLevelConfigurations
//! (`pkg/apis/flowcontrol/validation`). Values that are not scalars print as their JSON, as
//! 1.34's field errors do.

use serde_json::{Map, Value};

use super::field::{
    duplicate, forbidden, go_scalar, go_string, invalid, is_set, items, required, text, unsupported,
};
use super::{Cause, label_errors, subdomain_errors};

type Data = Map<String, Value>;

fn at<'a>(data: &'a Data, key: &str) -> &'a Value {
    data.get(key).unwrap_or(&Value::Null)
}

/// `ValidateImmutableField`: `Invalid value: NEW: field is immutable` when `key` of `new`
/// differs from `old`'s.
fn immutable(new: &Value, old: &Value, key: &str, path: &str, causes: &mut Vec<Cause>) {
    let (n, o) = (
        new.get(key).unwrap_or(&Value::Null),
        old.get(key).unwrap_or(&Value::Null),
    );
    if n != o {
        causes.push(invalid(path, &go_scalar(n), "field is immutable"));
    }
}

/// `ValidateControllerRevisionCreate`: data is mandatory, the revision not negative.
pub(crate) fn controller_revision(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    if at(data, "data").is_null() {
        causes.push(required("data", "data is mandatory"));
    }
    if let Some(revision) = at(data, "revision").as_i64().filter(|r| *r < 0) {
        causes.push(invalid(
            "revision",
            &revision.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    causes
}

/// `ValidateControllerRevisionUpdate`: the data may not change.
pub(crate) fn controller_revision_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = controller_revision(new);
    let (n, o) = (Value::Object(new.clone()), Value::Object(old.clone()));
    immutable(&n, &o, "data", "data", &mut causes);
    causes
}

/// `validateIngressClassSpec`: a controller (a domain-prefixed path of at most 250
/// characters) and well-formed parameters.
pub(crate) fn ingress_class(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = at(data, "spec");
    let controller = text(spec, "controller");
    if controller.is_empty() {
        causes.push(required("spec.controller", ""));
    } else if controller.len() > 250 {
        causes.push((
            "spec.controller".to_owned(),
            "Too long: may not be more than 250 bytes".to_owned(),
        ));
    } else {
        domain_prefixed_path("spec.controller", controller, &mut causes);
    }
    let params = spec.get("parameters").unwrap_or(&Value::Null);
    if params.is_null() {
        return causes;
    }
    for key in ["kind", "name"] {
        if text(params, key).is_empty() {
            causes.push(required(&format!("spec.parameters.{key}"), ""));
        }
    }
    let namespace = text(params, "namespace");
    match params.get("scope").and_then(Value::as_str) {
        None => causes.push(required(
            "spec.parameters.scope",
            "`parameters.scope` must be set",
        )),
        Some("Namespace") if namespace.is_empty() => causes.push(required(
            "spec.parameters.namespace",
            "`parameters.scope` is set to 'Namespace'",
        )),
        Some("Cluster") if !namespace.is_empty() => causes.push(forbidden(
            "spec.parameters.namespace",
            "`parameters.scope` is set to 'Cluster'",
        )),
        Some(scope) if scope != "Namespace" && scope != "Cluster" => causes.push(unsupported(
            "spec.parameters.scope",
            scope,
            &["Cluster", "Namespace"],
        )),
        Some(_) => {}
    }
    causes
}

/// `ValidateIngressClassUpdate`: the controller may not change.
pub(crate) fn ingress_class_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = ingress_class(new);
    immutable(
        at(new, "spec"),
        at(old, "spec"),
        "controller",
        "spec.controller",
        &mut causes,
    );
    causes
}

/// `IsDomainPrefixedPath`: `example.com/path`.
fn domain_prefixed_path(path: &str, value: &str, causes: &mut Vec<Cause>) {
    let Some((host, _)) = value.split_once('/') else {
        causes.push(invalid(
            path,
            &go_string(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    causes.extend(
        subdomain_errors(host)
            .iter()
            .map(|m| invalid(path, &go_string(host), m)),
    );
}

/// `ValidateRuntimeClass`: the handler is a DNS label.
pub(crate) fn runtime_class(data: &Data) -> Vec<Cause> {
    let handler = text(&Value::Object(data.clone()), "handler").to_owned();
    label_errors(&handler)
        .iter()
        .map(|m| invalid("handler", &go_string(&handler), m))
        .collect()
}

/// `ValidateRuntimeClassUpdate`: the handler may not change.
pub(crate) fn runtime_class_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = runtime_class(new);
    let (n, o) = (Value::Object(new.clone()), Value::Object(old.clone()));
    immutable(&n, &o, "handler", "handler", &mut causes);
    causes
}

const LIFECYCLE_MODES: &[&str] = &["Ephemeral", "Persistent"];
const FS_GROUP_POLICIES: &[&str] = &["File", "None", "ReadWriteOnceWithFSType"];

/// `ValidateCSIDriver`: the name is a CSI driver name, the defaulted booleans are set, the
/// modes and fsGroup policy known.
pub(crate) fn csi_driver(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = at(data, "spec");
    for key in ["attachRequired", "podInfoOnMount", "storageCapacity"] {
        if !is_set(spec, key) {
            causes.push(required(&format!("spec.{key}"), ""));
        }
    }
    for mode in items(spec, "volumeLifecycleModes") {
        let mode = mode.as_str().unwrap_or("");
        if !LIFECYCLE_MODES.contains(&mode) {
            causes.push(unsupported(
                "spec.volumeLifecycleModes",
                mode,
                LIFECYCLE_MODES,
            ));
        }
    }
    if let Some(policy) = spec.get("fsGroupPolicy").and_then(Value::as_str)
        && !FS_GROUP_POLICIES.contains(&policy)
    {
        causes.push(unsupported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES));
    }
    causes
}

/// `ValidateCSIDriverUpdate`: attachRequired, podInfoOnMount, the lifecycle modes and the
/// fsGroup policy may not change.
pub(crate) fn csi_driver_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = csi_driver(new);
    let (n, o) = (at(new, "spec"), at(old, "spec"));
    for key in [
        "attachRequired",
        "podInfoOnMount",
        "volumeLifecycleModes",
        "fsGroupPolicy",
    ] {
        immutable(n, o, key, &format!("spec.{key}"), &mut causes);
    }
    causes
}

/// `ValidateCSINode`: each driver is named once, with a node id.
pub(crate) fn csi_node(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut names = Vec::new();
    for (i, driver) in items(at(data, "spec"), "drivers").iter().enumerate() {
        let path = format!("spec.drivers[{i}]");
        let name = text(driver, "name");
        csi_driver_name(&format!("{path}.name"), name, &mut causes);
        if names.contains(&name) {
            causes.push(duplicate(&format!("{path}.name"), &go_string(name)));
        }
        names.push(name);
        if text(driver, "nodeID").is_empty() {
            causes.push(required(&format!("{path}.nodeID"), ""));
        }
    }
    causes
}

/// `ValidateCSIDriverName`: required, at most 63 characters, a DNS subdomain.
fn csi_driver_name(path: &str, name: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(required(path, name));
        return;
    }
    if name.len() > 63 {
        causes.push((
            path.to_owned(),
            "Too long: may not be more than 63 bytes".to_owned(),
        ));
    }
    causes.extend(
        subdomain_errors(&name.to_ascii_lowercase())
            .iter()
            .map(|m| invalid(path, &go_string(name), m)),
    );
}

/// `ValidateVolumeAttachment`: an attacher, a node and exactly one source.
pub(crate) fn volume_attachment(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = at(data, "spec");
    csi_driver_name("spec.attacher", text(spec, "attacher"), &mut causes);
    let source = spec.get("source").unwrap_or(&Value::Null);
    match (
        is_set(source, "persistentVolumeName"),
        is_set(source, "inlineVolumeSpec"),
    ) {
        (false, false) => causes.push(required(
            "spec.source",
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        )),
        (true, true) => causes.push(forbidden(
            "spec.source",
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        )),
        (true, false) if text(source, "persistentVolumeName").is_empty() => {
            causes.push(required(
                "spec.source.persistentVolumeName",
                "must specify non empty persistentVolumeName",
            ));
        }
        _ => {}
    }
    let node = text(spec, "nodeName");
    if node.is_empty() {
        causes.push(required("spec.nodeName", ""));
    } else {
        causes.extend(
            subdomain_errors(node)
                .iter()
                .map(|m| invalid("spec.nodeName", &go_string(node), m)),
        );
    }
    causes
}

/// `ValidateVolumeAttachmentUpdate`: the spec may not change.
pub(crate) fn volume_attachment_update(new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = volume_attachment(new);
    let (n, o) = (Value::Object(new.clone()), Value::Object(old.clone()));
    immutable(&n, &o, "spec", "spec", &mut causes);
    causes
}

/// `ValidateFlowSchemaSpec`: a matching precedence in 1..=10000 and a priority level named.
pub(crate) fn flow_schema(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = at(data, "spec");
    if let Some(p) = spec.get("matchingPrecedence").and_then(Value::as_i64)
        && !(1..=10000).contains(&p)
    {
        causes.push(invalid(
            "spec.matchingPrecedence",
            &p.to_string(),
            "must be a positive value no more than 10000",
        ));
    }
    let level = spec
        .get("priorityLevelConfiguration")
        .unwrap_or(&Value::Null);
    let name = text(level, "name");
    if name.is_empty() {
        causes.push(required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        ));
    } else {
        causes.extend(
            subdomain_errors(name)
                .iter()
                .map(|m| invalid("spec.priorityLevelConfiguration.name", &go_string(name), m)),
        );
    }
    if let Some(method) = spec.get("distinguisherMethod").filter(|m| !m.is_null()) {
        let kind = text(method, "type");
        if kind != "ByUser" && kind != "ByNamespace" {
            causes.push(unsupported(
                "spec.distinguisherMethod.type",
                kind,
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    causes
}

/// `ValidatePriorityLevelConfigurationSpec`: its type and the configuration of that type
/// only.
pub(crate) fn priority_level(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = at(data, "spec");
    match text(spec, "type") {
        "Exempt" => {
            if is_set(spec, "limited") {
                causes.push(forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
        }
        "Limited" => {
            if !is_set(spec, "limited") {
                causes.push(required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                ));
            }
            if is_set(spec, "exempt") {
                causes.push(forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
        }
        other => causes.push(unsupported("spec.type", other, &["Exempt", "Limited"])),
    }
    if let Some(limited) = spec.get("limited") {
        let lendable = limited.get("lendablePercent").and_then(Value::as_i64);
        if let Some(p) = lendable.filter(|p| !(0..=100).contains(p)) {
            causes.push(invalid(
                "spec.limited.lendablePercent",
                &p.to_string(),
                "must be between 0 and 100, inclusive",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn data(v: Value) -> Data {
        v.as_object().cloned().unwrap_or_default()
    }

    /// `TestValidateIngressClass`'s "empty controller" case.
    #[test]
    fn test_validate_ingress_class_empty_controller() {
        let got = ingress_class(&data(json!({"spec": {}})));
        assert_eq!(got, [required("spec.controller", "")]);
        let got = ingress_class(&data(json!({"spec": {"controller": "foo"}})));
        assert_eq!(got[0].0, "spec.controller");
        assert!(
            ingress_class(&data(
                json!({"spec": {"controller": "example.com/ingress"}})
            ))
            .is_empty()
        );
    }

    /// `TestValidateRuntimeClass`'s invalid handler cases.
    #[test]
    fn test_validate_runtime_class_invalid_handler() {
        assert_eq!(runtime_class(&data(json!({"handler": ""}))).len(), 1);
        assert_eq!(
            runtime_class(&data(json!({"handler": "Foo"})))[0].0,
            "handler"
        );
        assert!(runtime_class(&data(json!({"handler": "runc"}))).is_empty());
    }

    /// `TestVolumeAttachmentValidation`'s "missing attacher", "missing node" and "missing
    /// source" cases.
    #[test]
    fn test_volume_attachment_validation_missing_fields() {
        let paths: Vec<String> = volume_attachment(&data(json!({"spec": {}})))
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(paths, ["spec.attacher", "spec.source", "spec.nodeName"]);
    }

    /// `TestValidateControllerRevision`'s "invalid revision" and "no data" cases.
    #[test]
    fn test_validate_controller_revision() {
        let got = controller_revision(&data(json!({"revision": -1})));
        assert_eq!(got.len(), 2);
        assert!(controller_revision(&data(json!({"revision": 1, "data": {}}))).is_empty());
    }
}
