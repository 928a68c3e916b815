//! The controllers the server runs inside itself, as kube-controller-manager (and the
//! apiextensions-apiserver) would beside a real API server: the garbage collector (gc.rs), the
//! namespace controller (namespace.rs), the stand-in for the kubelet that removes pods whose
//! grace period is over (in gc.rs), and the CustomResourceDefinition controller (crd.rs: serves
//! what CRDs declare, Kubernetes' establishing, naming and finalizer controllers).
//!
//! They watch through the server's own watch caches (no polling of storage) and write through
//! the registry's write path; [`spawn`] starts them all with the server and its shutdown stops
//! them. The garbage collector and namespace controller are one task that wakes whenever a
//! cache moves or the served set changes (a CRD adds a cache), takes a consistent snapshot of
//! every cache served at that moment at the storage's current revision (snapshot.rs), decides
//! what to do from it and writes; after a pass with nothing to do, changes that cannot concern
//! them (no object added or deleted, no deletion, finalizer, owner reference or namespace
//! changed: `WatchCache::lifecycle_version`) only move the idle revision, without a snapshot.
//! A pass that has nothing to do marks the revision it saw as
//! idle (`ApiServer::wait_controllers_idle`); each pass logs its duration and actions
//! (`tracing` target `kcache_apiserver::controllers`), so their lag is visible. The CRD
//! controller is its own task, fed by a watch on the CRDs' cache.

use std::sync::Arc;
use std::time::Duration;

use futures::future::select_all;
use kube_core::Resource;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::ApiError;
use crate::object::Object;
use crate::shared::Shared;

mod action;
mod crd;
mod gc;
mod namespace;
pub(crate) mod progress;
mod snapshot;

use snapshot::Snapshot;

/// How long the controllers wait before retrying after a failed write.
const RETRY: Duration = Duration::from_secs(1);

/// Starts the controllers (stopped by the server's shutdown); the CRD controller first creates
/// the `crds` registered with the builder.
pub(crate) fn spawn(shared: &Arc<Shared>, crds: Vec<serde_json::Value>) {
    crd::spawn(shared, crds);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let stop = shared.shutdown.clone();
        tokio::select! {
            () = stop.cancelled() => {}
            () = run(&shared) => {}
        }
    });
}

async fn run(shared: &Arc<Shared>) {
    let mut served_changes = shared.served_changes.subscribe();
    // The last full pass that had nothing to do, while nothing it read has changed since in a
    // way that could concern the controllers; `None` after a pass with actions or an error.
    let mut idle_at: Option<progress::Idle> = None;
    let mut wake: Option<Instant> = None;
    loop {
        // The caches served now (a CRD may have added or removed some since the last pass),
        // each marked seen before the pass reads it.
        let served = *served_changes.borrow_and_update();
        let mut changes: Vec<watch::Receiver<u64>> =
            shared.served().caches().map(|c| c.subscribe()).collect();
        for rx in &mut changes {
            rx.borrow_and_update();
        }
        let due = wake.is_some_and(|at| at <= Instant::now());
        let quiet = match idle_at {
            Some(idle) if !due && idle.served == served => quiet_pass(shared, idle).await,
            _ => Ok(None),
        };
        match quiet {
            Ok(Some(revision)) => shared
                .controllers
                .mark_idle(progress::Idle { revision, served }),
            Ok(None) | Err(_) => {
                let started = std::time::Instant::now();
                (idle_at, wake) = match pass(shared).await {
                    Ok((revision, actions, next)) => {
                        tracing::debug!(
                            target: "kcache_apiserver::controllers",
                            revision,
                            actions,
                            elapsed_ms = started.elapsed().as_millis(),
                            "controllers pass"
                        );
                        let idle = (actions == 0).then_some(progress::Idle { revision, served });
                        if let Some(idle) = idle {
                            shared.controllers.mark_idle(idle);
                        }
                        (idle, next)
                    }
                    Err(error) => {
                        tracing::warn!(
                            target: "kcache_apiserver::controllers",
                            error = &error as &dyn std::error::Error,
                            "controllers pass failed"
                        );
                        (None, Some(Instant::now() + RETRY))
                    }
                };
            }
        }
        let changed = select_all(
            changes
                .iter_mut()
                .chain(std::iter::once(&mut served_changes))
                .map(|rx| Box::pin(rx.changed())),
        );
        match wake {
            Some(at) => {
                tokio::select! {
                    _ = changed => {}
                    () = tokio::time::sleep_until(at) => {}
                }
            }
            None => {
                let _ = changed.await;
            }
        }
    }
}

/// A pass that reads no cache: when every cache has reached the storage's current revision
/// and none has had a change that may concern the controllers (an object added or deleted, a
/// namespace, deletion, finalizers, owner references: `WatchCache::lifecycle_version`) since
/// the full pass `idle` that had nothing to do, there is still nothing to do, and the revision
/// is idle. `None` when a full pass is needed. Under a stream of plain updates (a controller
/// writing status, a benchmark's annotations) this keeps the controllers from copying every
/// cache per write.
async fn quiet_pass(shared: &Shared, idle: progress::Idle) -> Result<Option<u64>, ApiError> {
    let revision = shared
        .storage
        .revision()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    for cache in shared.served().caches() {
        cache.wait_fresh(revision).await?;
        if cache.lifecycle_version() > idle.revision {
            return Ok(None);
        }
    }
    Ok(Some(revision))
}

/// One pass: the snapshot, the actions of every controller, their writes. Returns the
/// revision seen, the number of actions and when to wake up at the latest.
async fn pass(shared: &Arc<Shared>) -> Result<(u64, usize, Option<Instant>), ApiError> {
    let snapshot = Snapshot::take(shared).await?;
    let mut actions = Vec::new();
    let wake = gc::decide(shared, &snapshot, &mut actions).await?;
    namespace::decide(&snapshot, &mut actions);
    let count = actions.len();
    let mut failed = false;
    for action in actions {
        if let Err(error) = action.run(shared).await
            && error.code != 404
            && error.code != 409
        {
            tracing::warn!(
                target: "kcache_apiserver::controllers",
                error = &error as &dyn std::error::Error,
                "controller write failed"
            );
            failed = true;
        }
    }
    let wake = if failed {
        Some(Instant::now() + RETRY)
    } else {
        wake
    };
    Ok((snapshot.revision, count, wake))
}

/// Whether `obj` carries `finalizer`.
fn has_finalizer(obj: &Object, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}
