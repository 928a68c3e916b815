//! Errors of popping from a queue.

/// What a pop's process function returns on failure.
///
/// [`Requeue`](ProcessError::Requeue) puts the item back into the queue (unless a newer item took
/// its key meanwhile) before the inner error is handed to the caller of `pop`; [`Fail`](ProcessError::Fail)
/// drops the item.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError<E> {
    /// Put the item back and report `E`.
    #[error("requeued: {0}")]
    Requeue(E),
    /// Drop the item and report `E`.
    #[error("{0}")]
    Fail(E),
}

impl<E> From<E> for ProcessError<E> {
    /// A plain error fails the item, so `?` works inside a process function.
    fn from(e: E) -> Self {
        Self::Fail(e)
    }
}

/// Why a pop did not succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PopError<E> {
    /// The queue is closed and has nothing left.
    #[error("queue closed")]
    Closed,
    /// The process function failed with [`ProcessError::Requeue`]; the item was put back.
    #[error("process failed, item requeued: {0}")]
    Requeued(E),
    /// The process function failed with [`ProcessError::Fail`]; the item was dropped.
    #[error("process failed: {0}")]
    Failed(E),
}

impl<E> PopError<E> {
    /// Whether the queue is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed)
    }

    /// The process function's error, if any.
    pub fn into_inner(self) -> Option<E> {
        match self {
            Self::Closed => None,
            Self::Requeued(e) | Self::Failed(e) => Some(e),
        }
    }
}

/// Splits a process outcome into the value to return and whether to put the item back.
pub(crate) fn settle<T, E>(outcome: Result<T, ProcessError<E>>) -> (Result<T, PopError<E>>, bool) {
    match outcome {
        Ok(v) => (Ok(v), false),
        Err(ProcessError::Requeue(e)) => (Err(PopError::Requeued(e)), true),
        Err(ProcessError::Fail(e)) => (Err(PopError::Failed(e)), false),
    }
}
