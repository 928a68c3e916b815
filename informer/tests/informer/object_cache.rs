//! The watch-based object cache against the reflector's fake source.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kcache_informer::{ObjectCache, ObjectCacheError};
use kcache_reflector::ListerWatcher;
use kcache_reflector::testing::FakeControllerSource;
use kcache_testkit::within;

fn config_map(name: &str, immutable: bool) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("default".into());
    cm.metadata.name = Some(name.into());
    cm.immutable = immutable.then_some(true);
    cm
}

fn cache(source: &Arc<FakeControllerSource<ConfigMap>>) -> ObjectCache<ConfigMap> {
    let source = Arc::clone(source);
    ObjectCache::new("configmaps", move |_ns: &str| {
        Arc::clone(&source) as Arc<dyn ListerWatcher<ConfigMap>>
    })
    .immutable_when(|cm: &ConfigMap| cm.immutable == Some(true))
    .sync_timeout(Duration::from_millis(200))
}

#[tokio::test(start_paused = true)]
async fn object_cache_watches_one_object_by_name() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(config_map("settings", false));
    let cache = cache(&source);
    cache.add_reference("default", "settings", "pod-a").unwrap();
    assert!(cache.get("default", "settings").await.is_ok());
    let selectors: Vec<_> = source
        .list_calls()
        .into_iter()
        .map(|o| o.field_selector)
        .collect();
    assert_eq!(selectors, vec![Some("metadata.name=settings".to_string())]);
    within("the object cache to shut down", cache.shutdown()).await;
}

#[tokio::test(start_paused = true)]
async fn object_cache_get_times_out_when_the_store_cannot_sync() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(config_map("settings", false));
    source.fail_next_list(kcache_reflector::ListWatchError::Connection(
        "refused".into(),
    ));
    let cache = cache(&source);
    cache.add_reference("default", "settings", "pod-a").unwrap();
    assert!(matches!(
        cache.get("default", "settings").await,
        Err(ObjectCacheError::SyncTimeout { .. })
    ));
    within("the object cache to shut down", cache.shutdown()).await;
}

#[tokio::test(start_paused = true)]
async fn object_cache_stops_watching_immutable_objects_and_counts_references() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(config_map("frozen", true));
    let cache = cache(&source);
    cache.add_reference("default", "frozen", "pod-a").unwrap();
    cache.add_reference("default", "frozen", "pod-a").unwrap();
    assert!(cache.is_watching("default", "frozen"));
    assert_eq!(
        cache.get("default", "frozen").await.unwrap().immutable,
        Some(true)
    );
    assert!(!cache.is_watching("default", "frozen"));
    // Still served from the store.
    assert!(cache.get("default", "frozen").await.is_ok());
    cache.delete_reference("default", "frozen", "pod-a");
    assert_eq!(cache.len(), 1, "pod-a holds two references");
    cache.delete_reference("default", "frozen", "pod-a");
    assert!(cache.is_empty());
    assert!(matches!(
        cache.get("default", "frozen").await,
        Err(ObjectCacheError::NotRegistered { .. })
    ));
    within("the object cache to shut down", cache.shutdown()).await;
}

#[test]
fn object_cache_add_reference_outside_a_runtime_is_an_error() {
    let source = Arc::new(FakeControllerSource::new());
    let cache = cache(&source);
    assert!(matches!(
        cache.add_reference("default", "x", "pod"),
        Err(ObjectCacheError::NoRuntime { .. })
    ));
}
