//! Key functions and the deletion tombstone.

use std::sync::Arc;

use kube_core::Resource;

use crate::error::KeyError;

/// The key under which a store holds an object: `namespace/name`, or `name` for cluster-scoped
/// objects. Shared between the item map and every index set, so each key is allocated once.
pub type ObjectKey = Arc<str>;

/// A function computing an object's key.
pub type KeyFunc<K> = Arc<dyn Fn(&K) -> Result<String, KeyError> + Send + Sync>;

/// The key of an object: `namespace/name`, or `name` when the object has no namespace.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_core::ObjectMeta;
/// let pod = Pod { metadata: ObjectMeta { name: Some("web".into()), namespace: Some("prod".into()), ..Default::default() }, ..Default::default() };
/// assert_eq!(kcache_store::meta_namespace_key(&pod).unwrap(), "prod/web");
/// ```
pub fn meta_namespace_key<K: Resource>(obj: &K) -> Result<String, KeyError> {
    let meta = obj.meta();
    let name = meta.name.as_deref().ok_or(KeyError::MissingName)?;
    Ok(namespace_key(meta.namespace.as_deref(), name))
}

/// The key [`meta_namespace_key`] gives an object named `name` in `namespace`: `namespace/name`,
/// or `name` when the namespace is absent or empty.
///
/// ```
/// assert_eq!(kcache_store::namespace_key(Some("prod"), "web"), "prod/web");
/// assert_eq!(kcache_store::namespace_key(Some(""), "node-1"), "node-1");
/// ```
pub fn namespace_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => {
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => name.to_owned(),
    }
}

/// A [`KeyFunc`] that applies [`meta_namespace_key`].
pub fn meta_namespace_key_func<K: Resource + 'static>() -> KeyFunc<K> {
    Arc::new(meta_namespace_key::<K>)
}

/// Splits a key made by [`meta_namespace_key`] into `(namespace, name)`; the namespace is empty
/// for cluster-scoped keys. Only keys of one or two parts are accepted.
///
/// ```
/// assert_eq!(kcache_store::split_meta_namespace_key("ns/a").unwrap(), ("ns", "a"));
/// assert_eq!(kcache_store::split_meta_namespace_key("node-1").unwrap(), ("", "node-1"));
/// assert!(kcache_store::split_meta_namespace_key("a/b/c").is_err());
/// ```
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyError> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(ns), Some(name), None) => Ok((ns, name)),
        _ => Err(KeyError::InvalidKey(key.to_owned())),
    }
}

/// A key given directly instead of an object; it is its own key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExplicitKey(pub String);

impl ExplicitKey {
    /// The key, passed through unchanged.
    pub fn key(&self) -> &str {
        &self.0
    }
}

/// The last known state of an object whose deletion was missed (the watch was down when it was
/// deleted, and a relist found it gone). `obj` may be stale.
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K> {
    /// The object's key.
    pub key: String,
    /// The last state of the object that was seen.
    pub obj: Arc<K>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            obj: Arc::clone(&self.obj),
        }
    }
}

/// What a deletion carries: the deleted object, or a [`DeletedFinalStateUnknown`] tombstone when
/// the deletion itself was not observed.
#[derive(Debug)]
pub enum MaybeTombstone<K> {
    /// The object as it was when it was deleted.
    Object(Arc<K>),
    /// A tombstone with the last known state.
    Tombstone(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for MaybeTombstone<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(o) => Self::Object(Arc::clone(o)),
            Self::Tombstone(t) => Self::Tombstone(t.clone()),
        }
    }
}

impl<K> MaybeTombstone<K> {
    /// The object, or the last known object of a tombstone.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Object(o) => o,
            Self::Tombstone(t) => &t.obj,
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::Tombstone(_))
    }
}

/// The key of a deletion: a tombstone's own key, else [`meta_namespace_key`] of the object.
pub fn deletion_handling_meta_namespace_key<K: Resource>(
    obj: &MaybeTombstone<K>,
) -> Result<String, KeyError> {
    match obj {
        MaybeTombstone::Tombstone(t) => Ok(t.key.clone()),
        MaybeTombstone::Object(o) => meta_namespace_key(o.as_ref()),
    }
}
