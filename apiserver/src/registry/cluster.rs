//! The strategies of the cluster-level kinds (`pkg/registry/<group>/<kind>/strategy.go`):
//! LimitRanges, ControllerRevisions, IngressClasses, RuntimeClasses, FlowSchemas,
//! PriorityLevelConfigurations, CSIDrivers, CSINodes, VolumeAttachments and
//! CertificateSigningRequests (with their `status` and `approval` subresources), the
//! `admissionregistration.k8s.io` webhook configurations, ValidatingAdmissionPolicies and
//! their bindings.
//! PodTemplates and CSIStorageCapacities keep the generic strategy.

use k8s_openapi::api::{admissionregistration, flowcontrol, storage};
use serde_json::{Map, Value, json};

use super::builtin::{Rules, empty};
use super::strategy::{Strategy, Subresource, set_status};
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::validation::{self, Cause, CsrWrite};

type Data = Map<String, Value>;

/// A kind validated the same way on create and update, plus `update`'s rules.
const fn rules(validate: fn(&Data) -> Vec<Cause>, update: fn(&Data, &Data) -> Vec<Cause>) -> Rules {
    Rules {
        initial_status: None,
        validate,
        validate_update: update,
    }
}

static LIMIT_RANGE: Rules = rules(validation::limit_range, |n, _| validation::limit_range(n));
static CONTROLLER_REVISION: Rules = rules(
    validation::controller_revision,
    validation::controller_revision_update,
);
static INGRESS_CLASS: Rules = rules(validation::ingress_class, validation::ingress_class_update);
static RUNTIME_CLASS: Rules = rules(validation::runtime_class, validation::runtime_class_update);
static CSI_DRIVER: Rules = rules(validation::csi_driver, validation::csi_driver_update);
static CSI_NODE: Rules = rules(validation::csi_node, |n, _| validation::csi_node(n));
/// A new attachment has the empty status (`volumeAttachmentStrategy.PrepareForCreate`).
static VOLUME_ATTACHMENT: Rules = Rules {
    initial_status: Some(empty::<storage::v1::VolumeAttachmentStatus>),
    validate: validation::volume_attachment,
    validate_update: validation::volume_attachment_update,
};
static FLOW_SCHEMA: Rules = Rules {
    initial_status: Some(empty::<flowcontrol::v1::FlowSchemaStatus>),
    validate: validation::flow_schema,
    validate_update: |n, _| validation::flow_schema(n),
};
static PRIORITY_LEVEL: Rules = Rules {
    initial_status: Some(empty::<flowcontrol::v1::PriorityLevelConfigurationStatus>),
    validate: validation::priority_level,
    validate_update: |n, _| validation::priority_level(n),
};
static MUTATING_WEBHOOKS: Rules = rules(
    validation::mutating_webhooks,
    validation::mutating_webhooks_update,
);
static VALIDATING_WEBHOOKS: Rules = rules(
    validation::validating_webhooks,
    validation::validating_webhooks_update,
);
/// A new policy has the empty status (`validatingAdmissionPolicyStrategy.PrepareForCreate`).
static ADMISSION_POLICY: Rules = Rules {
    initial_status: Some(empty::<admissionregistration::v1::ValidatingAdmissionPolicyStatus>),
    validate: validation::admission_policy,
    validate_update: |n, _| validation::admission_policy(n),
};
static ADMISSION_POLICY_BINDING: Rules = rules(validation::admission_policy_binding, |n, _| {
    validation::admission_policy_binding(n)
});
/// CertificateSigningRequests: a new request has no status; an update of the main resource
/// changes only metadata, one through `status` only the status, one through `approval` only
/// the conditions; condition timestamps are filled in (`populateConditionTimestamps`).
struct CsrStrategy;

