//! Applying popped deltas to the indexer, each change becoming the notification it is (client-go's
//! `processDeltas` and `processReplacedAllInfo` in `controller.go`).

use std::collections::HashSet;
use std::sync::Arc;

use kcache_deltafifo::{Batch, Delta, DeltaType};
use kcache_store::{
    DeletedFinalStateUnknown, Indexer, MaybeTombstone, ObjectKey, Store, StoreError,
};
use kube_core::Resource;

use crate::handler::{InformerEvent, ResourceEventHandler};
use crate::panics::call_handler;

/// Applies popped deltas to `indexer` and calls `handler` for each change (client-go's
/// `processDeltas`; a panic in the handler is caught and logged). Each change is the
/// [`InformerEvent`] named here, dispatched to the handler's matching method:
///
/// - Added, Updated, Sync, Replaced: stored (under the key the queue computed, else computed
///   once; the replaced object returned by the same write); `Update { old, new }` if something was replaced, else
///   `Add { obj, is_in_initial_list }`;
/// - Deleted: removed (by the tombstone's key for a tombstone), `Delete(obj or tombstone)`;
/// - ReplacedAll: the indexer is replaced in one step; then `Delete` with a tombstone for each
///   vanished object, `Update`/`Add` for each listed object in list order;
/// - ReplaceEnd (the end of a relist queued in pages, after its `Replaced` deltas): `Delete`
///   with a tombstone for each stored object whose key was not listed; the indexer is current at
///   the list's resource version;
/// - SyncAll: `Update(o, o)` for every stored object; Bookmark: the indexer's resource version.
///
/// A delta that fails (a failing or panicking index function) is skipped, the others are
/// applied; the first error is returned.
pub fn process_deltas<K, H>(
    handler: &H,
    indexer: &Indexer<K>,
    deltas: &[Delta<K>],
    is_in_initial_list: bool,
) -> Result<(), StoreError>
where
    K: Resource + Send + Sync + 'static,
    H: ResourceEventHandler<K> + ?Sized,
{
    let name = crate::controller::type_name::<K>();
    let batch = Batch::unkeyed(deltas);
    apply_deltas(indexer, &batch, is_in_initial_list, |event| {
        call_handler(&name, handler, &event);
    })
}

/// Applies popped deltas to `indexer` and hands each change to `notify` as an
/// [`InformerEvent`], by the rules of [`process_deltas`]. A delta's key is the one the queue
/// computed, when the batch has it: it is not computed again.
pub(crate) fn apply_deltas<K>(
    indexer: &Indexer<K>,
    deltas: &Batch<'_, K>,
    is_in_initial_list: bool,
    mut notify: impl FnMut(InformerEvent<K>),
) -> Result<(), StoreError>
where
    K: Resource + Send + Sync + 'static,
{
    // The objects of a relist queued in pages are stored one by one: a compact cache trains
    // its dictionary on the first of them, as it would on a whole replace.
    indexer.prepare(deltas.iter().filter_map(|(_, delta)| match delta {
        Delta::Object {
            kind: DeltaType::Replaced,
            object: MaybeTombstone::Object(obj),
        } => Some(obj),
        _ => None,
    }));
    let mut first_error = None;
    for (key, delta) in deltas.iter() {
        if let Err(err) = apply_one(indexer, key, delta, is_in_initial_list, &mut notify) {
            first_error.get_or_insert(err);
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn apply_one<K>(
    indexer: &Indexer<K>,
    key: Option<&ObjectKey>,
    delta: &Delta<K>,
    is_in_initial_list: bool,
    notify: &mut impl FnMut(InformerEvent<K>),
) -> Result<(), StoreError>
where
    K: Resource + Send + Sync + 'static,
{
    match delta {
        Delta::Object {
            kind: DeltaType::Deleted,
            object,
        } => {
            match object {
                MaybeTombstone::Tombstone(t) => {
                    indexer.delete_by_key(&t.key);
                }
                MaybeTombstone::Object(o) => match key {
                    Some(key) => indexer.delete_keyed(key, o),
                    None => indexer.delete(Arc::clone(o))?,
                },
            }
            notify(InformerEvent::Delete(object.clone()));
        }
        Delta::Object { object, .. } => {
            let obj = object.object();
            let old = match key {
                Some(key) => indexer.upsert_keyed(key, Arc::clone(obj))?,
                None => indexer.upsert(Arc::clone(obj))?,
            };
            notify(match old {
                Some(old) => InformerEvent::Update {
                    old,
                    new: Arc::clone(obj),
                },
                None => InformerEvent::Add {
                    obj: Arc::clone(obj),
                    is_in_initial_list,
                },
            });
        }
        Delta::ReplacedAll {
            resource_version,
            objects,
        } => replace_all(
            indexer,
            resource_version,
            objects,
            is_in_initial_list,
            notify,
        )?,
        Delta::ReplaceEnd {
            resource_version,
            listed,
        } => {
            for key in Store::list_keys(indexer) {
                if listed.contains(&key) {
                    continue;
                }
                if let Some(obj) = indexer.delete_by_key(&key) {
                    notify(InformerEvent::Delete(MaybeTombstone::Tombstone(
                        DeletedFinalStateUnknown {
                            key: key.to_string(),
                            obj,
                        },
                    )));
                }
            }
            indexer.bookmark(resource_version);
        }
        Delta::SyncAll => {
            for obj in indexer.list() {
                notify(InformerEvent::Update {
                    old: Arc::clone(&obj),
                    new: obj,
                });
            }
        }
        Delta::Bookmark { resource_version } => indexer.bookmark(resource_version),
    }
    Ok(())
}

/// A relist applied in one step (client-go's `processReplacedAllInfo`): the keys are computed
/// once, the indexer replaced, then the vanished objects' tombstones and the listed objects'
/// updates or adds are notified.
fn replace_all<K>(
    indexer: &Indexer<K>,
    resource_version: &str,
    objects: &Arc<[Arc<K>]>,
    is_in_initial_list: bool,
    notify: &mut impl FnMut(InformerEvent<K>),
) -> Result<(), StoreError>
where
    K: Resource + Send + Sync + 'static,
{
    let keyed = objects
        .iter()
        .map(|o| Ok((indexer.key_of(o)?, Arc::clone(o))))
        .collect::<Result<Vec<_>, StoreError>>()?;
    let listed: HashSet<&str> = keyed.iter().map(|(k, _)| k.as_str()).collect();
    let deletions: Vec<DeletedFinalStateUnknown<K>> = Store::list_keys(indexer)
        .into_iter()
        .filter(|key| !listed.contains(&**key))
        .filter_map(|key| {
            Store::get_by_key(indexer, &key).map(|obj| DeletedFinalStateUnknown {
                key: key.to_string(),
                obj,
            })
        })
        .collect();
    let olds: Vec<Option<Arc<K>>> = keyed
        .iter()
        .map(|(k, _)| Store::get_by_key(indexer, k))
        .collect();
    indexer.replace_keyed(keyed, resource_version)?;
    for tombstone in deletions {
        notify(InformerEvent::Delete(MaybeTombstone::Tombstone(tombstone)));
    }
    for (old, new) in olds.into_iter().zip(objects.iter()) {
        notify(match old {
            Some(old) => InformerEvent::Update {
                old,
                new: Arc::clone(new),
            },
            None => InformerEvent::Add {
                obj: Arc::clone(new),
                is_in_initial_list,
            },
        });
    }
    Ok(())
}
