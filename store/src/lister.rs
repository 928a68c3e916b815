//! [`Lister`] and [`NamespaceLister`]: typed reads over an [`Indexer`].

use std::fmt;
use std::sync::Arc;

use kube_core::{Resource, ResourceExt, Selector, SelectorExt};

use crate::error::StoreError;
use crate::index::NAMESPACE_INDEX;
use crate::indexer::Indexer;
use crate::store::Store;

/// Reads over an [`Indexer`] keyed by `namespace/name` (client-go's generated listers).
///
/// ```
/// # use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_store::{Indexer, Lister, Store, parse_label_selector};
///
/// let indexer = Arc::new(Indexer::<Pod>::with_namespace_index());
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-1".into());
/// pod.metadata.namespace = Some("prod".into());
/// pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// indexer.add(Arc::new(pod)).unwrap();
///
/// let lister = Lister::new(indexer);
/// let web = parse_label_selector("app=web").unwrap();
/// assert_eq!(lister.namespace("prod").list(&web).len(), 1);
/// assert!(lister.namespace("prod").get("web-1").is_some());
/// ```
pub struct Lister<K> {
    indexer: Arc<Indexer<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: Arc::clone(&self.indexer),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("indexer", &self.indexer)
            .finish()
    }
}

fn select<K: Resource>(objects: Vec<Arc<K>>, selector: &Selector) -> Vec<Arc<K>> {
    if selector.selects_all() {
        return objects;
    }
    objects
        .into_iter()
        .filter(|o| selector.matches(o.labels()))
        .collect()
}

impl<K: Resource + Send + Sync + 'static> Lister<K> {
    /// A lister over `indexer`.
    pub fn new(indexer: Arc<Indexer<K>>) -> Self {
        Self { indexer }
    }

    /// The objects whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        select(self.indexer.list(), selector)
    }

    /// The cluster-scoped object named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.indexer.get_by_key(name)
    }

    /// The object with the key `key` (`namespace/name`, or `name` when cluster-scoped), as a
    /// work queue hands it out.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.indexer.get_by_key(key)
    }

    /// The objects with `value` in the index `index_name`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.indexer.by_index(index_name, value)
    }

    /// Reads limited to one namespace.
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            indexer: Arc::clone(&self.indexer),
            namespace: namespace.to_owned(),
        }
    }

    /// The indexer this lister reads.
    pub fn indexer(&self) -> &Arc<Indexer<K>> {
        &self.indexer
    }
}

/// Reads within one namespace; uses the [`NAMESPACE_INDEX`] when the indexer has it.
pub struct NamespaceLister<K> {
    indexer: Arc<Indexer<K>>,
    namespace: String,
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> NamespaceLister<K> {
    /// The objects of this namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let objects = match self.indexer.by_index(NAMESPACE_INDEX, &self.namespace) {
            Ok(objects) => objects,
            Err(_) => {
                let mut all = self.indexer.list();
                all.retain(|o| o.meta().namespace.as_deref().unwrap_or("") == self.namespace);
                all
            }
        };
        select(objects, selector)
    }

    /// The objects of this namespace whose value in index `index_name` is `value` (for example
    /// the pods of one owner with [`owner_index_func`](crate::owner_index_func)). Unknown index →
    /// error.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        let mut objects = self.indexer.by_index(index_name, value)?;
        objects.retain(|o| o.meta().namespace.as_deref().unwrap_or("") == self.namespace);
        Ok(objects)
    }

    /// The object named `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        if self.namespace.is_empty() {
            return self.indexer.get_by_key(name);
        }
        self.indexer
            .get_by_key(&format!("{}/{}", self.namespace, name))
    }
}