impl Strategy for CsrStrategy {
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(obj, Some(json!({})));
    }

    fn prepare_for_update(
        &self,
        _def: &ResourceDef,
        new: &mut Object,
        old: &Object,
        subresource: Subresource,
    ) {
        let mut data = new.data();
        let old_data = old.data();
        data.insert(
            "spec".into(),
            old_data.get("spec").cloned().unwrap_or_default(),
        );
        let old_status = old_data.get("status").cloned().unwrap_or_else(|| json!({}));
        match subresource {
            // CSRs have no ephemeral containers: a write through it is taken as one to the object.
            Subresource::Main | Subresource::EphemeralContainers => {
                data.insert("status".into(), old_status);
            }
            Subresource::Status => {}
            Subresource::Approval => {
                let conditions = data
                    .get("status")
                    .and_then(|s| s.get("conditions"))
                    .cloned();
                let mut status = old_status;
                match (conditions, status.as_object_mut()) {
                    (Some(c), Some(s)) => {
                        s.insert("conditions".into(), c);
                    }
                    (None, Some(s)) => {
                        s.remove("conditions");
                    }
                    _ => {}
                }
                data.insert("status".into(), status);
            }
        }
        stamp_conditions(&mut data, &old_data);
        let mut next = new.clone();
        next.set_data(data);
        if subresource != Subresource::Main {
            // Subresource writes keep the stored metadata (ResetObjectMetaForStatus).
            let mut meta_from_old = old.clone();
            meta_from_old.set_data(next.data());
            next = meta_from_old;
        }
        *new = next;
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::csr(&obj.data(), None)
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        validation::csr_update(&new.data(), &old.data(), CsrWrite::Main)
    }

    fn validate_subresource_update(
        &self,
        _def: &ResourceDef,
        new: &Object,
        old: &Object,
        subresource: Subresource,
    ) -> Vec<Cause> {
        let write = match subresource {
            Subresource::Main | Subresource::EphemeralContainers => CsrWrite::Main,
            Subresource::Status => CsrWrite::Status,
            Subresource::Approval => CsrWrite::Approval,
        };
        validation::csr_update(&new.data(), &old.data(), write)
    }
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets now; one without
/// `lastTransitionTime` gets the old one of the same type and status, else now.
fn stamp_conditions(data: &mut Data, old: &Data) {
    let now = serde_json::to_value(super::now()).unwrap_or_default();
    let old_conditions: Vec<Value> = old
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(conditions) = data
        .get_mut("status")
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
        if c.get("lastUpdateTime").is_none_or(Value::is_null) {
            c.insert("lastUpdateTime".into(), now.clone());
        }
        if c.get("lastTransitionTime").is_none_or(Value::is_null) {
            let same = old_conditions
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"));
            let at = same
                .and_then(|o| o.get("lastTransitionTime"))
                .filter(|t| !t.is_null())
                .cloned()
                .unwrap_or_else(|| now.clone());
            c.insert("lastTransitionTime".into(), at);
        }
    }
}

const ADMISSION: &str = "admissionregistration.k8s.io";

/// The strategy of a cluster-level kind of `group`, if `kind` is one.
pub(super) fn strategy_for(group: &str, kind: &str) -> Option<&'static dyn Strategy> {
    Some(match (group, kind) {
        ("", "LimitRange") => &LIMIT_RANGE,
        ("apps", "ControllerRevision") => &CONTROLLER_REVISION,
        ("networking.k8s.io", "IngressClass") => &INGRESS_CLASS,
        ("node.k8s.io", "RuntimeClass") => &RUNTIME_CLASS,
        ("storage.k8s.io", "CSIDriver") => &CSI_DRIVER,
        ("storage.k8s.io", "CSINode") => &CSI_NODE,
        ("storage.k8s.io", "VolumeAttachment") => &VOLUME_ATTACHMENT,
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => &FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => &PRIORITY_LEVEL,
        ("certificates.k8s.io", "CertificateSigningRequest") => &CsrStrategy,
        (ADMISSION, "MutatingWebhookConfiguration") => &MUTATING_WEBHOOKS,
        (ADMISSION, "ValidatingWebhookConfiguration") => &VALIDATING_WEBHOOKS,
        (ADMISSION, "ValidatingAdmissionPolicy") => &ADMISSION_POLICY,
        (ADMISSION, "ValidatingAdmissionPolicyBinding") => &ADMISSION_POLICY_BINDING,
        _ => return None,
    })
}
