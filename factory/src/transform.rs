//! Ready-made transforms for [`SharedInformerFactoryBuilder::transform_for`](crate::SharedInformerFactoryBuilder::transform_for).

use std::sync::Arc;

use kcache_store::TransformFunc;
use kube_core::Resource;

/// A transform that drops `metadata.managedFields` before an object is cached.
///
/// Server-side apply bookkeeping is most of a real object's metadata, decodes into many small
/// JSON values, and controllers rarely read it. Decoded objects reach the
/// transform unshared, so dropping the field copies nothing; an object that has none (already
/// transformed, for example one a relist reuses) is returned as it is.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_factory::{SharedInformerFactory, drop_managed_fields};
///
/// # fn build(client: kube_client::Client) {
/// let factory = SharedInformerFactory::builder(client)
///     .transform_for::<Pod>(drop_managed_fields())
///     .build();
/// # }
/// let mut pod = Pod::default();
/// pod.metadata.managed_fields = Some(vec![Default::default()]);
/// let cached = drop_managed_fields()(Arc::new(pod)).unwrap();
/// assert_eq!(cached.metadata.managed_fields, None);
/// ```
pub fn drop_managed_fields<K: Resource + Clone + Send + Sync + 'static>() -> TransformFunc<K> {
    Arc::new(|mut obj: Arc<K>| {
        if obj.meta().managed_fields.is_some() {
            Arc::make_mut(&mut obj).meta_mut().managed_fields = None;
        }
        Ok(obj)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kcache_store::testing;

    #[test]
    fn drop_managed_fields_removes_them_without_copying_an_unshared_object() {
        let pod = Arc::new(testing::pod(1, 3));
        assert!(pod.metadata.managed_fields.is_some());
        let before = Arc::as_ptr(&pod);
        let Ok(out) = drop_managed_fields::<Pod>()(pod) else {
            unreachable!("the transform never fails")
        };
        assert_eq!(out.metadata.managed_fields, None);
        assert_eq!(Arc::as_ptr(&out), before);
        assert_eq!(out.metadata.name, testing::pod(1, 3).metadata.name);
    }

    #[test]
    fn drop_managed_fields_returns_an_object_without_them_as_it_is() {
        let mut pod = testing::pod(2, 3);
        pod.metadata.managed_fields = None;
        let pod = Arc::new(pod);
        let shared = Arc::clone(&pod);
        let Ok(out) = drop_managed_fields::<Pod>()(pod) else {
            unreachable!("the transform never fails")
        };
        assert!(Arc::ptr_eq(&out, &shared));
    }
}
