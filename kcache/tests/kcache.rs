//! The facade end to end: the README's quick start against the in-process API server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kcache::k8s_openapi::api::core::v1::ConfigMap;
use kcache::kube_client::Api;
use kcache::kube_client::api::PostParams;
use kcache::prelude::*;

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
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));

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
    workers.await;
    assert_eq!(found.load(Ordering::SeqCst), 3);
    factory.shutdown().await;
}
