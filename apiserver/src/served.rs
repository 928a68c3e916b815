//! [`Served`]: the set of resources the server serves and their watch caches. It is live: the
//! CustomResourceDefinition controller (module `crd`) replaces the resources of a CRD when the
//! CRD is established or changed, and removes them when it is deleted. Readers take a snapshot
//! (an `Arc<Served>`), writers swap in a new one.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cache::{CacheConfig, WatchCache};
use crate::cacher::StorageListerWatcher;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::storage::Storage;
use kcache_reflector::{Reflector, ReflectorConfig};

/// One resource's watch cache, the token that stops its reflector, and the resource as served
/// now (its stored version first: a CRD's storage version may change while the cache stays).
#[derive(Debug, Clone)]
struct CacheEntry {
    cache: Arc<WatchCache>,
    stop: CancellationToken,
    def: Arc<ResourceDef>,
}

/// A snapshot of the served resources (every version of each) and one watch cache per
/// group and plural.
#[derive(Debug, Default, Clone)]
pub(crate) struct Served {
    /// Every served resource, one per group, version and plural.
    pub(crate) resources: Vec<Arc<ResourceDef>>,
    caches: HashMap<(String, String), CacheEntry>,
}

/// What a cache needs to start: storage, settings and the server's shutdown token.
pub(crate) struct CacheStarter<'a> {
    pub(crate) storage: &'a Arc<dyn Storage>,
    pub(crate) config: &'a CacheConfig,
    pub(crate) shutdown: &'a CancellationToken,
}

impl CacheStarter<'_> {
    /// Starts the watch cache of `def` (its dispatcher and the reflector that fills it).
    fn start(&self, def: &Arc<ResourceDef>) -> CacheEntry {
        let stop = self.shutdown.child_token();
        let cache = Arc::new(WatchCache::new(Arc::clone(def), self.config.clone()));
        tokio::spawn(Arc::clone(&cache).run_dispatcher(self.shutdown.child_token()));
        let lw = StorageListerWatcher::new(Arc::clone(self.storage), Arc::clone(def));
        let reflector = Reflector::<Object, _, _>::new(
            lw,
            Arc::clone(&cache),
            ReflectorConfig::default()
                .name(format!("cacher/{}", def.qualified_plural()))
                .page_size(u32::MAX),
        );
        let token = stop.child_token();
        tokio::spawn(async move { reflector.run(token).await });
        CacheEntry {
            cache,
            stop,
            def: Arc::clone(def),
        }
    }
}

impl Served {
    /// The resource served at group/version/plural.
    pub(crate) fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&Arc<ResourceDef>> {
        self.resources
            .iter()
            .find(|r| r.api.group == group && r.api.version == version && r.api.plural == plural)
    }

    /// The watch cache of `def`'s group and plural.
    pub(crate) fn cache(&self, def: &ResourceDef) -> Option<&Arc<WatchCache>> {
        self.caches
            .get(&(def.api.group.clone(), def.api.plural.clone()))
            .map(|e| &e.cache)
    }

    /// Every watch cache.
    pub(crate) fn caches(&self) -> impl Iterator<Item = &Arc<WatchCache>> {
        self.caches.values().map(|e| &e.cache)
    }

    /// The resource of `group`/`plural` as served now, its stored version first (writes
    /// through it store objects in the current storage version, whatever the version of the
    /// resource its cache was started with).
    pub(crate) fn stored(&self, group: &str, plural: &str) -> Option<&Arc<ResourceDef>> {
        self.caches
            .get(&(group.to_owned(), plural.to_owned()))
            .map(|e| &e.def)
    }

    /// This set with the versions of `group`/`plural` replaced by `defs` (the first is the one
    /// stored and cached; none: the resource is no longer served, its cache stops and its
    /// watchers' streams end).
    pub(crate) fn with(
        &self,
        group: &str,
        plural: &str,
        defs: Vec<Arc<ResourceDef>>,
        starter: &CacheStarter<'_>,
    ) -> Self {
        let mut next = self.clone();
        next.resources
            .retain(|r| !(r.api.group == group && r.api.plural == plural));
        let key = (group.to_owned(), plural.to_owned());
        match defs.first() {
            Some(first) => {
                let scope_changed = next
                    .caches
                    .get(&key)
                    .is_some_and(|e| e.cache.resource().namespaced != first.namespaced);
                if scope_changed && let Some(old) = next.caches.remove(&key) {
                    stop(&old);
                }
                next.caches
                    .entry(key)
                    .or_insert_with(|| starter.start(first))
                    .def = Arc::clone(first);
            }
            None => {
                if let Some(old) = next.caches.remove(&key) {
                    stop(&old);
                }
            }
        }
        next.resources.extend(defs);
        next
    }
}

/// Stops a cache's reflector, and its dispatcher after what it holds is delivered (watchers
/// see the last events, then their streams end).
fn stop(entry: &CacheEntry) {
    entry.stop.cancel();
    entry.cache.close();
}
