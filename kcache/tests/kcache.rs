//! The facade end to end: the README's quick start against the in-process API server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kcache::k8s_openapi::api::core::v1::ConfigMap;
use kcache::kube_client::Api;
use kcache::kube_client::api::PostParams;
use kcache::prelude::*;
use kcache_testkit::within;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_start_through_the_facade_reconciles_every_object() {
    let server = kcache_apiserver::TestServer::start().await.unwrap();
    let client = server.client().unwrap();
    // The server starts with the `default` namespace.
    for name in ["a", "b", "c"] {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        Api::<ConfigMap>::namespaced(client.clone(), "default")
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }

    let factory = SharedInformerFactory::new(client);
    let config_maps = factory.informer::<ConfigMap>();
    let queue = WorkQueue::<String>::new();
    config_maps
        .add_event_handler(EnqueueHandler::key(queue.clone()))
        .unwrap();
    factory.start().unwrap();
    assert!(
        within("the caches to sync", factory.wait_for_cache_sync())
            .await
            .values()
            .all(|s| *s)
    );

    let lister = config_maps.lister();
    let found = Arc::new(AtomicUsize::new(0));
    let workers = queue.run_workers(2, {
        let (queue, found) = (queue.clone(), found.clone());
        move |key: String| {
            let exists = lister.indexer().get_by_key(&key).is_some();
            let (queue, found) = (queue.clone(), found.clone());
            async move {
                if exists && found.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                    queue.shut_down();
                }
                Ok::<(), std::convert::Infallible>(())
            }
        }
    });
    within("the workers to reconcile all three", workers).await;
    assert_eq!(found.load(Ordering::SeqCst), 3);
    within("the factory to shut down", factory.shutdown()).await;
}

/// The controller skeleton of the README: leader election gates the workers, the factory's
/// informers and the work queue export their metrics, the reconciler records an Event.
#[cfg(all(feature = "leaderelection", feature = "events", feature = "prometheus"))]
#[tokio::test]
async fn a_leader_runs_the_workers_which_record_events_and_export_informer_and_queue_metrics() {
    use kcache::k8s_openapi::api::core::v1::ObjectReference;
    use kcache::prometheus_client::{encoding::text::encode, registry::Registry};
    use kcache::workqueue::WorkQueueConfig;
    use kcache_apiserver::TestServer;
    use tokio_util::sync::CancellationToken;

    let server = TestServer::start().await.unwrap();
    let client = server.client().unwrap();
    let factory = SharedInformerFactory::new(client.clone());
    let config_maps = factory.informer::<ConfigMap>();
    let mut registry = Registry::default();
    let metrics = factory.register_metrics(&mut registry);
    factory.start().unwrap();
    assert!(
        within("the caches to sync", factory.wait_for_cache_sync())
            .await
            .values()
            .all(|s| *s)
    );
    let queue = WorkQueue::<String>::with_config(
        WorkQueueConfig::default()
            .name("configmaps")
            .metrics(Arc::new(metrics)),
    );
    let broadcaster = EventBroadcaster::new(client.clone());
    let recorder = broadcaster.recorder("example.com/skeleton", "skeleton-0");

    let elector = LeaderElector::new(
        client,
        "default",
        "skeleton",
        "skeleton-0",
        LeaderElectionConfig::default(),
    )
    .unwrap();
    let shutdown = CancellationToken::new();
    let (leading_tx, mut leading_rx) = tokio::sync::mpsc::unbounded_channel();
    let campaign = tokio::spawn(elector.run(shutdown.clone(), move |event| {
        if let LeaderEvent::StartedLeading(leading) = event {
            let _ = leading_tx.send(leading);
        }
    }));
    let leading = within("the lead", leading_rx.recv()).await.unwrap();

    queue.add("default/settings".to_owned());
    let workers = queue.run_workers_until(leading.clone().cancelled_owned(), 1, {
        move |key: String| {
            let regarding = ObjectReference {
                kind: Some("ConfigMap".into()),
                namespace: Some("default".into()),
                name: key.split('/').nth(1).map(str::to_owned),
                ..ObjectReference::default()
            };
            recorder.event(
                &regarding,
                None,
                EventType::Normal,
                "Synced",
                "Reconcile",
                "done",
            );
            shutdown.cancel();
            async { Ok::<(), std::convert::Infallible>(()) }
        }
    });
    within("the workers to stop", workers).await;
    within("the campaign to end", campaign).await.unwrap();
    assert!(leading.is_cancelled());
    within("the broadcaster to shut down", broadcaster.shutdown()).await;

    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("workqueue_adds_total{name=\"configmaps\"} 1"),
        "{text}"
    );
    let cached = config_maps.indexer().len();
    assert!(
        text.contains(&format!(
            "informer_stored_items{{name=\"v1/ConfigMap\",group=\"\",version=\"v1\",resource=\"configmaps\"}} {cached}"
        )),
        "{text}"
    );
    within("the factory to shut down", factory.shutdown()).await;
    let events: Api<kcache::k8s_openapi::api::events::v1::Event> =
        Api::namespaced(server.client().unwrap(), "default");
    let written = events.list(&Default::default()).await.unwrap();
    assert_eq!(written.items.len(), 1);
}
