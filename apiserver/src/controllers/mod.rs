//! The controllers the server runs inside itself, as kube-controller-manager (and the
//! apiextensions-apiserver) would beside a real API server: the garbage collector (gc.rs), the
//! namespace controller (namespace.rs), the stand-in for the kubelet that removes pods whose
//! grace period is over (in gc.rs), and the CustomResourceDefinition controller (crd.rs: serves
//! what CRDs declare, Kubernetes' establishing, naming and finalizer controllers).
//!
//! They watch through the server's own watch caches (no polling of storage) and write through
//! the registry's write path; [`spawn`] starts them all with the server and its shutdown stops
//! them. The garbage collector, the pod reaper and the namespace controller are one task built
//! as Kubernetes' garbage collector: a graph of every served object by uid with its owner
//! references and namespace (graph.rs), kept up to date from a lifecycle subscription to each
//! served cache (feed.rs: only the changes that may concern an object's lifecycle, subscribed
//! again with the cache's state when the served set changes or a subscription ends). Each
//! change marks dirty what it can concern (the object, its owners being deleted, its dependents,
//! its terminating namespace) in a work queue (queue.rs), and the task decides about and writes
//! for one dirty object at a time; a create of an object without owners in an active namespace
//! costs a graph insert. The grace period of a pod and the retry of a failed write are timers
//! of the queue. `ApiServer::wait_controllers_idle` asks for a revision (progress.rs): when
//! the queue is empty and no retry waits, the task waits for every cache to reach it, applies
//! what they sent, and marks it idle if that left nothing to do. Each object processed logs
//! its actions and duration (`tracing` target `kcache_apiserver::controllers`), so their lag
//! is visible. The CRD controller is its own task, fed by a watch on the CRDs' cache.

use std::sync::Arc;
use std::time::Duration;

use kube_core::Resource;
use tokio::time::Instant;

use crate::deletion::is_namespace;
use crate::error::ApiError;
use crate::object::Object;
use crate::shared::Shared;

mod action;
mod crd;
mod feed;
mod gc;
mod graph;
mod namespace;
pub(crate) mod progress;
mod queue;
#[cfg(test)]
mod tests;

use action::Action;
use feed::Feed;
use graph::{Entry, Graph};
use queue::{Later, Queue};

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

/// The graph, its feed and the work queue.
struct State {
    feed: Feed,
    graph: Graph,
    queue: Queue,
}

async fn run(shared: &Arc<Shared>) {
    let mut served_changes = shared.served_changes.subscribe();
    let mut wanted = shared.controllers.wanted();
    let mut state = State {
        feed: Feed::default(),
        graph: Graph::default(),
        queue: Queue::default(),
    };
    let mut first = true;
    // When to check idleness again after a cache did not reach the wanted revision in time.
    let mut recheck: Option<Instant> = None;
    loop {
        // Compared by value: `changed()` below marks a new version seen.
        let version = *served_changes.borrow_and_update();
        if first || version != state.feed.served {
            first = false;
            let State { feed, graph, queue } = &mut state;
            feed.sync(shared, version, graph, queue);
        }
        state.drain();
        state.queue.add_due(Instant::now());
        if let Some(key) = state.queue.pop() {
            state.process(shared, key).await;
            continue;
        }
        let want = *wanted.borrow_and_update();
        if !state.queue.busy()
            && !shared.controllers.idle().covers(want)
            && recheck.is_none_or(|at| at <= Instant::now())
        {
            recheck = None;
            match state.feed.wait_fresh(want.revision).await {
                Ok(()) => {
                    state.drain();
                    if !state.queue.busy() && *served_changes.borrow() == state.feed.served {
                        shared.controllers.mark_idle(progress::Idle {
                            revision: want.revision,
                            served: state.feed.served,
                        });
                        tracing::debug!(
                            target: "kcache_apiserver::controllers",
                            revision = want.revision,
                            served = state.feed.served,
                            "controllers idle"
                        );
                    }
                }
                Err(error) => {
                    tracing::warn!(
                        target: "kcache_apiserver::controllers",
                        error = &error as &dyn std::error::Error,
                        "a cache did not reach the revision the controllers were asked for"
                    );
                    recheck = Some(Instant::now() + RETRY);
                }
            }
            continue;
        }
        let due = [state.queue.next_due(), recheck]
            .into_iter()
            .flatten()
            .min();
        let sleep = async {
            match due {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = state.feed.changed() => {}
            _ = served_changes.changed() => {}
            _ = wanted.changed() => {}
            () = sleep => {}
        }
    }
}

impl State {
    /// Applies what the caches have sent.
    fn drain(&mut self) {
        self.feed.drain(&mut self.graph, &mut self.queue);
    }

    /// Decides about the object with `key` and writes what it needs; a failure retries it
    /// later.
    async fn process(&mut self, shared: &Shared, key: Arc<str>) {
        let Some(entry) = self.graph.get(&key).cloned() else {
            return;
        };
        let started = std::time::Instant::now();
        let mut actions = Vec::new();
        match examine(shared, &self.graph, &entry, &mut actions).await {
            Ok(Some(grace_end)) => self.queue.add_at(grace_end, &key, Later::Grace),
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(
                    target: "kcache_apiserver::controllers",
                    %key,
                    error = &error as &dyn std::error::Error,
                    "controller read failed"
                );
                self.queue
                    .add_at(Instant::now() + RETRY, &key, Later::Retry);
                return;
            }
        }
        let count = actions.len();
        let mut failed = false;
        for action in actions {
            if let Err(error) = action.run(shared).await
                && error.code != 404
                && error.code != 409
            {
                tracing::warn!(
                    target: "kcache_apiserver::controllers",
                    %key,
                    error = &error as &dyn std::error::Error,
                    "controller write failed"
                );
                failed = true;
            }
            // What the writes changed comes back through the caches.
            self.drain();
        }
        if failed {
            self.queue
                .add_at(Instant::now() + RETRY, &key, Later::Retry);
        }
        tracing::debug!(
            target: "kcache_apiserver::controllers",
            %key,
            actions = count,
            elapsed_us = started.elapsed().as_micros(),
            "controllers processed an object"
        );
    }
}

/// The actions of the garbage collector, the pod reaper and (for a namespace) the namespace
/// controller for one object; when its grace period ends, if it is a pod in it.
async fn examine(
    shared: &Shared,
    graph: &Graph,
    entry: &Entry,
    actions: &mut Vec<Action>,
) -> Result<Option<Instant>, ApiError> {
    let grace_end = gc::examine(shared, graph, entry, actions).await?;
    if is_namespace(&entry.def) {
        namespace::examine(graph, entry, actions);
    }
    Ok(grace_end)
}

/// Whether `obj` carries `finalizer`.
fn has_finalizer(obj: &Object, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}
