//! The one error type of the storage ports behind the actors.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Why a store (the database behind an actor) failed. Cloneable, because one failed
/// batch answers every caller waiting on it; the source error is kept whole for logs and
/// for callers that classify it (`downcast_ref`).
#[derive(Clone)]
pub struct StoreError(Arc<dyn Error + Send + Sync>);

impl StoreError {
    pub fn new(e: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        StoreError(Arc::from(e.into()))
    }

    /// The source error, when it is of type `E` (for example `sqlx::Error`).
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.0)
    }
}

/// Two store errors are equal when they say the same (test assertions compare answers).
impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}
impl Eq for StoreError {}
