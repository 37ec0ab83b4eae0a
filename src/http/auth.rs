//! Who is calling: `x-api-key` → account, with a short-lived cache so the hot path does
//! not hit the database on every request. Access levels are enforced from the route table
//! by the usage layer; handlers name the caller with these extractors.

use std::sync::Arc;

use sha2::Digest;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::http::error::ApiError;
use crate::state::AppState;

pub use crate::caller::{Caller, LEVEL_ADMIN, LEVEL_VERIFIED};
pub use crate::domain::buyers::takes_guests;
use crate::domain::checkout::Shopper;

/// Resolves an API key. `Ok(None)` means the key matches no account. Cached by
/// sha256(key) (`crate::db::cache`): a change to the account is announced to every process,
/// and an entry lives at most 5 s, so `plinth users set-level` on SQLite is seen within
/// the operator contract's 10 s.
pub async fn resolve(state: &AppState, key: &str) -> Result<Option<Arc<Caller>>, ApiError> {
    // Keyed by the raw digest: a hit needs no hex string.
    let digest: [u8; 32] = sha2::Sha256::digest(key.as_bytes()).into();
    let cache = &state.caches.callers;
    if let Some(c) = cache.get(&digest) {
        return Ok(Some(c));
    }
    let ticket = cache.ticket(&digest);
    let Some(caller) = crate::db::users::by_key_hash(&state.db, &hex::encode(digest))
        .await?
        .map(Caller::of)
    else {
        return Ok(None);
    };
    let caller = Arc::new(caller);
    cache.fill(ticket, digest, caller.clone());
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

/// The caller when a valid key was sent, on public routes that show more to some callers.
pub struct MaybeCaller(pub Option<Arc<Caller>>);

impl<S: Send + Sync> FromRequestParts<S> for MaybeCaller {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(MaybeCaller(
            parts
                .extensions
                .get::<CallerExt>()
                .and_then(|c| c.0.clone()),
        ))
    }
}

/// The organization a request names and the caller's role in it. `ADMIN` requires the
/// organization's admin role; platform administrators pass both guards. The organization
/// is named, in this order, by `domain`, `organizationId`, `organization_id` or `id` in
/// the body (or, for GET, the query string); the whole body is also `body`.
pub struct InOrg<T, const ADMIN: bool> {
    pub org: crate::db::organizations::OrgRow,
    pub caller: Arc<Caller>,
    /// `member` or `admin`; `None` for a platform admin who is not a member.
    pub role: Option<crate::states::OrgRole>,
    pub body: T,
}

/// OrgMember access: a member (or admin) of the named organization.
pub type OrgMember<T> = InOrg<T, false>;
/// OrgAdmin access: an admin of the named organization.
pub type OrgAdmin<T> = InOrg<T, true>;

/// Keys that name the organization, most specific first.
const ORG_KEYS: [&str; 4] = ["domain", "organizationId", "organization_id", "id"];

