//! The reflector-facing side: the [`ReflectorStore`] a kcache-reflector writes the resource's
//! list and watch events into; each write updates the state, appends to the ring buffer and
//! takes the snapshot of the state at the event's resource version.

use std::sync::{Arc, OnceLock};

use kcache_reflector::ReflectorStore;
use kcache_store::StoreError;
use tokio::time::Instant;

use super::dispatch::Dispatch;
use super::event::CacheEvent;
use super::lifecycle::{LifecycleEvent, concerns_lifecycle, publish};
use super::ring::evict_oldest;
use super::snapshots::Objects;
use super::{CacheState, WatchCache, key_of};
use crate::object::Object;
use crate::resource_version;
use crate::storage::EventType;

impl WatchCache {
    fn apply(&self, obj: Arc<Object>, deleted: bool) -> Result<(), StoreError> {
        let key: Arc<str> = key_of(&obj).into();
        let rv = obj.resource_version_u64();
        let mut state = self.state.write();
        let (event_type, previous) = if deleted {
            (EventType::Deleted, state.objects.remove(&key))
        } else {
            let previous = state.objects.insert(key, Arc::clone(&obj));
            let event_type = if previous.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            (event_type, previous)
        };
        if deleted && previous.is_none() {
            // Nothing to tell watchers about an object the cache never had.
            self.advance(&mut state, rv);
            return Ok(());
        }
        if concerns_lifecycle(&self.def, event_type, &obj, previous.as_deref()) {
            let change = if deleted {
                LifecycleEvent::Delete(Arc::clone(&obj))
            } else {
                LifecycleEvent::Upsert(Arc::clone(&obj))
            };
            publish(&mut state, &change);
        }
        let event = Arc::new(CacheEvent {
            rv,
            event_type,
            object: obj,
            previous,
            frames: Default::default(),
            stamped_previous: OnceLock::new(),
            recorded: Instant::now(),
        });
        self.resize_ring(&mut state, event.recorded);
        if state.ring.len() >= state.capacity {
            evict_oldest(&mut state);
        }
        state.ring.push_back(Arc::clone(&event));
        let CacheState {
            objects, snapshots, ..
        } = &mut *state;
        snapshots.add(rv, objects);
        let _ = self.dispatch.send(Dispatch::Event(event));
        self.advance(&mut state, rv);
        Ok(())
    }

    fn advance(&self, state: &mut CacheState, rv: u64) {
        if rv > state.rv {
            state.rv = rv;
            self.rv.send_replace(rv);
        }
    }

    fn set_rv_and_progress(&self, rv: u64) {
        let mut state = self.state.write();
        self.advance(&mut state, rv);
        let _ = self.dispatch.send(Dispatch::Progress(rv));
    }
}

impl ReflectorStore<Object> for WatchCache {
    fn add(&self, obj: Arc<Object>) -> Result<(), StoreError> {
        self.apply(obj, false)
    }

    fn update(&self, obj: Arc<Object>) -> Result<(), StoreError> {
        self.apply(obj, false)
    }

    fn delete(&self, obj: Arc<Object>) -> Result<(), StoreError> {
        self.apply(obj, true)
    }

    fn replace(&self, items: Vec<Arc<Object>>, resource_version: &str) -> Result<(), StoreError> {
        let rv = resource_version::parse_or_zero(resource_version);
        let was_ready = {
            let mut state = self.state.write();
            let objects: Objects = items
                .into_iter()
                .map(|obj| (Arc::from(key_of(&obj)), obj))
                .collect();
            state.snapshots.reset(rv, &objects);
            publish(&mut state, &LifecycleEvent::Replace(objects.clone()));
            state.objects = objects;
            state.ring.clear();
            state.window_start = rv;
            let was_ready = state.ready;
            state.ready = true;
            state.rv = rv;
            self.rv.send_replace(rv);
            let _ = self.dispatch.send(Dispatch::Progress(rv));
            was_ready
        };
        if was_ready {
            // A relist: watchers may have missed events; they must start again (the lifecycle
            // subscribers have had the new state).
            self.watchers.lock().clear();
        }
        Ok(())
    }

    fn bookmark(&self, resource_version: &str) {
        self.set_rv_and_progress(resource_version::parse_or_zero(resource_version));
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.set_rv_and_progress(resource_version::parse_or_zero(resource_version));
    }
}
