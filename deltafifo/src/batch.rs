//! [`Batch`]: popped deltas with the key the queue computed for each, so that the consumer never
//! computes it again.

use std::fmt;
use std::ops::Deref;

use kcache_store::ObjectKey;

use crate::delta::Delta;

/// The keys of a [`Batch`].
#[derive(Clone, Copy)]
enum Keys<'a> {
    /// One key per delta (`None` for a relist, resync or bookmark of an atomic queue).
    Each(&'a [Option<ObjectKey>]),
    /// One key for every delta (a [`DeltaFifo`](crate::DeltaFifo) pops one key's deltas).
    All(&'a ObjectKey),
    /// Not known: the consumer computes them.
    Unknown,
}

/// Deltas handed to a process function with the key the queue computed for each
/// ([`RealFifo::pop_keyed_batch`](crate::RealFifo::pop_keyed_batch),
/// [`DeltaFifo::pop_keyed`](crate::DeltaFifo::pop_keyed)). It dereferences to the deltas.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_deltafifo::{ProcessError, RealFifo, RealFifoOptions};
/// use kcache_store::Store;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let fifo = RealFifo::<ConfigMap>::new(RealFifoOptions::default());
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// cm.metadata.name = Some("a".into());
/// fifo.add(Arc::new(cm)).unwrap();
/// let keys = fifo
///     .pop_keyed_batch(|batch, _| {
///         let keys = batch.iter().map(|(key, _)| key.map(|k| k.to_string())).collect::<Vec<_>>();
///         Ok::<_, ProcessError<()>>(keys)
///     })
///     .await
///     .unwrap();
/// assert_eq!(keys, [Some("default/a".to_string())]);
/// # }
/// ```
pub struct Batch<'a, K> {
    deltas: &'a [Delta<K>],
    keys: Keys<'a>,
}

impl<'a, K> Batch<'a, K> {
    /// Deltas whose keys are not known (the consumer computes them).
    pub fn unkeyed(deltas: &'a [Delta<K>]) -> Self {
        Self {
            deltas,
            keys: Keys::Unknown,
        }
    }

    /// Deltas with one key each, in order (`None` where a delta has no key).
    pub(crate) fn keyed(deltas: &'a [Delta<K>], keys: &'a [Option<ObjectKey>]) -> Self {
        Self {
            deltas,
            keys: Keys::Each(keys),
        }
    }

    /// Deltas of one key.
    pub(crate) fn of_key(deltas: &'a [Delta<K>], key: &'a ObjectKey) -> Self {
        Self {
            deltas,
            keys: Keys::All(key),
        }
    }

    /// The deltas.
    pub fn deltas(&self) -> &'a [Delta<K>] {
        self.deltas
    }

    /// Each delta with the key the queue computed for it, if known.
    pub fn iter(&self) -> impl Iterator<Item = (Option<&'a ObjectKey>, &'a Delta<K>)> + 'a {
        let keys = self.keys;
        self.deltas.iter().enumerate().map(move |(i, delta)| {
            let key = match keys {
                Keys::Each(keys) => keys.get(i).and_then(Option::as_ref),
                Keys::All(key) => Some(key),
                Keys::Unknown => None,
            };
            (key, delta)
        })
    }
}

impl<K> fmt::Debug for Batch<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keyed = !matches!(self.keys, Keys::Unknown);
        f.debug_struct("Batch")
            .field("len", &self.deltas.len())
            .field("keyed", &keyed)
            .finish()
    }
}

impl<K> Deref for Batch<'_, K> {
    type Target = [Delta<K>];

    fn deref(&self) -> &[Delta<K>] {
        self.deltas
    }
}
