//! The names the factory keys its informers by.

use kube_core::{ApiResource, Resource};

/// `apiVersion/Kind` of a typed resource, e.g. `v1/Pod` or `apps/v1/Deployment`.
pub(crate) fn typed<K: Resource<DynamicType = ()>>() -> String {
    format!("{}/{}", K::api_version(&()), K::kind(&()))
}

/// The key of a metadata-only informer of `K`.
pub(crate) fn metadata<K: Resource<DynamicType = ()>>() -> String {
    format!("metadata:{}", typed::<K>())
}

/// `apiVersion/Kind` of a dynamic resource.
pub(crate) fn dynamic(resource: &ApiResource) -> String {
    format!("{}/{}", resource.api_version, resource.kind)
}
