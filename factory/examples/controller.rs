//! A ReplicaSet controller in the style of Kubernetes' sample-controller, on kcache.
//!
//! ```sh
//! cargo run -p kcache-factory --example controller   # against the cluster of your kubeconfig
//! ```
//!
//! For every ReplicaSet it keeps pods `<name>-0` … `<name>-<replicas-1>` (owned by the
//! ReplicaSet, found through an owner index), deletes the others it owns, and writes
//! `status.replicas`. ReplicaSet events enqueue the ReplicaSet's key, pod events their owner's;
//! four workers reconcile with rate-limited retries; Ctrl-C drains the queue and shuts down.
//! Read-your-writes (client-go 1.36's consistency check): the controller remembers the resource
//! version of its last pod write per ReplicaSet and, until the pod informer has caught up with
//! it, requeues the key as stale instead of counting pods from a cache that misses its own
//! writes (which would create them twice).
//! With `METRICS_ADDR=127.0.0.1:9090` it serves the informers' and the queue's Prometheus
//! metrics on `http://127.0.0.1:9090/metrics`.
//! `examples/controller_kube_runtime.rs` is the same controller on kube-runtime.

use std::collections::HashMap;
use std::error::Error;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kcache_factory::SharedInformerFactory;
use kcache_informer::EnqueueHandler;
use kcache_store::{Lister, OWNER_INDEX, owner_index_func, owner_index_value};
use kcache_workqueue::{WorkQueue, WorkQueueConfig};
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube_client::{Api, Client, ResourceExt};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[path = "shared/replica_set.rs"]
mod replica_set;
use replica_set::{is_wanted, pod_for};
#[path = "shared/metrics.rs"]
mod metrics;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let client = Client::try_default().await?;
    let factory = SharedInformerFactory::new(client.clone());
    let (replica_sets, pods) = (factory.informer::<ReplicaSet>(), factory.informer::<Pod>());
    pods.add_index(OWNER_INDEX, owner_index_func())?;
    // Metrics: the factory's informers and the queue, in one registry.
    let mut registry = Registry::default();
    let queue_metrics = Arc::new(factory.register_metrics(&mut registry));
    let queue = WorkQueue::<String>::with_config(
        WorkQueueConfig::default()
            .name("replicasets")
            .metrics(queue_metrics),
    );
    let stop_metrics = CancellationToken::new();
    if let Ok(addr) = std::env::var("METRICS_ADDR") {
        let served = metrics::serve_metrics(addr.parse()?, registry, stop_metrics.clone()).await?;
        println!("metrics at http://{served}/metrics");
    }
    replica_sets.add_event_handler(EnqueueHandler::key(queue.clone()))?;
    pods.add_event_handler(EnqueueHandler::owner(queue.clone(), "ReplicaSet"))?;
    factory.start()?;
    factory.wait_for_cache_sync().await;
    let pod_informer = pods.clone();
    let (replica_sets, pods) = (replica_sets.lister(), pods.lister());
    // Per ReplicaSet key, the resource version of the controller's last pod write.
    let written = Arc::new(Mutex::new(HashMap::<String, String>::new()));
    let stale_queue = queue.clone();
    let reconcile = move |key: String| {
        let wrote = written.lock().get(&key).cloned();
        let caught_up = wrote.is_none_or(|rv| pod_informer.has_caught_up_to(&rv));
        let rs = replica_sets.get_by_key(&key);
        let (client, pods, written) = (client.clone(), pods.clone(), Arc::clone(&written));
        let queue = stale_queue.clone();
        async move {
            if !caught_up {
                queue.requeue_stale(key); // the pod cache misses our writes: look again later
                return Ok(());
            }
            if let Some(rv) = reconcile(client, rs, pods).await? {
                written.lock().insert(key, rv);
            }
            Ok::<(), Box<dyn Error + Send + Sync>>(())
        }
    };
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    queue.run_workers_until(ctrl_c, 4, reconcile).await;
    factory.shutdown().await;
    stop_metrics.cancel();
    println!("shut down cleanly");
    Ok(())
}

/// Makes the pods of `rs` match its spec and records the count in its status. Returns the
/// resource version of its last pod write, if it wrote a pod.
async fn reconcile(
    client: Client,
    rs: Option<Arc<ReplicaSet>>,
    pods: Lister<Pod>,
) -> Result<Option<String>, Box<dyn Error + Send + Sync>> {
    let Some(rs) = rs else {
        return Ok(None); // deleted: the garbage collector removes its pods
    };
    let mut last_write = None;
    let (ns, name) = (&rs.namespace().unwrap_or_default(), &rs.name_any());
    let want = rs.spec.replicas.unwrap_or(1).max(0) as usize;
    let owned = pods
        .namespace(ns)
        .by_index(OWNER_INDEX, &owner_index_value("ReplicaSet", ns, name))?;
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    for i in 0..want {
        let pod_name = format!("{name}-{i}");
        if !owned.iter().any(|p| p.name_any() == pod_name) {
            let created = api
                .create(&PostParams::default(), &pod_for(&rs, pod_name))
                .await?;
            last_write = created.resource_version().or(last_write);
        }
    }
    for pod in owned
        .iter()
        .filter(|p| !is_wanted(&p.name_any(), name, want))
    {
        let deleted = api
            .delete(&pod.name_any(), &DeleteParams::default())
            .await?;
        if let Some(rv) = deleted.left().and_then(|pod| pod.resource_version()) {
            last_write = Some(rv);
        }
    }
    let status = Patch::Merge(json!({"status": {"replicas": want}}));
    Api::<ReplicaSet>::namespaced(client, ns)
        .patch_status(name, &PatchParams::default(), &status)
        .await?;
    Ok(last_write)
}
