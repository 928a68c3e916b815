//! kcache-factory behaviours, end to end against the in-process API server over HTTP.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use kcache_apiserver::{ApiServer, TestServer};
use kcache_factory::SharedInformerFactory;
use kcache_informer::{InformerEvent, SharedIndexInformer};
use kube_client::api::{DeleteParams, PostParams};
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject, GroupVersionKind, Resource};
use serde_json::json;

use kcache_testkit::within;

mod crds;
mod metrics;
mod read_your_writes;

async fn server() -> (TestServer, Client) {
    // The fixture pods name ReplicaSets that do not exist: no garbage collection.
    let server = TestServer::start_with(ApiServer::builder().garbage_collection(false))
        .await
        .unwrap();
    // The namespaces the tests write into (creating in a missing one is 404).
    let client = server.client().unwrap();
    for ns in ["a", "b"] {
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &named(None, ns, &[]))
            .await
            .unwrap();
    }
    (server, client)
}

fn named<K: Resource + Default>(ns: Option<&str>, name: &str, labels: &[(&str, &str)]) -> K {
    let mut obj = K::default();
    let meta = obj.meta_mut();
    meta.name = Some(name.into());
    meta.namespace = ns.map(Into::into);
    meta.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    obj
}

async fn create_cm(client: &Client, ns: &str, name: &str, labels: &[(&str, &str)]) {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &named(Some(ns), name, labels))
        .await
        .unwrap();
}

/// The next add or update the informer's event stream delivers (waiting a bounded time).
async fn next_object<K: Resource + Send + Sync + 'static>(
    events: &mut kcache_informer::EventStream<K>,
) -> Arc<K> {
    loop {
        let event = within("the next informer event", events.next())
            .await
            .unwrap();
        match event {
            InformerEvent::Add { obj, .. } => return obj,
            InformerEvent::Update { new, .. } => return new,
            InformerEvent::Delete(_) => {}
        }
    }
}

fn names<K: Resource + Send + Sync + 'static>(informer: &SharedIndexInformer<K>) -> Vec<String> {
    let mut names: Vec<_> = informer
        .indexer()
        .list()
        .iter()
        .map(|o| o.meta().name.clone().unwrap())
        .collect();
    names.sort();
    names
}

use kcache_store::Store;

#[tokio::test]
async fn one_informer_per_type() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let a = factory.informer::<Pod>();
    let b = factory.informer::<Pod>();
    let _nodes = factory.informer::<Node>();
    assert!(
        Arc::ptr_eq(&a.indexer(), &b.indexer()),
        "the same informer is shared"
    );
    assert_eq!(factory.informer_keys(), ["v1/Node", "v1/Pod"]);
    let _ = factory.lister::<Pod>();
    assert_eq!(
        factory.informer_keys().len(),
        2,
        "a lister reuses the informer"
    );
}

#[tokio::test]
async fn start_starts_only_informers_not_yet_started() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let pods = factory.informer::<Pod>();
    factory.start().unwrap();
    factory.start().unwrap();
    assert_eq!(
        within("the pod informer to sync", factory.wait_for_cache_sync())
            .await
            .into_iter()
            .collect::<Vec<_>>(),
        [("v1/Pod".to_owned(), true)]
    );
    let nodes = factory.informer::<Node>();
    assert!(
        !nodes.has_started(),
        "created after start: not running until the next start"
    );
    factory.start().unwrap();
    let synced = within("the caches to sync", factory.wait_for_cache_sync()).await;
    assert_eq!(
        synced.into_iter().collect::<Vec<_>>(),
        [("v1/Node".to_owned(), true), ("v1/Pod".to_owned(), true)]
    );
    assert!(pods.has_synced() && nodes.has_synced());
    within("the factory to shut down", factory.shutdown()).await;
    assert!(pods.is_stopped() && nodes.is_stopped());
}

#[tokio::test]
async fn wait_for_cache_sync_covers_only_started_informers() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let _pods = factory.informer::<Pod>();
    factory.start().unwrap();
    let _late = factory.informer::<Node>();
    let synced = within("the caches to sync", factory.wait_for_cache_sync()).await;
    assert_eq!(synced.keys().collect::<Vec<_>>(), ["v1/Pod"]);
    assert!(synced["v1/Pod"]);
    within("the factory to shut down", factory.shutdown()).await;
}

