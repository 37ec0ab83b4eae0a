//! `/api/users*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::users::UserRow;

/// An account as its owner and administrators see it; `key` only for its owner.
#[derive(Serialize, JsonSchema)]
pub struct User {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "email"))]
    pub email: String,
    pub username: Option<String>,
    /// 0 unverified, 10 verified, 20 paying, 30 co-working, 40 partner, 100 platform
    /// administrator.
    pub level: i64,
    pub verified: bool,
    /// Free-form JSON the account keeps (`users/update` merges into it).
    pub data: Value,
    pub wallet_address: Option<String>,
    pub source: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
    /// The API key, shown to its owner only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl User {
    /// The account, with its key when the caller is its owner.
    pub fn of(u: &UserRow, key: Option<&str>) -> User {
        User {
            id: u.id.clone(),
            email: u.email.clone(),
            username: u.username.clone(),
            level: u.level,
            verified: u.verified,
            data: u.data.0.clone(),
            wallet_address: u.wallet_address.clone(),
            source: u.source.clone(),
            created_at: u.created_at,
            updated_at: u.updated_at,
            deleted_at: u.deleted_at,
            key: key.map(str::to_owned),
        }
    }
}

/// The profile anyone may see: no email, key, level or server-managed tags.
#[derive(Serialize, JsonSchema)]
pub struct PublicUser {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub username: Option<String>,
    /// The account's `data` without `exemptions`.
    pub data: Value,
    pub wallet_address: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<&UserRow> for PublicUser {
    fn from(u: &UserRow) -> PublicUser {
        let mut data = u.data.0.clone();
        if let Some(m) = data.as_object_mut() {
            m.remove("exemptions");
        }
        PublicUser {
            id: u.id.clone(),
            username: u.username.clone(),
            data,
            wallet_address: u.wallet_address.clone(),
            created_at: u.created_at,
        }
    }
}

/// `{user}`: the viewer, an administrator's read of an account.
#[derive(Serialize, JsonSchema)]
pub struct UserAnswer {
    pub user: User,
}

/// `public/get-by-id`, `public/get-by-username`.
#[derive(Serialize, JsonSchema)]
pub struct PublicProfile {
    pub user: PublicUser,
}

/// `authenticate`: signed in, or signed up.
#[derive(Serialize, JsonSchema)]
pub struct SignedIn {
    pub user: User,
    /// False when this call created the account.
    pub existing: bool,
    /// A verification email went (new accounts that are not exempt).
    pub emailed: bool,
}

/// `authenticate-interstitial`.
#[derive(Serialize, JsonSchema)]
pub struct LinkEmailed {
    /// A sign-in link went (false when the email has no account).
    pub emailed: bool,
}

/// `verify`.
#[derive(Serialize, JsonSchema)]
pub struct CodeUsed {
    pub success: True,
    /// What the code was for: `verify`, `reset` or `signin`.
    pub purpose: String,
    /// A new password was set in the same step.
    pub password_changed: bool,
    /// The account and its key (a new key after a verification by code).
    pub user: User,
}

/// `verify/details`: what a one-time code would do, read before it is spent.
#[derive(Serialize, JsonSchema)]
pub struct CodeDetails {
    /// `verify`, `reset` or `signin`.
    pub purpose: String,
    #[schemars(extend("format" = "email"))]
    pub email: String,
    pub verified: bool,
    pub account_created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// Spending it now would answer 400 `expired` (and resend a verification code).
    pub expired: bool,
    /// The sign-up attempt a verification code confirms (`null` for other codes).
    pub attempt: Option<SignUpAttempt>,
}

/// One sign-up of an address: when, from where, through which `source`.
#[derive(Serialize, JsonSchema)]
pub struct SignUpAttempt {
    pub created_at: DateTime<Utc>,
    pub source: Option<String>,
    /// The client address the sign-up came from, as the server saw it.
    pub client_ip: Option<String>,
    /// This sign-up created the account (confirming it keeps the account's password);
    /// otherwise it came later, with a password of its own.
    pub opened_account: bool,
}

/// `verify/reject` ("this wasn't me").
#[derive(Serialize, JsonSchema)]
pub struct SignUpRejected {
    pub success: True,
    /// The unconfirmed account was deleted with every key (the rejected sign-up created
    /// it); `false`: only that later attempt's codes died.
    pub account_deleted: bool,
}

/// `verify-resend`.
#[derive(Serialize, JsonSchema)]
pub struct VerificationResent {
    pub emailed: bool,
    /// Already verified: nothing was sent.
    pub verified: bool,
}

/// `reset-password`: the same whether or not the email has an account.
#[derive(Serialize, JsonSchema)]
pub struct ResetRequested {
    pub success: True,
    pub message: String,
}

/// `verify-check-by-id`.
#[derive(Serialize, JsonSchema)]
pub struct VerificationState {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub verified: bool,
    pub level: i64,
}

/// `GET /api/users`: newest first.
#[derive(Serialize, JsonSchema)]
pub struct UserList {
    pub data: Vec<User>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// `list-by-source`.
#[derive(Serialize, JsonSchema)]
pub struct UsersBySource {
    pub data: Vec<User>,
    pub source: String,
}

/// An account after a change (`update`, `update-viewer-username`, the wallet routes).
#[derive(Serialize, JsonSchema)]
pub struct UserSaved {
    pub success: True,
    pub user: User,
}

/// `regenerate-key`: the old key stopped working.
#[derive(Serialize, JsonSchema)]
pub struct KeyRegenerated {
    pub key: String,
    pub user: User,
}

/// `delete`.
#[derive(Serialize, JsonSchema)]
pub struct UserDeleted {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
}

/// `authenticate-token`: the account of a token from the configured identity provider.
#[derive(Serialize, JsonSchema)]
pub struct TokenSignedIn {
    pub key: String,
    /// The same key, as some clients read it.
    #[serde(rename = "apiKey")]
    pub api_key: String,
    /// False when this call created the account.
    pub existing: bool,
    pub user: User,
}
