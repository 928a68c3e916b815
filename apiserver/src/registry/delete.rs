//! Delete and delete-collection: preconditions, finalizers (an object with finalizers gets a
//! `deletionTimestamp` and stays until they are gone), and a namespace's content.

use std::sync::Arc;

use kube_core::Resource;

use super::strategy::strategy_for;
use super::{Target, conflict_stale, not_found, now};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::shared::Shared;
use crate::storage::{ListRequest, Preconditions, StorageError, UpdateFn};

/// What a DELETE asks beyond its target.
#[derive(Debug, Default)]
pub(crate) struct DeleteRequest {
    /// `DeleteOptions.preconditions`.
    pub(crate) preconditions: Preconditions,
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
    let current = storage
        .get(key.clone())
        .await
        .map_err(|e| target.status(name, e))?
        .ok_or_else(|| target.not_found(name))?;
    if target.dry_run {
        return Ok(current);
    }
    let pre = request.preconditions;
    let strategy = strategy_for(target.def);
    let mut marked = (*current).clone();
    strategy.prepare_for_delete(&mut marked);
    let meta = marked.meta();
    if meta.finalizers.as_ref().is_some_and(|f| !f.is_empty()) {
        if meta.deletion_timestamp.is_some() {
            return Ok(current);
        }
        let def = Arc::clone(target.def);
        let owned_name = name.to_owned();
        let f: UpdateFn = Box::new(move |cur| {
            let cur = cur.ok_or_else(|| not_found(&def, &owned_name))?;
            if stale(&pre, cur) {
                return Err(conflict_stale(&def, &owned_name));
            }
            let mut next = (**cur).clone();
            strategy.prepare_for_delete(&mut next);
            next.meta_mut().deletion_timestamp = Some(now());
            next.meta_mut().deletion_grace_period_seconds = Some(0);
            Ok(next)
        });
        return storage
            .guaranteed_update(key, f)
            .await
            .map_err(|e| target.status(name, e));
    }
    let deleted = storage
        .delete(key, pre)
        .await
        .map_err(|e| target.status(name, e))?;
    if target.def.api.kind == "Namespace" && target.def.api.group.is_empty() {
        delete_namespace_content(target.shared, name).await?;
    }
    Ok(deleted)
}

/// Deletes every namespaced object in `namespace` (after the namespace itself: the server has
/// no Terminating phase, and finalizers of the content are not waited for).
async fn delete_namespace_content(shared: &Shared, namespace: &str) -> Result<(), ApiError> {
    for def in shared.served().resources.iter().filter(|d| d.namespaced) {
        let target = Target {
            shared,
            def,
            namespace: Some(namespace),
            dry_run: false,
        };
        delete_collection(&target, None).await?;
    }
    Ok(())
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
        let key = target
            .def
            .storage_key(obj.meta().namespace.as_deref(), &name);
        match storage.delete(key, Preconditions::default()).await {
            Ok(gone) => {
                last_rv = gone.resource_version_u64();
                deleted.push(gone);
            }
            Err(StorageError::NotFound(_)) => {}
            Err(e) => return Err(target.status(&name, e)),
        }
    }
    Ok((deleted, last_rv))
}
