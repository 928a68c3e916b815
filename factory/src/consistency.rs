//! Read-your-writes through the factory (client-go 1.36, KEP-5647): the typed informer's
//! consistency check, by type.

use std::time::Duration;

use kcache_informer::InformerError;

use crate::factory::{SharedInformerFactory, TypedResource};

impl SharedInformerFactory {
    /// Whether the informer of `K` has caught up with `resource_version`, the version a write
    /// of a `K` returned ([`SharedIndexInformer::has_caught_up_to`](kcache_informer::SharedIndexInformer::has_caught_up_to)).
    /// The informer is created if it was not (and is then behind until the factory starts it).
    pub fn has_caught_up_to<K: TypedResource>(&self, resource_version: &str) -> bool {
        self.informer::<K>().has_caught_up_to(resource_version)
    }

    /// Waits, at most `timeout`, until the informer of `K` has caught up with
    /// `resource_version` ([`SharedIndexInformer::wait_for_resource_version`](kcache_informer::SharedIndexInformer::wait_for_resource_version)).
    ///
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # async fn f(factory: kcache_factory::SharedInformerFactory, created: Pod) -> Result<(), kcache_informer::InformerError> {
    /// let rv = created.metadata.resource_version.unwrap_or_default();
    /// factory.wait_for_resource_version::<Pod>(&rv, std::time::Duration::from_secs(5)).await?;
    /// // The pod lister now shows the created pod (or something newer).
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_resource_version<K: TypedResource>(
        &self,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<(), InformerError> {
        self.informer::<K>()
            .wait_for_resource_version(resource_version, timeout)
            .await
    }
}