impl<S, T, const ADMIN: bool> axum::extract::FromRequest<S> for InOrg<T, ADMIN>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned,
    AppState: axum::extract::FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        use axum::extract::FromRef;
        let app = AppState::from_ref(state);
        let caller = match req.extensions().get::<CallerExt>() {
            Some(CallerExt(Some(c))) => c.clone(),
            _ => {
                return Err(ApiError::unauthorized(
                    "a valid API key is required in the x-api-key header",
                ))
            }
        };
        let object = if req.method() == axum::http::Method::GET {
            let query = req.uri().query().unwrap_or("");
            let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
                .map_err(|e| ApiError::bad_request(format!("malformed query string: {e}")))?;
            let mut m = serde_json::Map::new();
            for (k, v) in pairs {
                m.insert(k, serde_json::Value::String(v));
            }
            m
        } else {
            crate::http::extract::read_object(req, state).await?
        };
        let (key, value) = ORG_KEYS
            .iter()
            .find_map(|k| object.get(*k).map(|v| (*k, v.clone())))
            .ok_or_else(|| ApiError::bad_request("`domain` (or `organizationId`) is required"))?;
        let value = value
            .as_str()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| ApiError::bad_request(format!("`{key}` must be a non-empty string")))?
            .to_owned();
        let org = if key == "domain" {
            crate::db::organizations::by_domain(&app.db, &value).await?
        } else {
            crate::db::organizations::by_id(&app.db, &value).await?
        }
        .ok_or_else(|| ApiError::not_found("organization not found"))?;
        let role = crate::db::organizations::role_of(&app.db, &org.id, &caller.id).await?;
        if !caller.is_admin() {
            match role {
                None => {
                    return Err(ApiError::forbidden(
                        "you are not a member of this organization",
                    ))
                }
                Some(crate::states::OrgRole::Admin) => {}
                Some(_) if ADMIN => {
                    return Err(ApiError::forbidden(
                        "this requires an admin of the organization",
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(InOrg {
            org,
            caller,
            role,
            body: crate::http::extract::from_object(object)?,
        })
    }
}

// ---- guest sessions (marketplace guest checkout, purchases) ----

/// A live guest session: its id and its organization's id and domain.
pub struct Guest {
    pub id: String,
    pub org_id: String,
    pub domain: String,
}

/// "Key or guest session" (purchases): the caller when a valid API key was sent, else
/// a live guest session (401 with neither).
pub enum Purchaser {
    User(Arc<Caller>),
    Guest(Guest),
}

impl Purchaser {
    /// Where this buyer's records of `what` live (idempotency scopes):
    /// `<what>:<user id>` or `<what>:guest:<session id>`.
    pub fn scope(&self, what: &str) -> String {
        match self {
            Purchaser::User(c) => format!("{what}:{}", c.id),
            Purchaser::Guest(g) => format!("{what}:guest:{}", g.id),
        }
    }

    /// The buyer as the checkout's rules take it.
    pub fn shopper(&self) -> Shopper<'_> {
        match self {
            Purchaser::User(c) => Shopper::User(c),
            Purchaser::Guest(g) => Shopper::Guest {
                id: &g.id,
                domain: &g.domain,
            },
        }
    }
}

/// A guest session from `Authorization: Bearer <token>`: 401 when the token is missing,
/// unknown or expired.
impl axum::extract::FromRequestParts<AppState> for Guest {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &AppState,
    ) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ApiError::unauthorized(
                    "send the guest session token as `Authorization: Bearer <token>`",
                )
            })?;
        let hash = crate::crypto::sha256_hex(token.as_bytes());
        let (id, org_id) = crate::db::marketplace::guest_session(&app.db, &hash)
            .await?
            .ok_or_else(|| ApiError::unauthorized("the guest session is unknown or expired"))?;
        let org = crate::db::organizations::by_id(&app.db, &org_id)
            .await?
            .ok_or_else(|| ApiError::unauthorized("the guest session is unknown or expired"))?;
        if !takes_guests(&org) {
            return Err(ApiError::forbidden(
                "this organization no longer takes guest checkouts",
            ));
        }
        Ok(Guest {
            id,
            org_id: org.id,
            domain: org.domain,
        })
    }
}

/// A purchaser: the caller with a valid key, else a live guest session.
impl axum::extract::FromRequestParts<AppState> for Purchaser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        if let Some(CallerExt(Some(c))) = parts.extensions.get::<CallerExt>() {
            return Ok(Purchaser::User(c.clone()));
        }
        if !parts
            .headers
            .contains_key(axum::http::header::AUTHORIZATION)
        {
            return Err(ApiError::unauthorized(
                "send an API key (x-api-key) or a guest session (Authorization: Bearer <token>)",
            ));
        }
        Guest::from_request_parts(parts, app)
            .await
            .map(Purchaser::Guest)
    }
}
