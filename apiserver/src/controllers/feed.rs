//! What feeds the graph: one lifecycle subscription per served cache (`WatchCache::
//! subscribe_lifecycle`), subscribed again when the served set changes (a CRD adds or removes a
//! cache) or when the cache ends one (too slow, `terminate_all_watchers`), each time seeded
//! from the cache's state (`graph_builder.go`'s informers and their relists).

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::{Notify, mpsc};

use super::graph::{Graph, node_key};
use super::queue::Queue;
use crate::cache::{LifecycleEvent, Objects, WatchCache};
use crate::error::ApiError;
use crate::shared::Shared;

/// The subscription to one cache and the graph keys of its objects.
struct Sub {
    cache: Arc<WatchCache>,
    rx: mpsc::Receiver<LifecycleEvent>,
    keys: HashSet<Arc<str>>,
}

/// The subscriptions to every served cache.
#[derive(Default)]
pub(super) struct Feed {
    /// Woken by every subscription after each change and when it ends.
    notify: Arc<Notify>,
    subs: Vec<Sub>,
    /// The version of the served set (`Shared::served_changes`) subscribed to.
    pub(super) served: u64,
}

impl Sub {
    /// Subscribes to `cache` and adds its objects to the graph.
    fn new(
        cache: &Arc<WatchCache>,
        notify: &Arc<Notify>,
        graph: &mut Graph,
        queue: &mut Queue,
    ) -> Self {
        let lifecycle = cache.subscribe_lifecycle(Arc::clone(notify));
        let mut sub = Self {
            cache: Arc::clone(cache),
            rx: lifecycle.rx,
            keys: HashSet::new(),
        };
        sub.reseed(&lifecycle.objects, graph, queue);
        sub
    }

    /// Makes the graph hold exactly `objects` of this cache: objects that changed (or are new)
    /// are upserted, those no longer there removed.
    fn reseed(&mut self, objects: &Objects, graph: &mut Graph, queue: &mut Queue) {
        let def = self.cache.resource();
        let mut keys = HashSet::with_capacity(objects.len());
        for object in objects.values() {
            let key = node_key(def, object);
            let same = graph
                .get(&key)
                .is_some_and(|e| Arc::ptr_eq(&e.object, object));
            let key = if same {
                key
            } else {
                graph.upsert(def, Arc::clone(object), queue)
            };
            keys.insert(key);
        }
        for gone in self.keys.difference(&keys) {
            graph.remove(gone, queue);
        }
        self.keys = keys;
    }

    /// Applies one change.
    fn apply(&mut self, event: LifecycleEvent, graph: &mut Graph, queue: &mut Queue) {
        match event {
            LifecycleEvent::Upsert(object) => {
                let key = graph.upsert(self.cache.resource(), object, queue);
                self.keys.insert(key);
            }
            LifecycleEvent::Delete(object) => {
                let key = node_key(self.cache.resource(), &object);
                graph.remove(&key, queue);
                self.keys.remove(&key);
            }
            LifecycleEvent::Replace(objects) => self.reseed(&objects, graph, queue),
        }
    }

    /// Removes this cache's objects from the graph.
    fn forget(self, graph: &mut Graph, queue: &mut Queue) {
        for key in &self.keys {
            graph.remove(key, queue);
        }
    }
}

impl Feed {
    /// Follows the caches served now (version `served` of the served set): subscriptions to
    /// caches no longer served are dropped with their objects, new caches are subscribed to.
    pub(super) fn sync(
        &mut self,
        shared: &Shared,
        served: u64,
        graph: &mut Graph,
        queue: &mut Queue,
    ) {
        let now = shared.served();
        let (kept, gone): (Vec<Sub>, Vec<Sub>) = std::mem::take(&mut self.subs)
            .into_iter()
            .partition(|s| now.caches().any(|c| Arc::ptr_eq(c, &s.cache)));
        for sub in gone {
            sub.forget(graph, queue);
        }
        self.subs = kept;
        for cache in now.caches() {
            if !self.subs.iter().any(|s| Arc::ptr_eq(&s.cache, cache)) {
                let sub = Sub::new(cache, &self.notify, graph, queue);
                self.subs.push(sub);
            }
        }
        self.served = served;
    }

    /// Applies every change received so far; a subscription the cache ended is subscribed
    /// again and the graph brought to the cache's state.
    pub(super) fn drain(&mut self, graph: &mut Graph, queue: &mut Queue) {
        for sub in &mut self.subs {
            loop {
                match sub.rx.try_recv() {
                    Ok(event) => sub.apply(event, graph, queue),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        tracing::debug!(
                            target: "kcache_apiserver::controllers",
                            resource = %sub.cache.resource().qualified_plural(),
                            "lifecycle subscription ended, subscribing again"
                        );
                        let lifecycle = sub.cache.subscribe_lifecycle(Arc::clone(&self.notify));
                        sub.rx = lifecycle.rx;
                        sub.reseed(&lifecycle.objects, graph, queue);
                    }
                }
            }
        }
    }

    /// Resolves once a subscription has something (or has ended) since the last wait.
    pub(super) async fn changed(&self) {
        self.notify.notified().await;
    }

    /// Waits until every cache subscribed to has reached `revision`: then every change up to
    /// it is in the subscriptions (or they have ended), for [`Feed::drain`] to apply.
    pub(super) async fn wait_fresh(&self, revision: u64) -> Result<(), ApiError> {
        for sub in &self.subs {
            sub.cache.wait_fresh(revision).await?;
        }
        Ok(())
    }
}
