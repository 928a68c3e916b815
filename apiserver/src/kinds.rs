//! The k8s-openapi types of the built-in kinds: what validation decodes objects into and what
//! the OpenAPI documents describe.

use k8s_openapi::api::{
    admissionregistration, apps, autoscaling, batch, certificates, coordination, core, discovery,
    events, flowcontrol, networking, node, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::schemars::{Schema, SchemaGenerator};
use serde_json::Value;

/// One built-in kind and its k8s-openapi type, erased.
pub(crate) struct Kind {
    pub(crate) api_version: &'static str,
    pub(crate) kind: &'static str,
    /// Decodes JSON into the type and drops the result.
    pub(crate) decode: fn(&Value) -> Result<(), serde_json::Error>,
    /// Adds the type's schema (and those it references) to the generator; returns a reference.
    pub(crate) schema: fn(&mut SchemaGenerator) -> Schema,
}

macro_rules! kinds {
    ($($ty:ty),* $(,)?) => {
        /// Every built-in kind the server serves.
        pub(crate) const KINDS: &[Kind] = &[$(Kind {
            api_version: <$ty as k8s_openapi::Resource>::API_VERSION,
            kind: <$ty as k8s_openapi::Resource>::KIND,
            decode: |v| <$ty as serde::Deserialize>::deserialize(v).map(drop),
            schema: |g| g.subschema_for::<$ty>(),
        }),*];
    };
}

kinds![
    core::v1::Namespace,
    core::v1::Pod,
    core::v1::Node,
    core::v1::Service,
    core::v1::Endpoints,
    core::v1::ConfigMap,
    core::v1::Secret,
    core::v1::Event,
    core::v1::ServiceAccount,
    core::v1::ResourceQuota,
    core::v1::LimitRange,
    core::v1::PodTemplate,
    core::v1::PersistentVolume,
    core::v1::PersistentVolumeClaim,
    apps::v1::Deployment,
    apps::v1::ReplicaSet,
    apps::v1::StatefulSet,
    apps::v1::DaemonSet,
    apps::v1::ControllerRevision,
    autoscaling::v2::HorizontalPodAutoscaler,
    autoscaling::v1::HorizontalPodAutoscaler,
    batch::v1::Job,
    batch::v1::CronJob,
    coordination::v1::Lease,
    events::v1::Event,
    discovery::v1::EndpointSlice,
    networking::v1::Ingress,
    networking::v1::NetworkPolicy,
    networking::v1::IngressClass,
    certificates::v1::CertificateSigningRequest,
    node::v1::RuntimeClass,
    flowcontrol::v1::FlowSchema,
    flowcontrol::v1::PriorityLevelConfiguration,
    policy::v1::PodDisruptionBudget,
    scheduling::v1::PriorityClass,
    storage::v1::StorageClass,
    storage::v1::CSIDriver,
    storage::v1::CSINode,
    storage::v1::CSIStorageCapacity,
    storage::v1::VolumeAttachment,
    rbac::v1::Role,
    rbac::v1::RoleBinding,
    rbac::v1::ClusterRole,
    rbac::v1::ClusterRoleBinding,
    admissionregistration::v1::MutatingWebhookConfiguration,
    admissionregistration::v1::ValidatingWebhookConfiguration,
    admissionregistration::v1::ValidatingAdmissionPolicy,
    admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    apiextensions::v1::CustomResourceDefinition,
];

/// The built-in kind of `api_version` and `kind`, if it is one.
pub(crate) fn find(api_version: &str, kind: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_builtin_resource_has_its_type() {
        for def in crate::resource::builtin_resources() {
            assert!(
                super::find(&def.api.api_version, &def.api.kind).is_some(),
                "{}",
                def.api.kind
            );
        }
    }
}
