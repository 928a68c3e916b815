//! Read-your-writes through the factory against the in-process API server: a write's resource
//! version is waited for, then the lister shows the write.

use k8s_openapi::api::core::v1::ConfigMap;
use kcache_factory::SharedInformerFactory;
use kube_client::Api;
use kube_client::api::PostParams;

use kcache_testkit::{PATIENCE, within};

use crate::{named, server};

#[tokio::test]
async fn wait_for_resource_version_then_the_lister_shows_the_write() {
    let (_server, client) = server().await;
    // A client-side rate limit on the factory's requests does not stop it from syncing.
    let factory = SharedInformerFactory::builder(client.clone())
        .rate_limit(5.0, 10)
        .build();
    let _ = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync_timeout(PATIENCE)
            .await
            .values()
            .all(|synced| *synced)
    );
    let created = Api::<ConfigMap>::namespaced(client, "a")
        .create(&PostParams::default(), &named(Some("a"), "written", &[]))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.unwrap();
    factory
        .wait_for_resource_version::<ConfigMap>(&rv, PATIENCE)
        .await
        .unwrap();
    assert!(factory.has_caught_up_to::<ConfigMap>(&rv));
    let cached = factory.lister::<ConfigMap>().namespace("a").get("written");
    assert!(cached.is_some(), "the cache at {rv} holds the write");
    within("the factory to shut down", factory.shutdown()).await;
}
