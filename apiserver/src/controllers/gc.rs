//! The garbage collector (`pkg/controller/garbagecollector`): dependents whose owners are all
//! gone are deleted (Background), dependents of owners waiting in Foreground deletion are
//! deleted and the owner's `foregroundDeletion` finalizer goes when no blocking dependent is
//! left, owners in Orphan deletion have their dependents' references stripped and then lose
//! their `orphan` finalizer. Also the kubelet's part of pod deletion: a pod whose grace period
//! is over is deleted.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube_core::Resource;
use tokio::time::Instant;

use super::action::{Action, Change, without_finalizer};
use super::graph::{Entry, Graph};
use super::has_finalizer;
use crate::deletion::{DeleteOptions, FOREGROUND, ORPHAN, Propagation};
use crate::error::ApiError;
use crate::object::Object;
use crate::shared::Shared;

/// How an owner reference stands.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// Exists and is not being deleted in the foreground.
    Solid,
    /// Exists, waiting for its dependents (Foreground).
    Waiting,
    /// Does not exist (checked in storage, as the collector's live lookup).
    Absent,
}

async fn owner_state(
    shared: &Shared,
    graph: &Graph,
    dependent: &Entry,
    owner: &OwnerReference,
) -> Result<Owner, ApiError> {
    if let Some(entry) = graph.get(&owner.uid) {
        let obj = &entry.object;
        return Ok(
            if obj.meta().deletion_timestamp.is_some() && has_finalizer(obj, FOREGROUND) {
                Owner::Waiting
            } else {
                Owner::Solid
            },
        );
    }
    let served = shared.served();
    let Some(def) = served
        .resources
        .iter()
        .find(|d| d.api.api_version == owner.api_version && d.api.kind == owner.kind)
    else {
        // An owner of a kind the server does not serve is left alone.
        return Ok(Owner::Solid);
    };
    let namespace = dependent.object.meta().namespace.as_deref();
    let live = shared
        .storage
        .get(def.storage_key(namespace, &owner.name))
        .await
        .map_err(|e| crate::cacher::storage_status(def, &owner.name, e))?;
    Ok(match live {
        Some(o) if o.meta().uid.as_deref() == Some(owner.uid.as_str()) => Owner::Solid,
        _ => Owner::Absent,
    })
}

/// The propagation a collected dependent is deleted with (`attemptToDeleteItem`).
fn collect(entry: &Entry, graph: &Graph, owners_waiting: bool) -> Action {
    let obj = &entry.object;
    let has_dependents = obj
        .meta()
        .uid
        .as_ref()
        .is_some_and(|uid| graph.has_dependents(uid));
    let propagation = if owners_waiting && has_dependents {
        Propagation::Foreground
    } else if has_finalizer(obj, ORPHAN) {
        Propagation::Orphan
    } else if has_finalizer(obj, FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    let options = DeleteOptions {
        propagation: Some(propagation),
        ..DeleteOptions::default()
    };
    Action::on(&entry.def, obj, Change::Delete(options))
}

/// Strips the references to `owner_uids` from a dependent.
fn strip_owners(entry: &Entry, owner_uids: Vec<String>) -> Action {
    let change = Change::Update(Box::new(move |obj: &mut Object| {
        let meta = obj.meta_mut();
        if let Some(refs) = meta.owner_references.as_mut() {
            refs.retain(|r| !owner_uids.contains(&r.uid));
        }
        if meta.owner_references.as_ref().is_some_and(Vec::is_empty) {
            meta.owner_references = None;
        }
    }));
    Action::on(&entry.def, &entry.object, change)
}

/// Adds the garbage collector's and the pod reaper's actions for one object
/// (`attemptToDeleteItem`); returns when its grace period ends, if it is a pod in it.
pub(super) async fn examine(
    shared: &Shared,
    graph: &Graph,
    entry: &Entry,
    actions: &mut Vec<Action>,
) -> Result<Option<Instant>, ApiError> {
    let obj = &entry.object;
    let meta = obj.meta();
    if let Some(deleting) = &meta.deletion_timestamp {
        let uid = meta.uid.clone().unwrap_or_default();
        if has_finalizer(obj, ORPHAN) {
            let dependents: Vec<&Entry> = graph.dependents_of(&uid).collect();
            if dependents.is_empty() {
                actions.push(Action::on(&entry.def, obj, without_finalizer(ORPHAN)));
            }
            actions.extend(
                dependents
                    .into_iter()
                    .map(|d| strip_owners(d, vec![uid.clone()])),
            );
        } else if has_finalizer(obj, FOREGROUND) {
            let blocked = graph.dependents_of(&uid).any(|d| {
                d.object
                    .meta()
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == uid && r.block_owner_deletion == Some(true))
            });
            if !blocked {
                actions.push(Action::on(&entry.def, obj, without_finalizer(FOREGROUND)));
            }
        } else if meta.deletion_grace_period_seconds.unwrap_or(0) > 0 {
            let left = deleting.0.duration_since(Timestamp::now());
            match std::time::Duration::try_from(left) {
                Ok(left) if !left.is_zero() => {
                    return Ok(Some(Instant::now() + left));
                }
                _ => {
                    let options = DeleteOptions {
                        grace_period_seconds: Some(0),
                        ..DeleteOptions::default()
                    };
                    actions.push(Action::on(&entry.def, obj, Change::Delete(options)));
                }
            }
        }
        return Ok(None);
    }
    if !shared.garbage_collection {
        return Ok(None);
    }
    let Some(owners) = meta.owner_references.as_ref().filter(|o| !o.is_empty()) else {
        return Ok(None);
    };
    let mut waiting = false;
    let mut solid = false;
    let mut absent = Vec::new();
    for owner in owners {
        match owner_state(shared, graph, entry, owner).await? {
            Owner::Solid => solid = true,
            Owner::Waiting => waiting = true,
            Owner::Absent => absent.push(owner.uid.clone()),
        }
    }
    if !solid {
        actions.push(collect(entry, graph, waiting));
    } else if !absent.is_empty() {
        // Live owners keep it; the references to the gone ones are dropped.
        actions.push(strip_owners(entry, absent));
    }
    Ok(None)
}
