//! Index functions: what an [`Indexer`](crate::Indexer) indexes objects by.

use std::sync::Arc;

use ahash::AHashMap;
use k8s_openapi::api::core::v1::Pod;
use kube_core::{Resource, ResourceExt};
use smallvec::{SmallVec, smallvec};

use crate::error::{BoxError, KeyError};
use crate::key::{KeyFunc, namespace_key};

/// The values an object has in one index. Most objects have exactly one, kept inline: the
/// one-value path never allocates beyond the value itself.
///
/// Build it from what you have — a `Vec`, an array, one value, an `Option`, an iterator or
/// nothing — and read it as a slice of `String`s.
///
/// ```
/// use kcache_store::IndexValues;
///
/// let one = IndexValues::from("prod");
/// let from_vec = IndexValues::from(vec!["a".to_string(), "b".to_string()]);
/// let from_array = IndexValues::from(["a", "b"]);
/// let maybe = IndexValues::from(None::<String>);
/// let collected: IndexValues = ["x", "y", "z"].into_iter().collect();
/// assert_eq!(one.as_slice(), ["prod"]);
/// assert_eq!(from_vec, from_array);
/// assert!(maybe.is_empty());
/// assert_eq!(collected.len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct IndexValues(SmallVec<[String; 1]>);

impl IndexValues {
    /// No values: the object is not in the index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Exactly one value (kept inline, no allocation).
    pub fn one(value: impl Into<String>) -> Self {
        Self(smallvec![value.into()])
    }

    /// Appends a value.
    pub fn push(&mut self, value: impl Into<String>) {
        self.0.push(value.into());
    }

    /// The values as a slice.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }
}

impl std::ops::Deref for IndexValues {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0
    }
}

impl From<Vec<String>> for IndexValues {
    fn from(values: Vec<String>) -> Self {
        Self(SmallVec::from_vec(values))
    }
}

impl From<String> for IndexValues {
    fn from(value: String) -> Self {
        Self::one(value)
    }
}

impl From<&str> for IndexValues {
    fn from(value: &str) -> Self {
        Self::one(value)
    }
}

impl From<Option<String>> for IndexValues {
    /// One value for `Some`, none for `None`.
    fn from(value: Option<String>) -> Self {
        value.into_iter().collect()
    }
}

impl<S: Into<String>, const N: usize> From<[S; N]> for IndexValues {
    fn from(values: [S; N]) -> Self {
        values.into_iter().collect()
    }
}

impl<S: Into<String>> FromIterator<S> for IndexValues {
    fn from_iter<I: IntoIterator<Item = S>>(values: I) -> Self {
        Self(values.into_iter().map(Into::into).collect())
    }
}

impl<S: Into<String>> Extend<S> for IndexValues {
    fn extend<I: IntoIterator<Item = S>>(&mut self, values: I) {
        self.0.extend(values.into_iter().map(Into::into));
    }
}

impl IntoIterator for IndexValues {
    type Item = String;
    type IntoIter = smallvec::IntoIter<[String; 1]>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a IndexValues {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A function computing an object's values for one index.
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Result<IndexValues, BoxError> + Send + Sync>;

/// Index functions by index name.
pub type Indexers<K> = AHashMap<String, IndexFunc<K>>;

/// The name of the built-in namespace index.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Indexes objects by `metadata.namespace` (cluster-scoped objects get the empty value).
pub fn namespace_index_func<K: Resource + 'static>() -> IndexFunc<K> {
    Arc::new(|obj: &K| {
        Ok(IndexValues::one(
            obj.meta().namespace.clone().unwrap_or_default(),
        ))
    })
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

/// The name conventionally used for [`node_name_index_func`].
pub const NODE_NAME_INDEX: &str = "spec.nodeName";

/// Indexes pods by `spec.nodeName` (what a node agent looks its pods up by); pods not yet
/// scheduled are not indexed.
pub fn node_name_index_func() -> IndexFunc<Pod> {
    Arc::new(|pod: &Pod| {
        Ok(pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty())
            .into_iter()
            .collect())
    })
}

/// The name conventionally used for [`owner_index_func`].
pub const OWNER_INDEX: &str = "owner";

/// Indexes objects by each owner, as [`owner_index_value`]`(kind, namespace, name)`: owners are in
/// the object's namespace, so the value names exactly one owner object. With it, "the pods of this
/// ReplicaSet" is one lookup.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use kcache_store::{Indexer, OWNER_INDEX, Store, owner_index_func, owner_index_value};
/// # use std::sync::Arc;
///
/// let pods = Indexer::<Pod>::with_namespace_index();
/// pods.add_index(OWNER_INDEX, owner_index_func()).unwrap();
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("prod".into());
/// pod.metadata.name = Some("web-1".into());
/// pod.metadata.owner_references = Some(vec![OwnerReference {
///     kind: "ReplicaSet".into(),
///     name: "web".into(),
///     ..Default::default()
/// }]);
/// pods.add(Arc::new(pod)).unwrap();
/// let owned = pods.by_index(OWNER_INDEX, &owner_index_value("ReplicaSet", "prod", "web")).unwrap();
/// assert_eq!(owned.len(), 1);
/// ```
pub fn owner_index_func<K: Resource + 'static>() -> IndexFunc<K> {
    Arc::new(|obj: &K| {
        let namespace = obj.meta().namespace.as_deref().unwrap_or("");
        Ok(obj
            .owner_references()
            .iter()
            .map(|o| owner_index_value(&o.kind, namespace, &o.name))
            .collect())
    })
}

/// The [`owner_index_func`] value of the owner `kind` `namespace/name` (`Kind/namespace/name`;
/// `Kind/name` for a cluster-scoped owner).
pub fn owner_index_value(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind}/{}", namespace_key(Some(namespace), name))
}

/// Turns an index function into a key function; keys exist only for objects with exactly one value.
pub fn index_func_to_key_func<K: 'static>(index_func: IndexFunc<K>) -> KeyFunc<K> {
    Arc::new(move |obj: &K| {
        let mut values = index_func(obj).map_err(KeyError::IndexFunc)?;
        match values.len() {
            1 => Ok(values.0.swap_remove(0)),
            n => Err(KeyError::NotExactlyOneValue(n)),
        }
    })
}
