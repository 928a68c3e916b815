//! Index functions: what an [`Indexer`](crate::Indexer) indexes objects by.

use std::sync::Arc;

use ahash::AHashMap;
use kube_core::{Resource, ResourceExt};
use smallvec::{SmallVec, smallvec};

use crate::error::{BoxError, KeyError};
use crate::key::KeyFunc;

/// The values an object has in one index. Most objects have exactly one, kept inline.
pub type IndexValues = SmallVec<[String; 1]>;

/// A function computing an object's values for one index.
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Result<IndexValues, BoxError> + Send + Sync>;

/// Index functions by index name.
pub type Indexers<K> = AHashMap<String, IndexFunc<K>>;

/// The name of the built-in namespace index.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Indexes objects by `metadata.namespace` (cluster-scoped objects get the empty value).
pub fn namespace_index_func<K: Resource + 'static>() -> IndexFunc<K> {
    Arc::new(|obj: &K| Ok(smallvec![obj.meta().namespace.clone().unwrap_or_default()]))
}

/// Indexes objects by the value of one label; objects without it are not indexed.
pub fn label_index_func<K: Resource + 'static>(label: impl Into<String>) -> IndexFunc<K> {
    let label = label.into();
    Arc::new(move |obj: &K| Ok(obj.labels().get(&label).cloned().into_iter().collect()))
}

/// Indexes objects by the uid of each owner reference (an object with several owners is in several
/// index values; one without owners in none).
pub fn owner_uid_index_func<K: Resource + 'static>() -> IndexFunc<K> {
    Arc::new(|obj: &K| {
        Ok(obj
            .owner_references()
            .iter()
            .map(|o| o.uid.clone())
            .collect())
    })
}

/// Indexes objects by the `Kind/name` of each owner reference (for example `ReplicaSet/web-5d8f`).
pub fn owner_kind_name_index_func<K: Resource + 'static>() -> IndexFunc<K> {
    Arc::new(|obj: &K| {
        Ok(obj
            .owner_references()
            .iter()
            .map(|o| format!("{}/{}", o.kind, o.name))
            .collect())
    })
}

/// Turns an index function into a key function; keys exist only for objects with exactly one value.
pub fn index_func_to_key_func<K: 'static>(index_func: IndexFunc<K>) -> KeyFunc<K> {
    Arc::new(move |obj: &K| {
        let mut values = index_func(obj).map_err(|e| KeyError::IndexFunc(e.to_string()))?;
        match values.len() {
            1 => Ok(values.swap_remove(0)),
            n => Err(KeyError::NotExactlyOneValue(n)),
        }
    })
}
