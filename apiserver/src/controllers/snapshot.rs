//! A consistent view of every watch cache at one storage revision, with the owner-to-dependents
//! graph of `ownerReferences` (the garbage collector's `uidToNode`).

use std::collections::HashMap;
use std::sync::Arc;

use kube_core::Resource;

use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::shared::Shared;

/// One object of the snapshot with its resource.
pub(super) struct Entry {
    pub(super) def: Arc<ResourceDef>,
    pub(super) object: Arc<Object>,
}

/// Every cached object at (at least) `revision`, by uid, and who depends on whom.
pub(super) struct Snapshot {
    pub(super) revision: u64,
    pub(super) entries: Vec<Entry>,
    pub(super) by_uid: HashMap<String, usize>,
    /// Owner uid → the entries whose `ownerReferences` name it.
    pub(super) dependents: HashMap<String, Vec<usize>>,
}

impl Snapshot {
    /// Waits until every cache has reached the storage's current revision and reads them.
    pub(super) async fn take(shared: &Shared) -> Result<Self, ApiError> {
        let revision = shared
            .storage
            .revision()
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let mut entries = Vec::new();
        // The caches served now: one per group and plural (custom resources included), each
        // holding the objects of the version it stores.
        for cache in shared.served().caches() {
            let def = cache.resource();
            cache.wait_fresh(revision).await?;
            let (objects, _) = cache.list(&Filter::default());
            entries.extend(objects.into_iter().map(|object| Entry {
                def: Arc::clone(def),
                object,
            }));
        }
        let mut by_uid = HashMap::new();
        let mut dependents: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let meta = entry.object.meta();
            if let Some(uid) = &meta.uid {
                by_uid.insert(uid.clone(), i);
            }
            for owner in meta.owner_references.iter().flatten() {
                dependents.entry(owner.uid.clone()).or_default().push(i);
            }
        }
        Ok(Self {
            revision,
            entries,
            by_uid,
            dependents,
        })
    }

    /// The entries depending on the owner with `uid`.
    pub(super) fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &Entry> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .map(|&i| &self.entries[i])
    }
}