#[tokio::test]
async fn shutdown_waits_for_informers_and_is_idempotent() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let pods = factory.informer::<Pod>();
    factory.start().unwrap();
    within("the caches to sync", factory.wait_for_cache_sync()).await;
    within("the factory to shut down", factory.shutdown()).await;
    assert!(
        pods.is_stopped(),
        "shutdown returned only after the informer stopped"
    );
    within("the factory to shut down", factory.shutdown()).await;
    let nodes = factory.informer::<Node>();
    factory.start().unwrap();
    assert!(!nodes.has_started(), "start after shutdown does nothing");
    assert!(
        within("the caches to sync", factory.wait_for_cache_sync())
            .await
            .is_empty()
    );
}

#[test]
fn start_outside_a_runtime_is_an_error() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_server, client) = rt.block_on(server());
    let factory = SharedInformerFactory::new(client);
    let _pods = factory.informer::<Pod>();
    assert!(matches!(
        factory.start(),
        Err(kcache_factory::FactoryError::NoRuntime)
    ));
}

#[tokio::test]
async fn custom_resync_per_type() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::builder(client)
        .default_resync(Duration::from_secs(600))
        .resync_for::<Pod>(Duration::from_secs(30))
        .build();
    assert_eq!(
        factory.informer::<Pod>().resync_check_period(),
        Duration::from_secs(30)
    );
    assert_eq!(
        factory.informer::<Node>().resync_check_period(),
        Duration::from_secs(600)
    );
}

#[tokio::test]
async fn namespace_option_reaches_the_requests() {
    let (_server, client) = server().await;
    create_cm(&client, "a", "in-a", &[]).await;
    create_cm(&client, "b", "in-b", &[]).await;
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace("a")
        .build();
    let cms = factory.informer::<ConfigMap>();
    let nodes = factory.informer::<Node>();
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &named(None, "node-1", &[]))
        .await
        .unwrap();
    factory.start().unwrap();
    assert!(
        within("the caches to sync", factory.wait_for_cache_sync())
            .await
            .values()
            .all(|s| *s)
    );
    assert_eq!(names(&cms), ["in-a"]);
    assert_eq!(
        names(&nodes),
        ["node-1"],
        "cluster-scoped types ignore the namespace"
    );
    let mut events = cms.event_stream().unwrap();
    assert_eq!(
        next_object(&mut events).await.metadata.name.as_deref(),
        Some("in-a"),
        "replayed"
    );
    create_cm(&client, "b", "later-b", &[]).await;
    create_cm(&client, "a", "later-a", &[]).await;
    assert_eq!(
        next_object(&mut events).await.metadata.name.as_deref(),
        Some("later-a")
    );
    within("the factory to shut down", factory.shutdown()).await;
}

#[tokio::test]
async fn tweak_list_options_reach_the_requests() {
    let (_server, client) = server().await;
    create_cm(&client, "a", "selected", &[("team", "x")]).await;
    create_cm(&client, "a", "other", &[("team", "y")]).await;
    let factory = SharedInformerFactory::builder(client)
        .tweak_list_options(|o| o.label_selector = Some("team=x".into()))
        .build();
    let cms = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    within("the caches to sync", factory.wait_for_cache_sync()).await;
    assert_eq!(names(&cms), ["selected"]);
    within("the factory to shut down", factory.shutdown()).await;
}

#[tokio::test]
async fn transform_is_applied_per_type() {
    let (_server, client) = server().await;
    create_cm(&client, "a", "cm", &[("team", "x")]).await;
    let factory = SharedInformerFactory::builder(client)
        .transform_for::<ConfigMap>(Arc::new(|cm: Arc<ConfigMap>| {
            let mut cm = Arc::unwrap_or_clone(cm);
            cm.metadata.labels = None;
            cm.metadata.managed_fields = None;
            Ok(Arc::new(cm))
        }))
        .build();
    let cms = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    within("the caches to sync", factory.wait_for_cache_sync()).await;
    let cm = cms.lister().namespace("a").get("cm").unwrap();
    assert_eq!(cm.metadata.labels, None);
    within("the factory to shut down", factory.shutdown()).await;
}

#[tokio::test]
async fn compact_cache_is_chosen_per_type() {
    let (_server, client) = server().await;
    create_cm(&client, "a", "cm", &[("team", "x")]).await;
    let factory = SharedInformerFactory::builder(client)
        .compact_cache_for::<ConfigMap>()
        .build();
    let cms = factory.informer::<ConfigMap>();
    let pods = factory.informer::<Pod>();
    factory.start().unwrap();
    within("the caches to sync", factory.wait_for_cache_sync()).await;
    assert!(cms.indexer().store().is_compact());
    assert!(!pods.indexer().store().is_compact());
    let cm = cms.lister().namespace("a").get("cm").unwrap();
    assert_eq!(
        cm.metadata.labels,
        Some([("team".to_string(), "x".to_string())].into())
    );
    assert_eq!(names(&cms), ["cm"]);
    within("the factory to shut down", factory.shutdown()).await;
}

