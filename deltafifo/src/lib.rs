//! The queues of kcache between a reflector and its informer (client-go's `cache.FIFO`,
//! `cache.DeltaFIFO` and `cache.RealFIFO`). The controller work queue is in `kcache-workqueue`.
//!
//! - [`Queue`] is a [`Store`](kcache_store::Store) that can be popped: the reflector writes into
//!   it exactly as into an indexer, and the informer's process loop calls [`Queue::pop`], which
//!   waits asynchronously and runs the caller's process function under the queue's lock.
//! - [`Fifo`] keeps the latest object of each key; [`DeltaFifo`] keeps every change of each key
//!   ([`Deltas`]) in the key's place in the queue, turns relists into `Sync`/`Replaced` deltas and
//!   [`DeletedFinalStateUnknown`](kcache_store::DeletedFinalStateUnknown) tombstones; [`RealFifo`]
//!   keeps every event in arrival order, with an atomic mode and batched pops. A popped
//!   [`Batch`] hands each delta out with the key the queue computed when it was queued, so that
//!   the consumer never computes it again. Objects are queued as given (a transform runs where
//!   they are made, in the lister-watcher) and a queue records no resource version.
//!
//! Everything waits on tokio primitives without blocking a thread; the store-facing methods are
//! short and synchronous. Objects are shared `Arc<K>`s, never copied.
//!
//! An informer-like loop: a reflector would call `replace`, `add`, `update`, `delete`; the loop
//! pops the deltas and applies them to the indexer.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kcache_deltafifo::{DeltaFifo, DeltaFifoOptions, DeltaType, PopError, ProcessError, Queue};
//! use kcache_store::{Indexer, KnownObjects, MaybeTombstone, Store, StoreError};
//!
//! fn config_map(name: &str) -> Arc<ConfigMap> {
//!     let mut cm = ConfigMap::default();
//!     cm.metadata.namespace = Some("default".into());
//!     cm.metadata.name = Some(name.into());
//!     Arc::new(cm)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let indexer = Arc::new(Indexer::<ConfigMap>::default());
//! let known: Arc<dyn KnownObjects<ConfigMap>> = indexer.clone();
//! let fifo = DeltaFifo::new(DeltaFifoOptions::default().known_objects(known));
//!
//! // What a reflector does: the initial list, then watch events.
//! fifo.replace(vec![config_map("a"), config_map("b")], "10").unwrap();
//! fifo.delete(config_map("a")).unwrap();
//! fifo.close();
//!
//! // What an informer does: pop until closed, apply each delta to the indexer.
//! loop {
//!     let popped = fifo.pop(|deltas, _is_in_initial_list| {
//!         for delta in deltas {
//!             match (delta.kind(), delta.object()) {
//!                 (DeltaType::Deleted, Some(MaybeTombstone::Tombstone(t))) => {
//!                     indexer.delete_by_key(&t.key);
//!                 }
//!                 (DeltaType::Deleted, Some(obj)) => indexer.delete(obj.object().clone())?,
//!                 (_, Some(obj)) => indexer.update(obj.object().clone())?,
//!                 (_, None) => {}
//!             }
//!         }
//!         Ok::<_, ProcessError<StoreError>>(())
//!     });
//!     match popped.await {
//!         Ok(()) => {}
//!         Err(PopError::Closed) => break,
//!         Err(e) => panic!("{e}"),
//!     }
//! }
//! assert_eq!(indexer.len(), 1);
//! assert!(fifo.has_synced());
//! # }
//! ```
//!
//! Process functions passed to `pop` run under the queue's lock: they must be short and must not
//! call back into the same queue.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod batch;
mod delta;
mod delta_fifo;
mod error;
mod fifo;
mod keyed;
mod pages;
mod population;
mod queue;
mod queue_core;
mod real_fifo;

pub use batch::Batch;
pub use delta::{Delta, DeltaType, Deltas};
pub use delta_fifo::{DeltaFifo, DeltaFifoOptions};
pub use error::{PopError, ProcessError};
pub use fifo::Fifo;
pub use pages::ReplacePages;
pub use queue::Queue;
pub use real_fifo::{DEFAULT_BATCH_SIZE, RealFifo, RealFifoOptions};
