//! The garbage collector's graph (`graph_builder.go`'s `uidToNode`), kept up to date from the
//! caches' lifecycle changes: every object served, by uid, with its resource; owner uid → the
//! uids of its dependents (also for owners the graph does not hold, Kubernetes' virtual nodes);
//! namespace → the uids of its objects. Each change marks dirty what it can concern
//! (`processGraphChanges`): the object itself when it has owners or is being deleted, its
//! owners that are being deleted, its dependents when it is new, deleted or its deletion or
//! finalizers changed, and the namespace of a namespaced object (its controller ignores it
//! unless the namespace is terminating).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube_core::Resource;

use super::queue::Queue;
use crate::deletion::is_namespace;
use crate::object::Object;
use crate::resource::ResourceDef;

/// One object of the graph with its resource.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) def: Arc<ResourceDef>,
    pub(super) object: Arc<Object>,
}

/// The key of an object in the graph: its uid (objects the server wrote always have one),
/// else its resource and cache key.
pub(super) fn node_key(def: &ResourceDef, obj: &Object) -> Arc<str> {
    let meta = obj.meta();
    match &meta.uid {
        Some(uid) => Arc::from(uid.as_str()),
        None => Arc::from(format!(
            "{}.{}/{}/{}",
            def.api.plural,
            def.api.group,
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        )),
    }
}

/// Graph keys by owner uid or namespace name.
type Index = HashMap<Arc<str>, HashSet<Arc<str>>>;

/// Every served object and who depends on whom.
#[derive(Debug, Default)]
pub(super) struct Graph {
    nodes: HashMap<Arc<str>, Entry>,
    /// Owner uid → the keys of the objects whose `ownerReferences` name it.
    dependents: Index,
    /// Namespace name → the keys of the (namespaced) objects in it.
    by_namespace: Index,
    /// Namespace name → the key of the namespace.
    namespaces: HashMap<Arc<str>, Arc<str>>,
}

/// The owner uids `obj` references.
fn owner_uids(obj: &Object) -> impl Iterator<Item = &str> {
    obj.meta()
        .owner_references
        .iter()
        .flatten()
        .map(|r| r.uid.as_str())
}

/// The namespace of a namespaced object.
fn namespace_of<'a>(def: &ResourceDef, obj: &'a Object) -> Option<&'a str> {
    obj.meta().namespace.as_deref().filter(|_| def.namespaced)
}

impl Graph {
    /// The object with `key`.
    pub(super) fn get(&self, key: &str) -> Option<&Entry> {
        self.nodes.get(key)
    }

    /// Whether any object references the owner with `uid`.
    pub(super) fn has_dependents(&self, uid: &str) -> bool {
        self.dependents.contains_key(uid)
    }

    /// The objects referencing the owner with `uid`.
    pub(super) fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &Entry> {
        self.entries(&self.dependents, uid)
    }

    /// The objects in namespace `name`.
    pub(super) fn in_namespace(&self, name: &str) -> impl Iterator<Item = &Entry> {
        self.entries(&self.by_namespace, name)
    }

    /// The objects `index` lists under `at`.
    fn entries<'a>(&'a self, index: &'a Index, at: &str) -> impl Iterator<Item = &'a Entry> {
        index
            .get(at)
            .into_iter()
            .flatten()
            .filter_map(|key| self.nodes.get(key))
    }

    /// Adds or replaces an object; returns its key.
    pub(super) fn upsert(
        &mut self,
        def: &Arc<ResourceDef>,
        object: Arc<Object>,
        queue: &mut Queue,
    ) -> Arc<str> {
        let key = node_key(def, &object);
        let entry = Entry {
            def: Arc::clone(def),
            object,
        };
        let previous = self.nodes.insert(Arc::clone(&key), entry.clone());
        let obj = &entry.object;
        let meta = obj.meta();
        let deleting = meta.deletion_timestamp.is_some();
        if deleting
            || meta
                .owner_references
                .as_ref()
                .is_some_and(|r| !r.is_empty())
        {
            queue.add(&key);
        }
        let lifecycle_changed = previous.as_ref().is_none_or(|p| {
            let old = p.object.meta();
            old.deletion_timestamp != meta.deletion_timestamp || old.finalizers != meta.finalizers
        });
        if lifecycle_changed {
            self.mark_dependents(&key, queue);
        }
        if let Some(previous) = &previous {
            self.unlink(&key, previous);
            self.mark_deleting_owners(&previous.object, queue);
        }
        self.link(&key, &entry);
        self.mark_deleting_owners(obj, queue);
        self.mark_namespace(&entry, queue);
        if is_namespace(def)
            && let Some(name) = &meta.name
        {
            self.namespaces
                .insert(Arc::from(name.as_str()), Arc::clone(&key));
        }
        key
    }

    /// Removes the object with `key`, if the graph holds it.
    pub(super) fn remove(&mut self, key: &str, queue: &mut Queue) {
        let Some((key, entry)) = self.nodes.remove_entry(key) else {
            return;
        };
        self.unlink(&key, &entry);
        self.mark_deleting_owners(&entry.object, queue);
        self.mark_dependents(&key, queue);
        self.mark_namespace(&entry, queue);
        if is_namespace(&entry.def)
            && let Some(name) = &entry.object.meta().name
            && self.namespaces.get(name.as_str()) == Some(&key)
        {
            self.namespaces.remove(name.as_str());
        }
    }

    /// Records `entry`'s owner references and namespace.
    fn link(&mut self, key: &Arc<str>, entry: &Entry) {
        for owner in owner_uids(&entry.object) {
            self.dependents
                .entry(Arc::from(owner))
                .or_default()
                .insert(Arc::clone(key));
        }
        if let Some(ns) = namespace_of(&entry.def, &entry.object) {
            self.by_namespace
                .entry(Arc::from(ns))
                .or_default()
                .insert(Arc::clone(key));
        }
    }

    /// Forgets `entry`'s owner references and namespace.
    fn unlink(&mut self, key: &str, entry: &Entry) {
        for owner in owner_uids(&entry.object) {
            if let Some(set) = self.dependents.get_mut(owner) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(owner);
                }
            }
        }
        if let Some(ns) = namespace_of(&entry.def, &entry.object)
            && let Some(set) = self.by_namespace.get_mut(ns)
        {
            set.remove(key);
            if set.is_empty() {
                self.by_namespace.remove(ns);
            }
        }
    }

    /// Marks the dependents of `uid` dirty (their owner came, went, or began deletion).
    fn mark_dependents(&self, uid: &str, queue: &mut Queue) {
        for key in self.dependents.get(uid).into_iter().flatten() {
            queue.add(key);
        }
    }

    /// Marks the owners of `obj` that are being deleted dirty (they may wait for it).
    fn mark_deleting_owners(&self, obj: &Object, queue: &mut Queue) {
        for owner in owner_uids(obj) {
            if let Some((key, entry)) = self.nodes.get_key_value(owner)
                && entry.object.meta().deletion_timestamp.is_some()
            {
                queue.add(key);
            }
        }
    }

    /// Marks the namespace of `entry` dirty when it is terminating.
    fn mark_namespace(&self, entry: &Entry, queue: &mut Queue) {
        if let Some(ns) = namespace_of(&entry.def, &entry.object)
            && let Some(key) = self.namespaces.get(ns)
            && self
                .nodes
                .get(key)
                .is_some_and(|n| n.object.meta().deletion_timestamp.is_some())
        {
            queue.add(key);
        }
    }
}
