//! The compact holding (feature `compact`): each object held as its JSON compressed by zstd with
//! a dictionary trained on the store's own objects, decoded on read.
//!
//! The dictionary is trained once, at the first replace (an informer's initial list) of at least
//! [`MIN_TRAINING_OBJECTS`] objects, from up to [`TRAINING_SAMPLES`] of them spread over the list.
//! Objects held before (written one by one into an empty store) are compressed without a
//! dictionary and stay readable: a zstd frame names the dictionary it needs.

use std::fmt;
use std::io;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use zstd::bulk::{Compressor, Decompressor};

use crate::error::BoxError;
use crate::holding::Holding;

/// The fewest objects a replace must hold for the dictionary to be trained from it.
pub(crate) const MIN_TRAINING_OBJECTS: usize = 16;
/// The most objects a dictionary is trained from.
pub(crate) const TRAINING_SAMPLES: usize = 1_000;
/// The largest dictionary (zstd's default size).
const MAX_DICTIONARY_BYTES: usize = 110 * 1024;
/// zstd's compression level: 3, its default, measured against 1 (see the store's README).
const LEVEL: i32 = 3;

/// Idle zstd contexts, reused: making one per object (its tables allocated and cleared) costs
/// more than the compression itself.
struct Pool<T> {
    idle: Mutex<Vec<T>>,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
        }
    }
}

impl<T> Pool<T> {
    /// Runs `work` with an idle context, or one `make` makes, and keeps it for the next call.
    fn with<R>(
        &self,
        make: impl FnOnce() -> io::Result<T>,
        work: impl FnOnce(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let idle = self.idle.lock().pop();
        let mut context = match idle {
            Some(context) => context,
            None => make()?,
        };
        let result = work(&mut context);
        self.idle.lock().push(context);
        result
    }
}

/// Compression and decompression contexts, each with the same dictionary (or none) loaded.
#[derive(Default)]
struct Contexts {
    compressors: Pool<Compressor<'static>>,
    decompressors: Pool<Decompressor<'static>>,
}

/// A trained dictionary and the contexts that have it loaded.
struct Dictionary {
    id: u32,
    raw: Vec<u8>,
    contexts: Contexts,
}

/// Why held bytes could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
enum CompactError {
    /// The frame names a dictionary this store does not have.
    #[error("the compressed object needs dictionary {0}, which this store does not have")]
    UnknownDictionary(u32),
    /// The frame does not say how long the object is.
    #[error("the compressed object has no content size")]
    NoContentSize,
}

/// Holds objects as zstd-compressed JSON.
pub(crate) struct Compact<K> {
    to_json: fn(&K) -> serde_json::Result<Vec<u8>>,
    from_json: fn(&[u8]) -> serde_json::Result<K>,
    dictionary: OnceLock<Dictionary>,
    /// The contexts of objects compressed without a dictionary.
    plain: Contexts,
}

impl<K> fmt::Debug for Compact<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compact")
            .field("dictionary", &self.dictionary.get().map(|d| d.id))
            .finish()
    }
}

impl<K: Serialize + DeserializeOwned> Compact<K> {
    /// A compact holding for `K`, without a dictionary until the first replace.
    pub(crate) fn new() -> Self {
        Self {
            to_json: |obj| serde_json::to_vec(obj),
            from_json: |bytes| serde_json::from_slice(bytes),
            dictionary: OnceLock::new(),
            plain: Contexts::default(),
        }
    }
}

impl<K> Compact<K> {
    fn train(&self, objects: &[&K]) -> Result<Dictionary, BoxError> {
        let step = objects.len().div_ceil(TRAINING_SAMPLES).max(1);
        let samples = objects
            .iter()
            .step_by(step)
            .map(|obj| (self.to_json)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let total: usize = samples.iter().map(Vec::len).sum();
        // zstd wants about ten times the dictionary's size in samples.
        let size = (total / 10).min(MAX_DICTIONARY_BYTES);
        let raw = zstd::dict::from_samples(&samples, size)?;
        let id = zstd::zstd_safe::get_dict_id_from_dict(&raw).map_or(0, |id| id.get());
        Ok(Dictionary {
            id,
            raw,
            contexts: Contexts::default(),
        })
    }
}

impl<K> Holding<K> for Compact<K> {
    type Held = Arc<[u8]>;

    fn hold(&self, obj: &Arc<K>) -> Result<Arc<[u8]>, BoxError> {
        let json = (self.to_json)(obj)?;
        let compressed = match self.dictionary.get() {
            Some(dictionary) => dictionary.contexts.compressors.with(
                || Compressor::with_dictionary(LEVEL, &dictionary.raw),
                |c| c.compress(&json),
            )?,
            None => self
                .plain
                .compressors
                .with(|| Compressor::new(LEVEL), |c| c.compress(&json))?,
        };
        Ok(compressed.into())
    }

    fn object(&self, held: Arc<[u8]>) -> Result<Arc<K>, BoxError> {
        let size = zstd::zstd_safe::get_frame_content_size(&held)
            .ok()
            .flatten()
            .ok_or(CompactError::NoContentSize)?;
        let capacity = usize::try_from(size)?;
        let decompress = |d: &mut Decompressor<'static>| d.decompress(&held, capacity);
        let json = match zstd::zstd_safe::get_dict_id_from_frame(&held) {
            None => self
                .plain
                .decompressors
                .with(Decompressor::new, decompress)?,
            Some(id) => match self.dictionary.get() {
                Some(dictionary) if dictionary.id == id.get() => {
                    dictionary.contexts.decompressors.with(
                        || Decompressor::with_dictionary(&dictionary.raw),
                        decompress,
                    )?
                }
                _ => return Err(CompactError::UnknownDictionary(id.get()).into()),
            },
        };
        Ok(Arc::new((self.from_json)(&json)?))
    }

    fn prepare<'a>(&self, objects: impl Iterator<Item = &'a K>)
    where
        K: 'a,
    {
        if self.dictionary.get().is_some() {
            return;
        }
        let objects: Vec<&K> = objects.collect();
        if objects.len() < MIN_TRAINING_OBJECTS {
            return;
        }
        match self.train(&objects) {
            Ok(dictionary) => {
                tracing::debug!(id = dictionary.id, "compact cache: dictionary trained");
                // A concurrent replace may have trained one first: either serves.
                let _ = self.dictionary.set(dictionary);
            }
            Err(error) => tracing::warn!(
                error = &*error as &dyn std::error::Error,
                "compact cache: no dictionary trained; objects are compressed without one"
            ),
        }
    }
}
