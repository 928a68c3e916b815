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
#[derive(Debug, Default)]
pub(crate) struct DeleteRequest {
    /// `DeleteOptions.preconditions`.
    pub(crate) preconditions: Preconditions,
    /// Propagation policy and grace period.
    pub(crate) options: DeleteOptions,
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

/// DELETE of an object: objects with finalizers get a deletionTimestamp instead. Answers the
/// object as deleted (or as marked).
pub(crate) async fn delete(
    target: &Target<'_>,
    name: &str,
    request: DeleteRequest,
) -> Result<Arc<Object>, ApiError> {
    let storage = &target.shared.storage;
    let key = target.key(name);
    let current = target
        .get(name)
        .await?
        .ok_or_else(|| target.not_found(name))?;
    if target.dry_run {
        return Ok(current);
    }
    crate::admission::admit_delete(target.def, name)?;
    let pre = request.preconditions;
    let options = request.options;
    let gc = target.shared.garbage_collection;
    let strategy = strategy_for(target.def);
    match crate::deletion::decide(target.def, &prepared(strategy, &current), &options, gc) {
        Decision::Unchanged => return Ok(current),
        Decision::Mark(_) => {}
        Decision::Delete => {
            return storage
                .delete(key, pre)
                .await
                .map_err(|e| target.status(name, e));
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
    storage
        .guaranteed_update(key, f)
        .await
        .map_err(|e| target.status(name, e))
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

/// DELETE of a collection: deletes every object of the target passing `filter` (None: all; a
/// dry run deletes nothing); answers the deleted objects and the revision of the last deletion
/// (or of the listing).
pub(crate) async fn delete_collection(
    target: &Target<'_>,
    filter: Option<&Filter>,
) -> Result<(Vec<Arc<Object>>, u64), ApiError> {
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
    let mut deleted = Vec::new();
    let mut last_rv = page.revision;
    for obj in page
        .items
        .into_iter()
        .filter(|o| filter.is_none_or(|f| f.matches(o)))
    {
        if target.dry_run {
            deleted.push(obj);
            continue;
        }
        let name = obj.meta().name.clone().unwrap_or_default();
        let one = Target {
            namespace: obj.meta().namespace.as_deref(),
            ..*target
        };
        match delete(&one, &name, DeleteRequest::default()).await {
            Ok(gone) => {
                last_rv = gone.resource_version_u64();
                deleted.push(gone);
            }
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok((deleted, last_rv))
}