#[tokio::test]
async fn drop_managed_fields_transform_caches_objects_without_them() {
    let (server, client) = server().await;
    let pod = kcache_store::testing::pod_json(0, 1, 0);
    server
        .seed([kcache_apiserver::Object::from_value(pod).unwrap()])
        .await
        .unwrap();
    let factory = SharedInformerFactory::builder(client)
        .transform_for::<Pod>(kcache_factory::drop_managed_fields())
        .build();
    let pods = factory.informer::<Pod>();
    factory.start().unwrap();
    within("the caches to sync", factory.wait_for_cache_sync()).await;
    let cached = pods.indexer().list();
    assert_eq!(cached.len(), 1);
    assert_eq!(cached[0].metadata.managed_fields, None);
    let fixture = kcache_store::testing::pod_at(0, 1, 0);
    assert_eq!(cached[0].metadata.labels, fixture.metadata.labels);
    assert_eq!(
        cached[0].metadata.owner_references,
        fixture.metadata.owner_references
    );
    assert_eq!(cached[0].spec, fixture.spec);
    within("the factory to shut down", factory.shutdown()).await;
}

#[tokio::test]
async fn metadata_informer_caches_metadata_only() {
    let (_server, client) = server().await;
    let mut cm: ConfigMap = named(Some("a"), "big", &[("k", "v")]);
    cm.data = Some([("payload".to_string(), "x".repeat(10_000))].into());
    Api::<ConfigMap>::namespaced(client.clone(), "a")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let factory = SharedInformerFactory::new(client);
    let meta = factory.metadata_informer::<ConfigMap>();
    assert_eq!(factory.informer_keys(), ["metadata:v1/ConfigMap"]);
    factory.start().unwrap();
    within("the caches to sync", factory.wait_for_cache_sync()).await;
    let cached = meta.indexer().get_by_key("a/big").unwrap();
    assert_eq!(cached.metadata.labels.as_ref().unwrap()["k"], "v");
    within("the factory to shut down", factory.shutdown()).await;
}

/// A server serving the namespaced custom resource `widgets.example.com/v1` (returned), with a
/// namespace `ns` holding the ConfigMap `first`.
async fn widgets_server() -> (TestServer, Client, ApiResource) {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let server =
        TestServer::start_with(ApiServer::builder().custom_resource(widgets.clone(), true))
            .await
            .unwrap();
    let client = server.client().unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &named(None, "ns", &[]))
        .await
        .unwrap();
    create_cm(&client, "ns", "first", &[]).await;
    (server, client, widgets)
}

#[tokio::test]
async fn typed_and_dynamic_informers_sync_and_follow_changes() {
    let (_server, client, widgets) = widgets_server().await;

    let factory = SharedInformerFactory::new(client.clone());
    let cms = factory.informer::<ConfigMap>();
    let namespaces = factory.informer::<Namespace>();
    let dynamic = factory.dynamic_informer(&widgets, true);
    factory.start().unwrap();
    let synced = within("the caches to sync", factory.wait_for_cache_sync()).await;
    assert_eq!(synced.len(), 3);
    assert!(synced.values().all(|s| *s), "{synced:?}");
    assert_eq!(names(&cms), ["first"]);
    assert!(names(&namespaces).contains(&"ns".to_owned()));

    let mut cm_events = cms.event_stream().unwrap();
    let mut widget_events = dynamic.event_stream().unwrap();
    assert_eq!(
        next_object(&mut cm_events).await.metadata.name.as_deref(),
        Some("first")
    );

    create_cm(&client, "ns", "second", &[]).await;
    assert_eq!(
        next_object(&mut cm_events).await.metadata.name.as_deref(),
        Some("second")
    );

    let api = Api::<DynamicObject>::namespaced_with(client.clone(), "ns", &widgets);
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "ns"}, "spec": {"size": 3}
    }))
    .unwrap();
    api.create(&PostParams::default(), &widget).await.unwrap();
    let seen = next_object(&mut widget_events).await;
    assert_eq!(seen.metadata.name.as_deref(), Some("w1"));
    assert_eq!(seen.data["spec"]["size"], 3);

    Api::<ConfigMap>::namespaced(client, "ns")
        .delete("first", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = loop {
        match within("the ConfigMap deletion", cm_events.next())
            .await
            .unwrap()
        {
            InformerEvent::Delete(d) => break d,
            _ => continue,
        }
    };
    assert_eq!(deleted.object().metadata.name.as_deref(), Some("first"));
    assert_eq!(names(&cms), ["second"]);
    within("the factory to shut down", factory.shutdown()).await;
}

