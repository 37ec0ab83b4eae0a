//! Account rules that more than one front door needs: parsing emails and sources,
//! creating accounts, the exemption tag, emailed one-time codes, reading an account's
//! API key, and verifying an account once its owner proved control of the mailbox.

use chrono::{Duration, Utc};
use serde_json::{json, Map, Value};

use crate::cache::Changed;
use crate::crypto;
use crate::db::users::{self as store, NewUser, UserRow, Verification};
use crate::domain::Invalid;
use crate::mail::{self, Kind};
use crate::state::AppState;

pub const EXEMPT_ALL_EMAILS: &str = "EXEMPT_ALL_EMAILS";

/// Why an account change did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("user not found")]
    NotFound,
    /// Other writers won every try (a 409).
    #[error("the account is being updated concurrently; retry")]
    Busy,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// Ours, never the client's: logged, answered as a vague 500.
    #[error("{0}")]
    Internal(String),
}

/// Lifetimes of emailed one-time codes, by purpose.
pub const VERIFY_CODE_TTL: Duration = Duration::hours(24);
pub const RESET_CODE_TTL: Duration = Duration::hours(1);
pub const SIGNIN_CODE_TTL: Duration = Duration::minutes(15);

/// Normalises and checks an email address (400 on anything malformed).
pub fn parse_email(raw: &str) -> Result<String, Invalid> {
    let email = raw.trim().to_lowercase();
    if !email_address::EmailAddress::is_valid(&email) || !email.contains('.') {
        return Err(Invalid::new(format!(
            "`{raw}` is not a valid email address"
        )));
    }
    Ok(email)
}

/// `source` as stored and compared: trimmed, lower-case, absent when empty.
pub fn parse_source(source: Option<String>) -> Option<String> {
    source
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
}

pub fn is_exempt(user: &UserRow) -> bool {
    user.data
        .0
        .get("exemptions")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|t| t == EXEMPT_ALL_EMAILS))
}

/// Read-modify-write of `data` with an optimistic version check, retried on a lost race,
/// so concurrent merges never drop each other's keys.
pub async fn modify_data(
    app: &AppState,
    mut user: UserRow,
    change: impl Fn(&mut Map<String, Value>),
) -> Result<UserRow, AccountError> {
    for _ in 0..8 {
        let mut data = match &user.data.0 {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        change(&mut data);
        let data = Value::Object(data);
        if data == user.data.0 {
            return Ok(user);
        }
        match store::write_data(&app.db, &user.id, user.version, &data).await? {
            Some(updated) => return Ok(app.caches.announce(updated).await),
            None => {
                user = store::by_id(&app.db, &user.id)
                    .await?
                    .ok_or(AccountError::NotFound)?;
            }
        }
    }
    Err(AccountError::Busy)
}

/// The exemption tag follows the most recent sign-in that names a source: an exempt
/// domain adds it, any other domain removes it.
pub async fn apply_exemption(
    app: &AppState,
    user: UserRow,
    source: Option<&str>,
) -> Result<UserRow, AccountError> {
    let Some(source) = source else {
        return Ok(user);
    };
    let exempt = app.exempt_domains.iter().any(|d| d == source);
    modify_data(app, user, |data| {
        let mut tags: Vec<Value> = data
            .get("exemptions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        tags.retain(|t| t != EXEMPT_ALL_EMAILS);
        if exempt {
            tags.push(Value::String(EXEMPT_ALL_EMAILS.into()));
        }
        if tags.is_empty() {
            data.remove("exemptions");
        } else {
            data.insert("exemptions".into(), Value::Array(tags));
        }
    })
    .await
}

/// Creates a one-time code for `user` and emails its link; `false` (and no code) for
/// exempt users. Returns whether an email was queued.
pub async fn email_code(
    app: &AppState,
    user: &UserRow,
    source: Option<&str>,
    purpose: &str,
) -> Result<bool, AccountError> {
    if is_exempt(user) {
        return Ok(false);
    }
    let (ttl, kind, page) = match purpose {
        "reset" => (RESET_CODE_TTL, Kind::Reset, "reset-password"),
        "signin" => (SIGNIN_CODE_TTL, Kind::Verify, "sign-in"),
        _ => (VERIFY_CODE_TTL, Kind::Verify, "verify"),
    };
    let code = crypto::new_code();
    store::add_code(
        &app.db,
        &user.id,
        &crypto::sha256_hex(code.as_bytes()),
        purpose,
        Utc::now() + ttl,
    )
    .await?;
    let link = mail::code_link(app, page, &code);
    let email = mail::compose(app, source, kind, user, &link).await;
    Ok(mail::send(app, email).await)
}

/// Creates an account with a fresh API key; returns it with the key in plain text.
pub async fn create_account(
    app: &AppState,
    email: &str,
    password: Option<&str>,
    source: Option<&str>,
    verified: bool,
) -> Result<(UserRow, String), AccountError> {
    create(app, email, password, source.map(|s| (s, true)), verified).await
}

/// An account an organization's admin creates (a waitlist accept): `source` names the
/// organization, but the owner never chose it, so its email templates do not apply.
pub async fn create_account_for(
    app: &AppState,
    email: &str,
    org_domain: &str,
) -> Result<(UserRow, String), AccountError> {
    create(app, email, None, Some((org_domain, false)), true).await
}

async fn create(
    app: &AppState,
    email: &str,
    password: Option<&str>,
    source: Option<(&str, bool)>,
    verified: bool,
) -> Result<(UserRow, String), AccountError> {
    let (source, source_by_self) = match source {
        Some((s, by_self)) => (Some(s), by_self),
        None => (None, true),
    };
    let key = crypto::new_api_key();
    let password_hash = match password {
        Some(p) => {
            let p = p.to_owned();
            Some(
                tokio::task::spawn_blocking(move || crypto::hash_password(&p))
                    .await
                    .map_err(|e| AccountError::Internal(e.to_string()))?,
            )
        }
        None => None,
    };
    let exempt = source.is_some_and(|s| app.exempt_domains.iter().any(|d| d == s));
    let data = if exempt {
        json!({"exemptions": [EXEMPT_ALL_EMAILS]})
    } else {
        json!({})
    };
    let user = store::create(
        &app.db,
        NewUser {
            email,
            key_hash: &crypto::sha256_hex(key.as_bytes()),
            key_cipher: &app.key.encrypt(key.as_bytes()),
            password_hash: password_hash.as_deref(),
            level: if verified { 10 } else { 0 },
            verified,
            data,
            source,
            source_by_self,
        },
        None,
    )
    .await?;
    Ok((user, key))
}

/// The account's API key in plain text (stored encrypted under the master key).
pub fn user_key(app: &AppState, user: &UserRow) -> Result<String, AccountError> {
    app.key
        .decrypt(&user.key_cipher)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            AccountError::Internal("stored API key does not decrypt with the master key".into())
        })
}

