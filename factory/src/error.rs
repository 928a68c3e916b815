//! The factory's error type.

/// Errors of the [`SharedInformerFactory`](crate::SharedInformerFactory).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// `start` was called outside a tokio runtime.
    #[error("SharedInformerFactory::start must be called from within a tokio runtime")]
    NoRuntime,
}