/// An API resource the test server does not serve: every list of it fails with 404.
fn unserved() -> ApiResource {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Missing");
    ApiResource::from_gvk_with_plural(&gvk, "missings")
}

#[tokio::test]
async fn dropping_the_last_factory_handle_stops_its_informers() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let pods = factory.informer::<Pod>();
    let mut events = pods.event_stream().unwrap();
    factory.start().unwrap();
    within("the caches to sync", factory.wait_for_cache_sync()).await;
    let clone = factory.clone();
    drop(factory);
    assert!(!pods.is_stopped(), "a clone still holds the factory");
    drop(clone);
    // The event stream ends when its informer stops.
    while within("the event stream to end", events.next())
        .await
        .is_some()
    {}
    assert!(pods.is_stopped());
}

#[tokio::test]
async fn wait_for_cache_sync_timeout_reports_the_informers_not_synced() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let pods = factory.informer::<Pod>();
    let _missing = factory.dynamic_informer(&unserved(), true);
    factory.start().unwrap();
    // The pod informer syncs first (over TCP: no bound on how soon), so the timeout only decides
    // the informer that never syncs.
    synced_within(&pods, "the pod informer to sync").await;
    let synced = factory
        .wait_for_cache_sync_timeout(Duration::from_millis(300))
        .await;
    assert_eq!(synced.len(), 2);
    assert!(synced["v1/Pod"]);
    assert!(!synced.iter().any(|(k, s)| k.contains("Missing") && *s));
    within("the factory to shut down", factory.shutdown()).await;
}

#[tokio::test]
async fn wait_for_cache_sync_until_returns_when_cancelled() {
    let (_server, client) = server().await;
    let factory = SharedInformerFactory::new(client);
    let _missing = factory.dynamic_informer(&unserved(), true);
    factory.start().unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    let synced = within(
        "the cancelled sync wait to return",
        factory.wait_for_cache_sync_until(&cancel),
    )
    .await;
    assert_eq!(synced.values().collect::<Vec<_>>(), [&false]);
    within("the factory to shut down", factory.shutdown()).await;
}

/// Waits (a bounded time) until `informer` has synced.
async fn synced_within<K: Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
    what: &str,
) {
    let never = tokio_util::sync::CancellationToken::new();
    assert!(
        within(
            what,
            kcache_informer::wait_for_cache_sync(&never, &[informer])
        )
        .await
    );
}

#[derive(Debug, Default)]
struct Pages(parking_lot::Mutex<Vec<(String, usize)>>);

impl kcache_factory::ReflectorMetrics for Pages {
    fn list_page(&self, name: &str, items_so_far: usize, _remaining: Option<i64>) {
        self.0.lock().push((name.to_owned(), items_so_far));
    }
}

#[tokio::test]
async fn factory_passes_reflector_metrics_and_the_watch_error_handler_through() {
    let (_server, client) = server().await;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &named(None, "ns", &[]))
        .await
        .unwrap();
    for name in ["a", "b", "c"] {
        create_cm(&client, "ns", name, &[]).await;
    }
    let pages = Arc::new(Pages::default());
    let (errors_tx, mut errors) = tokio::sync::mpsc::unbounded_channel();
    let factory = SharedInformerFactory::builder(client)
        .reflector(
            kcache_factory::ReflectorConfig::default()
                .backoff(
                    kcache_factory::BackoffConfig::default().initial(Duration::from_millis(100)),
                )
                .page_size(2)
                .metrics(pages.clone())
                .watch_error_handler(move |e| {
                    let _ = errors_tx.send(e.to_string());
                }),
        )
        .build();
    let cms = factory.informer::<ConfigMap>();
    let _missing = factory.dynamic_informer(&unserved(), true);
    factory.start().unwrap();
    let error = within("the watch error of the unserved type", errors.recv())
        .await
        .unwrap();
    assert!(error.contains("Missing"), "{error}");
    synced_within(&cms, "the ConfigMap informer to sync").await;
    let cm_pages: Vec<usize> = pages
        .0
        .lock()
        .iter()
        .filter(|(name, _)| name == "v1/ConfigMap")
        .map(|(_, n)| *n)
        .collect();
    // The first list (RV "0") may be served whole from the watch cache: at least one call,
    // growing, ending at every item.
    assert_eq!(cm_pages.last(), Some(&3), "{cm_pages:?}");
    assert!(cm_pages.windows(2).all(|w| w[0] < w[1]), "{cm_pages:?}");
    within("the factory to shut down", factory.shutdown()).await;
}
