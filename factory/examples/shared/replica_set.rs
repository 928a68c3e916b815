//! What both sample controllers (`controller.rs` on kcache, `controller_kube_runtime.rs`) share:
//! the pods a ReplicaSet should own.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_client::ResourceExt;

/// Whether `pod` is one of `<rs>-0` … `<rs>-<want-1>`.
pub(crate) fn is_wanted(pod: &str, rs: &str, want: usize) -> bool {
    let index = pod.strip_prefix(rs).and_then(|s| s.strip_prefix('-'));
    index
        .and_then(|i| i.parse::<usize>().ok())
        .is_some_and(|i| i < want)
}

/// The pod `name` of `rs`: its template, owned by it.
pub(crate) fn pod_for(rs: &ReplicaSet, name: String) -> Pod {
    let template = rs.spec.template.clone();
    let mut pod = Pod {
        metadata: template
            .as_ref()
            .and_then(|t| t.metadata.clone())
            .unwrap_or_default(),
        spec: template.and_then(|t| t.spec),
        ..Pod::default()
    };
    pod.metadata.name = Some(name);
    pod.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: rs.name_any(),
        uid: rs.uid().unwrap_or_default(),
        controller: Some(true),
        ..OwnerReference::default()
    }]);
    pod
}
