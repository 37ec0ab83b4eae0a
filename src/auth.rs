//! Who is calling: `x-api-key` → account, with a short-lived cache so the hot path does
//! not hit the database on every request. Access levels are enforced from the route table
//! by the usage layer; handlers name the caller with these extractors.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::error::ApiError;
use crate::state::AppState;

pub const LEVEL_VERIFIED: i64 = 10;
pub const LEVEL_ADMIN: i64 = 100;

#[derive(Clone, Debug)]
pub struct Caller {
    pub id: String,
    pub level: i64,
    /// Token balance when the entry was loaded (the ledger in the database is the truth).
    pub balance: i64,
    /// The whole account row, so the viewer's own profile needs no second query.
    pub user: crate::db::users::UserRow,
}

impl Caller {
    pub fn is_admin(&self) -> bool {
        self.level >= LEVEL_ADMIN
    }
}

/// sha256(key) → caller. Entries live 5 s so that `plinth users set-level` from another
/// process is seen within the operator contract's 10 s; in-process changes invalidate.
#[derive(Clone)]
pub struct CallerCache(moka::sync::Cache<String, Arc<Caller>>);

impl Default for CallerCache {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(Duration::from_secs(5))
                .support_invalidation_closures()
                .build(),
        )
    }
}

impl CallerCache {
    pub fn invalidate_user(&self, user_id: &str) {
        let id = user_id.to_owned();
        let _ = self.0.invalidate_entries_if(move |_, c| c.id == id);
    }
}

/// Resolves an API key. `Ok(None)` means the key matches no account.
pub async fn resolve(state: &AppState, key: &str) -> Result<Option<Arc<Caller>>, ApiError> {
    let hash = crate::crypto::sha256_hex(key.as_bytes());
    if let Some(c) = state.callers.0.get(&hash) {
        return Ok(Some(c));
    }
    let Some(caller) = crate::db::users::caller_by_key_hash(&state.db, &hash).await? else {
        return Ok(None);
    };
    let caller = Arc::new(caller);
    state.callers.0.insert(hash, caller.clone());
    Ok(Some(caller))
}

/// Set by the usage layer for every request.
#[derive(Clone, Default)]
pub struct CallerExt(pub Option<Arc<Caller>>);

/// The authenticated caller; 401 without a valid key.
pub struct Viewer(pub Arc<Caller>);

impl<S: Send + Sync> FromRequestParts<S> for Viewer {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match parts.extensions.get::<CallerExt>() {
            Some(CallerExt(Some(c))) => Ok(Viewer(c.clone())),
            _ => Err(ApiError::unauthorized(
                "a valid API key is required in the x-api-key header",
            )),
        }
    }
}

/// The caller when a valid key was sent, for public routes that attribute optionally.
pub struct MaybeViewer(pub Option<Arc<Caller>>);

impl<S: Send + Sync> FromRequestParts<S> for MaybeViewer {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(MaybeViewer(
            parts
                .extensions
                .get::<CallerExt>()
                .and_then(|c| c.0.clone()),
        ))
    }
}