/// What proved control of the mailbox, which decides what survives from before.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Proof {
    /// The emailed verification code, presented with the account's own key (the client
    /// that signed up and chose the password) or with a new password: the password stays
    /// (or is replaced), the key rotates on the first verification. The code alone proves
    /// only the mailbox and counts as [`Proof::Elsewhere`] (security round 2, H3).
    SignupCode,
    /// An identity provider's verified email, an identity-service grant, or an emailed
    /// one-time sign-in link: on a never-verified account a password set before is
    /// cleared too (whoever set it was never proven to own the mailbox).
    Elsewhere,
    /// A completed password reset: the new password replaces the old, and the key
    /// rotates even on a verified account, so a leaked key dies with a reset.
    Reset,
}

impl Proof {
    fn verification<'a>(
        self,
        key: (&'a str, &'a str),
        new_password_hash: Option<&'a str>,
    ) -> Verification<'a> {
        Verification {
            new_key: key,
            always_rotate: self == Proof::Reset && new_password_hash.is_some(),
            clear_unverified_password: self != Proof::SignupCode,
            new_password_hash,
        }
    }
}

/// A fresh API key: `(plaintext, sha256 hex, ciphertext under the master key)`.
pub fn new_key(app: &AppState) -> (String, String, String) {
    let key = crypto::new_api_key();
    let hash = crypto::sha256_hex(key.as_bytes());
    let cipher = app.key.encrypt(key.as_bytes());
    (key, hash, cipher)
}

/// The account as stored after a verification, and the key its owner now holds.
async fn after(
    app: &AppState,
    user: Changed<UserRow>,
    fresh: (String, String),
) -> Result<(UserRow, String), AccountError> {
    let user = app.caches.announce(user).await;
    let (key, hash) = fresh;
    if crypto::ct_eq(user.key_hash.as_bytes(), hash.as_bytes()) {
        return Ok((user, key));
    }
    let key = user_key(app, &user)?;
    Ok((user, key))
}

/// Verifies the account (finding H1): the first verification by any path rotates the
/// API key, so a key handed out before the mailbox was proven stops working.
pub async fn verify(
    app: &AppState,
    user_id: &str,
    proof: Proof,
) -> Result<(UserRow, String), AccountError> {
    let (key, hash, cipher) = new_key(app);
    let user = store::verify(
        &app.db,
        user_id,
        &proof.verification((&hash, &cipher), None),
    )
    .await?
    .ok_or(AccountError::NotFound)?;
    after(app, user, (key, hash)).await
}

/// Spends an emailed one-time code and verifies its account; `None` when the code was
/// spent concurrently or has expired.
pub async fn verify_with_code(
    app: &AppState,
    code_hash: &str,
    proof: Proof,
    new_password_hash: Option<&str>,
) -> Result<Option<(UserRow, String)>, AccountError> {
    let (key, hash, cipher) = new_key(app);
    let how = proof.verification((&hash, &cipher), new_password_hash);
    match store::verify_with_code(&app.db, code_hash, &how).await? {
        Some(user) => Ok(Some(after(app, user, (key, hash)).await?)),
        None => Ok(None),
    }
}

/// Usernames: 3 to 32 characters of `a-z 0-9 _ . -`, stored lower-case, unique.
pub fn parse_username(raw: &str) -> Result<String, Invalid> {
    let u = raw.trim().to_lowercase();
    let ok = (3..=32).contains(&u.len())
        && u.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c));
    if !ok {
        return Err(Invalid::new(
            "`username` must be 3 to 32 characters of a-z, 0-9, `_`, `.` or `-`",
        ));
    }
    Ok(u)
}
