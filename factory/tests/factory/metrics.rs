//! `register_metrics`: every informer of a factory in one registry, with its resource's labels.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kcache_factory::SharedInformerFactory;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use crate::{widgets_server, within};

#[tokio::test]
async fn register_metrics_exports_typed_dynamic_and_metadata_informers_with_their_resource() {
    let (_server, client, widgets) = widgets_server().await;

    // Registered before the informers exist: they are exported as they are created.
    let factory = SharedInformerFactory::new(client);
    let mut registry = Registry::default();
    let _queues = factory.register_metrics(&mut registry);
    let config_maps = factory.informer::<ConfigMap>();
    let _widgets = factory.dynamic_informer(&widgets, true);
    let secrets = factory.metadata_informer::<Secret>();
    factory.start().unwrap();
    assert!(
        within("the caches to sync", factory.wait_for_cache_sync())
            .await
            .values()
            .all(|s| *s)
    );

    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for line in [
        format!(
            "informer_stored_items{{name=\"v1/ConfigMap\",group=\"\",version=\"v1\",resource=\"configmaps\"}} {}",
            config_maps.indexer().len()
        ),
        "informer_stored_items{name=\"example.com/v1/Widget\",group=\"example.com\",version=\"v1\",resource=\"widgets\"} 0".to_owned(),
        format!(
            "informer_stored_items{{name=\"metadata:v1/Secret\",group=\"\",version=\"v1\",resource=\"secrets\"}} {}",
            secrets.indexer().len()
        ),
        format!(
            "informer_store_resource_version{{name=\"v1/ConfigMap\",group=\"\",version=\"v1\",resource=\"configmaps\"}} {}",
            config_maps.last_sync_resource_version()
        ),
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    }
    within("the factory to shut down", factory.shutdown()).await;
}
