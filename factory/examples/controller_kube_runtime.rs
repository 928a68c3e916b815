//! The ReplicaSet controller of `examples/controller.rs`, written with kube-runtime 5 for
//! comparison (the "coming from kube-runtime" section of the README counts both).
//!
//! Like the kcache version it reads owned pods from a local cache, not from the API server: a
//! kube-runtime reflector store of pods, scanned by owner uid (kube-runtime stores have no
//! indexes), next to the controller's own pod watch for `owns` (stable kube-runtime cannot share
//! one watch between a store and a controller's triggers).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube_client::{Api, Client, ResourceExt};
use kube_runtime::controller::{Action, Config, Controller};
use kube_runtime::reflector::{self, Store};
use kube_runtime::{WatchStreamExt, watcher};
use serde_json::json;

#[path = "shared/replica_set.rs"]
mod replica_set;
use replica_set::{is_wanted, pod_for};

/// What every reconcile gets.
struct Context {
    client: Client,
    pods: Store<Pod>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::try_default().await?;
    let (pods, writer) = reflector::store::<Pod>();
    let pod_watch = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default());
    tokio::spawn(
        pod_watch
            .default_backoff()
            .reflect(writer)
            .for_each(|_| async {}),
    );
    pods.wait_until_ready().await?;
    let replica_sets = Api::<ReplicaSet>::all(client.clone());
    Controller::new(replica_sets, watcher::Config::default())
        .owns(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .with_config(Config::default().concurrency(4))
        .graceful_shutdown_on(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .run(reconcile, error_policy, Arc::new(Context { client, pods }))
        .for_each(|_| async {})
        .await;
    println!("shut down cleanly");
    Ok(())
}

/// Makes the pods of `rs` match its spec and records the count in its status.
async fn reconcile(rs: Arc<ReplicaSet>, ctx: Arc<Context>) -> Result<Action, kube_client::Error> {
    let (ns, name) = (rs.namespace().unwrap_or_default(), rs.name_any());
    let want = rs.spec.replicas.unwrap_or(1).max(0) as usize;
    let uid = rs.uid().unwrap_or_default();
    let owned = ctx.pods.state_filter(|p| {
        p.namespace().as_deref() == Some(ns.as_str())
            && p.owner_references().iter().any(|o| o.uid == uid)
    });
    let api = Api::<Pod>::namespaced(ctx.client.clone(), &ns);
    for i in 0..want {
        let pod_name = format!("{name}-{i}");
        if !owned.iter().any(|p| p.name_any() == pod_name) {
            api.create(&PostParams::default(), &pod_for(&rs, pod_name))
                .await?;
        }
    }
    for pod in owned
        .iter()
        .filter(|p| !is_wanted(&p.name_any(), &name, want))
    {
        api.delete(&pod.name_any(), &DeleteParams::default())
            .await?;
    }
    let status = Patch::Merge(json!({"status": {"replicas": want}}));
    Api::<ReplicaSet>::namespaced(ctx.client.clone(), &ns)
        .patch_status(&name, &PatchParams::default(), &status)
        .await?;
    Ok(Action::await_change())
}

/// Retries a failed reconcile after a fixed delay (kube-runtime has no per-key rate limiter).
fn error_policy(_rs: Arc<ReplicaSet>, error: &kube_client::Error, _: Arc<Context>) -> Action {
    eprintln!("reconcile failed: {error}");
    Action::requeue(Duration::from_secs(5))
}
