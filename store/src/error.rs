//! The store's error type.

use std::fmt;

/// A boxed error from user code (index functions, transforms).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The message of a caught panic (`"panicked: <message>"`), for the places that call user code
/// (index functions here, event handlers in kcache-informer) and turn its panics into errors.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload");
    format!("panicked: {message}")
}

/// Why a key could not be computed for an object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The object has no `metadata.name`.
    #[error("object has no name")]
    MissingName,
    /// A key string did not have the form `name` or `namespace/name`.
    #[error("unexpected key format: {0:?}")]
    InvalidKey(String),
    /// An index function used as a key function did not yield exactly one value.
    #[error("index function used as key function returned {0} values, expected exactly one")]
    NotExactlyOneValue(usize),
    /// There is no object to compute a key from (for example, queued deltas holding only
    /// whole-list deltas).
    #[error("no object to compute a key from")]
    NoObject,
    /// An index function used as a key function failed.
    #[error("index function used as key function failed")]
    IndexFunc(#[source] BoxError),
}

/// Errors of [`Store`](crate::Store) and [`Indexer`](crate::Indexer) operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The key function rejected an object.
    #[error("couldn't create key for object")]
    Key(#[from] KeyError),
    /// The named index does not exist.
    #[error("index with name {0:?} does not exist")]
    UnknownIndex(String),
    /// An index function failed; no index was changed.
    #[error("unable to calculate an index entry for key {key:?} on index {index:?}")]
    IndexFunc {
        /// The key of the object being indexed.
        key: String,
        /// The name of the index whose function failed.
        index: String,
        /// What the index function returned.
        #[source]
        source: BoxError,
    },
    /// A compact store could not encode an object it was given; nothing was changed.
    #[error("unable to encode the object with key {key:?} for the compact cache")]
    Encode {
        /// The key of the object.
        key: String,
        /// Why it could not be encoded.
        #[source]
        source: BoxError,
    },
    /// A compact store could not decode an object it holds (its type does not round-trip
    /// through JSON, or the held bytes are damaged).
    #[error("unable to decode the object held under key {key:?} by the compact cache")]
    Decode {
        /// The key the object is held under.
        key: String,
        /// Why it could not be decoded.
        #[source]
        source: BoxError,
    },
    /// `add_indexers` was given an index name that already exists.
    #[error("indexer conflict: {0:?}")]
    IndexerConflict(Vec<String>),
    /// Some operations of a [`transaction`](crate::Store::transaction) failed.
    #[error(transparent)]
    Transaction(#[from] TransactionError),
}

/// The result of a partly failed [`transaction`](crate::Store::transaction): which operations
/// were applied and why the others were not.
#[derive(Debug)]
pub struct TransactionError {
    /// Positions (in the transaction) of the operations that were applied.
    pub successful: Vec<usize>,
    /// Positions and errors of the operations that were not applied.
    pub errors: Vec<(usize, StoreError)>,
}

impl fmt::Display for TransactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "transaction: {} of {} operations failed",
            self.errors.len(),
            self.errors.len() + self.successful.len()
        )?;
        for (i, e) in &self.errors {
            write!(f, "; #{i}: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TransactionError {}
