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

/// The most bytes a pooled encoder or decoder keeps in its buffers between calls: past it (an
/// unusually large object), they are freed after use rather than held by the pool.
const KEPT_BUFFER_BYTES: usize = 1024 * 1024;

/// Idle zstd contexts with their buffers, reused: making a context per object (its tables
/// allocated and cleared) costs more than the compression itself, and fresh buffers per object
/// cost several large allocations (a JSON buffer grown by doubling, a frame buffer of zstd's
/// bound; with glibc, each large allocation also consolidates the thread's freed small chunks).
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

impl<T: Buffered> Pool<T> {
    /// Runs `work` with an idle context, or one `make` makes, and keeps it for the next call.
    fn with<R>(
        &self,
        make: impl FnOnce() -> io::Result<T>,
        work: impl FnOnce(&mut T) -> Result<R, BoxError>,
    ) -> Result<R, BoxError> {
        let idle = self.idle.lock().pop();
        let mut context = match idle {
            Some(context) => context,
            None => make()?,
        };
        let result = work(&mut context);
        context.shrink();
        self.idle.lock().push(context);
        result
    }
}

/// A pooled context whose buffers are dropped when they grew past [`KEPT_BUFFER_BYTES`].
trait Buffered {
    fn shrink(&mut self);
}

/// Frees `buffer` if it grew past [`KEPT_BUFFER_BYTES`].
fn shrink(buffer: &mut Vec<u8>) {
    if buffer.capacity() > KEPT_BUFFER_BYTES {
        *buffer = Vec::new();
    }
}

/// A compression context with the buffers of the JSON and of the compressed frame.
struct Encoder {
    compressor: Compressor<'static>,
    json: Vec<u8>,
    frame: Vec<u8>,
}

impl Encoder {
    fn new(compressor: Compressor<'static>) -> Self {
        Self {
            compressor,
            json: Vec::new(),
            frame: Vec::new(),
        }
    }
}

impl Buffered for Encoder {
    fn shrink(&mut self) {
        shrink(&mut self.json);
        shrink(&mut self.frame);
    }
}

/// A decompression context with the buffer of the JSON and simd-json's buffers.
struct Decoder {
    decompressor: Decompressor<'static>,
    json: Vec<u8>,
    buffers: simd_json::Buffers,
}

impl Decoder {
    fn new(decompressor: Decompressor<'static>) -> Self {
        Self {
            decompressor,
            json: Vec::new(),
            buffers: simd_json::Buffers::default(),
        }
    }

    /// Decompresses `frame` (of `size` bytes of JSON) into the buffer.
    fn decompress(&mut self, frame: &[u8], size: usize) -> io::Result<()> {
        self.json.clear();
        self.json.reserve(size);
        self.decompressor
            .decompress_to_buffer(frame, &mut self.json)
            .map(drop)
    }

    /// Decodes `frame` with simd-json (what the lister-watcher decodes objects with: a quarter
    /// less time than serde_json on realistic pods), which rewrites the buffer in place; JSON
    /// it rejects is decompressed again for serde_json, whose verdict stands.
    fn decode<K: DeserializeOwned>(&mut self, frame: &[u8], size: usize) -> Result<K, BoxError> {
        self.decompress(frame, size)?;
        if let Ok(obj) =
            simd_json::serde::from_slice_with_buffers(&mut self.json, &mut self.buffers)
        {
            return Ok(obj);
        }
        self.decompress(frame, size)?;
        Ok(serde_json::from_slice(&self.json)?)
    }
}

impl Buffered for Decoder {
    fn shrink(&mut self) {
        // simd-json's buffers grow with the input: freed with it.
        if self.json.capacity() > KEPT_BUFFER_BYTES {
            self.json = Vec::new();
            self.buffers = simd_json::Buffers::default();
        }
    }
}

/// Compression and decompression contexts, each with the same dictionary (or none) loaded.
#[derive(Default)]
struct Contexts {
    encoders: Pool<Encoder>,
    decoders: Pool<Decoder>,
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
    /// Writes the object's JSON into the buffer.
    to_json: fn(&K, &mut Vec<u8>) -> serde_json::Result<()>,
    /// The object back from a frame holding its JSON of the given size.
    decode: fn(&mut Decoder, &[u8], usize) -> Result<K, BoxError>,
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
            to_json: |obj, buffer| serde_json::to_writer(buffer, obj),
            decode: Decoder::decode::<K>,
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
            .map(|obj| {
                let mut json = Vec::new();
                (self.to_json)(obj, &mut json).map(|()| json)
            })
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

    /// Encodes and compresses `obj` with `encoder`, into bytes of their own.
    fn encode(&self, encoder: &mut Encoder, obj: &K) -> Result<Arc<[u8]>, BoxError> {
        encoder.json.clear();
        (self.to_json)(obj, &mut encoder.json)?;
        encoder.frame.clear();
        encoder
            .frame
            .reserve(zstd::zstd_safe::compress_bound(encoder.json.len()));
        encoder
            .compressor
            .compress_to_buffer(&encoder.json, &mut encoder.frame)?;
        Ok(Arc::from(encoder.frame.as_slice()))
    }
}

impl<K> Holding<K> for Compact<K> {
    type Held = Arc<[u8]>;

    fn hold(&self, obj: &Arc<K>) -> Result<Arc<[u8]>, BoxError> {
        let encode = |encoder: &mut Encoder| self.encode(encoder, obj);
        match self.dictionary.get() {
            Some(dictionary) => dictionary.contexts.encoders.with(
                || Compressor::with_dictionary(LEVEL, &dictionary.raw).map(Encoder::new),
                encode,
            ),
            None => self
                .plain
                .encoders
                .with(|| Compressor::new(LEVEL).map(Encoder::new), encode),
        }
    }

    fn object(&self, held: Arc<[u8]>) -> Result<Arc<K>, BoxError> {
        let size = zstd::zstd_safe::get_frame_content_size(&held)
            .ok()
            .flatten()
            .ok_or(CompactError::NoContentSize)?;
        let size = usize::try_from(size)?;
        let decode = |decoder: &mut Decoder| (self.decode)(decoder, &held, size);
        let obj = match zstd::zstd_safe::get_dict_id_from_frame(&held) {
            None => self
                .plain
                .decoders
                .with(|| Decompressor::new().map(Decoder::new), decode)?,
            Some(id) => match self.dictionary.get() {
                Some(dictionary) if dictionary.id == id.get() => {
                    dictionary.contexts.decoders.with(
                        || Decompressor::with_dictionary(&dictionary.raw).map(Decoder::new),
                        decode,
                    )?
                }
                _ => return Err(CompactError::UnknownDictionary(id.get()).into()),
            },
        };
        Ok(Arc::new(obj))
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
