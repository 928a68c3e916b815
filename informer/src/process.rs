//! [`process_deltas`]: the delta processing shared by every informer.

use std::collections::HashSet;
use std::sync::Arc;

use kcache_deltafifo::{Delta, DeltaType};
use kcache_store::{DeletedFinalStateUnknown, Indexer, MaybeTombstone, Store, StoreError};
use kube_core::Resource;

use crate::handler::ResourceEventHandler;

/// Applies popped deltas to `indexer` and tells `handler` (client-go's `processDeltas` and
/// `processReplacedAllInfo`):
///
/// - Added, Updated, Sync, Replaced: update and `on_update(old, new)` if the key is stored,
///   else add and `on_add(obj, is_in_initial_list)`;
/// - Deleted: delete (by the tombstone's key for a tombstone) and `on_delete(obj or tombstone)`;
/// - ReplacedAll: the indexer is replaced in one step; then `on_delete` with a tombstone for
///   each vanished object, `on_update`/`on_add` for each listed object in list order;
/// - SyncAll: `on_update(o, o)` for every stored object; Bookmark: the indexer's resource version.
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
    for delta in deltas {
        match delta {
            Delta::Object {
                kind: DeltaType::Deleted,
                object,
            } => {
                match object {
                    MaybeTombstone::Tombstone(t) => {
                        indexer.delete_by_key(&t.key);
                    }
                    MaybeTombstone::Object(o) => indexer.delete(Arc::clone(o))?,
                }
                handler.on_delete(object);
            }
            Delta::Object { object, .. } => {
                let obj = object.object();
                match indexer.get(obj)? {
                    Some(old) => {
                        indexer.update(Arc::clone(obj))?;
                        handler.on_update(&old, obj);
                    }
                    None => {
                        indexer.add(Arc::clone(obj))?;
                        handler.on_add(obj, is_in_initial_list);
                    }
                }
            }
            Delta::ReplacedAll {
                resource_version,
                objects,
            } => {
                process_replaced_all(
                    handler,
                    indexer,
                    resource_version,
                    objects,
                    is_in_initial_list,
                )?;
            }
            Delta::SyncAll => {
                for obj in indexer.list() {
                    handler.on_update(&obj, &obj);
                }
            }
            Delta::Bookmark { resource_version } => indexer.bookmark(resource_version),
        }
    }
    Ok(())
}

fn process_replaced_all<K, H>(
    handler: &H,
    indexer: &Indexer<K>,
    resource_version: &str,
    objects: &Arc<[Arc<K>]>,
    is_in_initial_list: bool,
) -> Result<(), StoreError>
where
    K: Resource + Send + Sync + 'static,
    H: ResourceEventHandler<K> + ?Sized,
{
    let keys = objects
        .iter()
        .map(|o| indexer.key_of(o))
        .collect::<Result<Vec<_>, _>>()?;
    let listed: HashSet<&str> = keys.iter().map(String::as_str).collect();
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
    let olds: Vec<Option<Arc<K>>> = keys.iter().map(|k| Store::get_by_key(indexer, k)).collect();
    indexer.replace(objects.to_vec(), resource_version)?;
    for tombstone in deletions {
        handler.on_delete(&MaybeTombstone::Tombstone(tombstone));
    }
    for (old, new) in olds.into_iter().zip(objects.iter()) {
        match old {
            Some(old) => handler.on_update(&old, new),
            None => handler.on_add(new, is_in_initial_list),
        }
    }
    Ok(())
}
