//! Token-exchange grants (`POST /api/users/authenticate-token`): what an identity service
//! hands a client to exchange for the API key of the named email. The exact format, so
//! that a service can mint one, is in docs/api.md ("Token exchange").

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::crypto::{self, GrantKey};
use crate::domain::idp::Identity;

/// The longest a grant may live: `exp` at most this far ahead of the server's clock.
pub const MAX_TTL_SECS: i64 = 600;
/// Clock skew allowed between the identity service and plinth on that bound.
const SKEW_SECS: i64 = 30;

/// The sealed plaintext: JSON.
#[derive(Debug, Serialize, Deserialize)]
pub struct Grant {
    pub email: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// Optional application domain, as `source` on sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Seals a grant for `email` valid `ttl_secs` (at most [`MAX_TTL_SECS`]).
pub fn mint(key: &GrantKey, email: &str, ttl_secs: i64, source: Option<String>) -> String {
    let grant = Grant {
        email: email.to_owned(),
        exp: Utc::now().timestamp() + ttl_secs.clamp(1, MAX_TTL_SECS),
        source,
    };
    key.seal(&serde_json::to_vec(&grant).expect("a grant serializes"))
}

/// Why a grant is not redeemed: 401 for the grant's faults, 404 when this server does not
/// offer token exchange at all.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error(
        "token exchange is not offered by this server (an operator enables it with \
         PLINTH_AUTH_TOKEN_KEY, the key shared with the identity service)"
    )]
    Unconfigured,
    #[error("invalid token")]
    Invalid,
    #[error("token expired")]
    Expired,
    #[error("token expiry is more than {MAX_TTL_SECS} seconds ahead")]
    TooFarAhead,
    #[error("token already used")]
    Used,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl Identity {
    /// Checks a grant and spends it: authentic (tag), unexpired, `exp` at most ten minutes
    /// ahead, and never redeemed before. Every refusal is a 401.
    pub async fn redeem(&self, token: &str) -> Result<Grant, GrantError> {
        let key = self.auth_key.as_ref().ok_or(GrantError::Unconfigured)?;
        let plain = key.open(token).ok_or(GrantError::Invalid)?;
        let grant: Grant = serde_json::from_slice(&plain).map_err(|_| GrantError::Invalid)?;
        let now = Utc::now().timestamp();
        if grant.exp <= now {
            return Err(GrantError::Expired);
        }
        if grant.exp > now + MAX_TTL_SECS + SKEW_SECS {
            return Err(GrantError::TooFarAhead);
        }
        let expires: DateTime<Utc> =
            DateTime::from_timestamp(grant.exp, 0).ok_or(GrantError::Invalid)?;
        let hash = crypto::sha256_hex(token.trim().to_ascii_lowercase().as_bytes());
        if !crate::db::grants::spend(self.db(), &hash, expires).await? {
            return Err(GrantError::Used);
        }
        Ok(grant)
    }
}
