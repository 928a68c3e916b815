//! Delete and delete-collection: preconditions, then what crate::deletion decides (delete now,
//! or mark with a `deletionTimestamp`, the propagation policy's finalizers and a grace period).

use std::sync::Arc;

use kube_core::Resource;

use super::builtin::strategy_for;
use super::strategy::Strategy;
use super::{Target, conflict_stale, not_found};
use crate::deletion::{Decision, DeleteOptions};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::storage::{ListRequest, Preconditions, UpdateFn};

/// What a DELETE asks beyond its target.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteRequest {
    /// `DeleteOptions.preconditions`.
    pub(crate) preconditions: Preconditions,
    /// Propagation policy and grace period.
    pub(crate) options: DeleteOptions,
    /// The body's `dryRun: ["All"]` (the query's is the target's).
    pub(crate) dry_run: bool,
}

/// Whether `obj` fails `pre`.
fn stale(pre: &Preconditions, obj: &Object) -> bool {
    pre.resource_version
        .is_some_and(|rv| rv != obj.resource_version_u64())
        || pre
            .uid
            .as_deref()
            .is_some_and(|uid| Some(uid) != obj.meta().uid.as_deref())
}

/// What a DELETE did (`Store.Delete`'s object and `deleted`).
#[derive(Debug)]
pub(crate) struct Deleted {
    /// The object as removed, or as marked (or left) for its finalizers or grace period.
    pub(crate) object: Arc<Object>,
    /// Whether it left storage (for a dry run: whether it would have).
    pub(crate) removed: bool,
}

/// DELETE of an object: objects with finalizers get a deletionTimestamp instead. A dry run
/// answers what the delete would do and stores nothing.
pub(crate) async fn delete(
    target: &Target<'_>,
    name: &str,
    request: DeleteRequest,
) -> Result<Deleted, ApiError> {
    let storage = &target.shared.storage;
    let key = target.key(name);
    let current = target
        .get(name)
        .await?
        .ok_or_else(|| target.not_found(name))?;
    crate::admission::admit_delete(target.def, name)?;
    let attributes = crate::webhook::Attributes {
        def: target.def,
        operation: "DELETE",
        name,
        namespace: current.meta().namespace.as_deref(),
        object: None,
        old_object: Some(&current),
        dry_run: target.dry_run,
    };
    crate::webhook::validate(target.shared, &attributes).await?;
    let pre = request.preconditions;
    let options = request.options;
    let gc = target.shared.garbage_collection;
    let strategy = strategy_for(target.def);
    let decision = crate::deletion::decide(target.def, &prepared(strategy, &current), &options, gc);
    if target.dry_run {
        if stale(&pre, &current) {
            return Err(conflict_stale(target.def, name));
        }
        let (object, removed) = match decision {
            Decision::Delete => (current, true),
            Decision::Mark(next) => (Arc::new(*next), false),
            Decision::Unchanged => (current, false),
        };
        return Ok(Deleted { object, removed });
    }
    match decision {
        Decision::Unchanged => {
            return Ok(Deleted {
                object: current,
                removed: false,
            });
        }
        Decision::Mark(_) => {}
        Decision::Delete => {
            let object = storage
                .delete(key, pre)
                .await
                .map_err(|e| target.status(name, e))?;
            crate::quota::replenish(target.shared, target.def, target.namespace).await;
            return Ok(Deleted {
                object,
                removed: true,
            });
        }
    }
    let def = Arc::clone(target.def);
    let owned_name = name.to_owned();
    let f: UpdateFn = Box::new(move |cur| {
        let cur = cur.ok_or_else(|| not_found(&def, &owned_name))?;
        if stale(&pre, cur) {
            return Err(conflict_stale(&def, &owned_name));
        }
        match crate::deletion::decide(&def, &prepared(strategy, cur), &options, gc) {
            Decision::Mark(next) => Ok(*next),
            Decision::Delete | Decision::Unchanged => Ok((**cur).clone()),
        }
    });
    let object = storage
        .guaranteed_update(key, f)
        .await
        .map_err(|e| target.status(name, e))?;
    Ok(Deleted {
        object,
        removed: false,
    })
}

/// `obj` with the changes its kind's strategy makes before a delete (a finalizer of its own,
/// such as a CRD's cleanup finalizer); an object already marked for deletion stays as it is,
/// so that a second DELETE does not bring back a finalizer a controller has removed.
fn prepared(strategy: &dyn Strategy, obj: &Object) -> Object {
    let mut prepared = obj.clone();
    if obj.meta().deletion_timestamp.is_none() {
        strategy.prepare_for_delete(&mut prepared);
    }
    prepared
}

/// What a DELETE of a collection did.
#[derive(Debug)]
pub(crate) struct DeletedCollection {
    /// The objects as listed before their deletes (what Kubernetes' `DeleteCollection`
    /// answers), and the revision of that list.
    pub(crate) listed: Vec<Arc<Object>>,
    pub(crate) list_revision: u64,
    /// The revision of the last delete (the list's when nothing changed).
    pub(crate) last_revision: u64,
}

/// DELETE of a collection: deletes, with `request`, every object of the target passing
/// `filter` (None: all; a dry run deletes nothing).
pub(crate) async fn delete_collection(
    target: &Target<'_>,
    filter: Option<&Filter>,
    request: &DeleteRequest,
) -> Result<DeletedCollection, ApiError> {
    let storage = &target.shared.storage;
    let prefix = match target.namespace {
        Some(ns) => format!("{}{ns}/", target.def.key_prefix()),
        None => target.def.key_prefix(),
    };
    let page = storage
        .list(ListRequest {
            prefix,
            ..ListRequest::default()
        })
        .await
        .map_err(|e| target.status("", e))?;
    let listed: Vec<Arc<Object>> = page
        .items
        .into_iter()
        .filter(|o| filter.is_none_or(|f| f.matches(o)))
        .collect();
    let mut last_revision = page.revision;
    for obj in listed.iter().filter(|_| !target.dry_run) {
        let name = obj.meta().name.clone().unwrap_or_default();
        let one = Target {
            namespace: obj.meta().namespace.as_deref(),
            ..*target
        };
        match delete(&one, &name, request.clone()).await {
            Ok(gone) => last_revision = gone.object.resource_version_u64(),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(DeletedCollection {
        listed,
        list_revision: page.revision,
        last_revision,
    })
}
