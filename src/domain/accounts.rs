//! Account rules that more than one front door needs: parsing emails and sources,
//! creating accounts and their sign-up attempts, the exemption tag, emailed one-time
//! codes, the per-email limit on password guessing, reading an account's API key, and
//! verifying an account once its owner proved control of the mailbox.

use chrono::{Duration, Utc};
use serde_json::{json, Map, Value};

use crate::adapters::mail::{Dress, Kind, Mailer};
use crate::crypto;
use crate::crypto::MasterKey;
use crate::db::cache::Caches;
use crate::db::cache::Changed;
use crate::db::users::{self as store, NewAttempt, NewUser, Unproven, UserRow, Verification};
use crate::db::Db;
use crate::domain::Invalid;

pub use crate::db::users::EXEMPT_ALL_EMAILS;

/// Why an account change did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("user not found")]
    NotFound,
    /// The merged `data` is too deep or too large (400 / 413).
    #[error(transparent)]
    Data(#[from] crate::domain::records::RecordError),
    /// Other writers won every try (a 409).
    #[error("the account is being updated concurrently; retry")]
    Busy,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// Ours, never the client's: logged, answered as a vague 500.
    #[error("{0}")]
    Internal(String),
    /// Too many failed password sign-ins for the email (a 429, the same for any email).
    #[error(
        "too many failed sign-ins for this email: try again in {}s. The owner of the \
         address can always get in at once with a password reset (POST \
         /api/users/reset-password) or a one-time sign-in link (POST \
         /api/users/authenticate-interstitial)", retry_after_ms.div_ceil(1000)
    )]
    Throttled { retry_after_ms: u64 },
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

/// The account rules with what they need: the database, the master key (API keys are
/// kept sealed), the read caches (announcing changed accounts), the mailer and the
/// exempt domains (`PLINTH_EXEMPT_DOMAINS`, lower-case).
#[derive(Clone)]
pub struct Accounts {
    db: Db,
    key: MasterKey,
    caches: std::sync::Arc<Caches>,
    mailer: Mailer,
    exempt_domains: std::sync::Arc<[String]>,
}

impl Accounts {
    pub fn new(
        db: Db,
        key: MasterKey,
        caches: std::sync::Arc<Caches>,
        mailer: Mailer,
        exempt_domains: Vec<String>,
    ) -> Self {
        Self {
            db,
            key,
            caches,
            mailer,
            exempt_domains: exempt_domains.into(),
        }
    }

    /// The mailer account mails go through (other mails, receipts, use it too).
    pub fn mailer(&self) -> &Mailer {
        &self.mailer
    }

    /// Read-modify-write of `data` with an optimistic version check, retried on a lost race,
    /// so concurrent merges never drop each other's keys.
    pub async fn modify_data(
        &self,
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
            // The merge, not only the request, is bounded: many small updates must not
            // grow one row (and every later read of it) without limit.
            crate::domain::records::check_data(&data)?;
            match store::write_data(&self.db, &user.id, user.version, &data).await? {
                Some(updated) => return Ok(self.caches.announce(updated).await),
                None => {
                    user = store::by_id(&self.db, &user.id)
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
        &self,
        user: UserRow,
        source: Option<&str>,
    ) -> Result<UserRow, AccountError> {
        let Some(source) = source else {
            return Ok(user);
        };
        let exempt = self.is_exempt_domain(source);
        self.modify_data(user, |data| {
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

    pub fn is_exempt_domain(&self, source: &str) -> bool {
        self.exempt_domains.iter().any(|d| d == source)
    }

    /// Whether no mail may go: a request through an exempt domain never sends any, and the
    /// exemption tag silences an unverified account only for its key holder, since whoever
    /// opened the account may have tagged it to lock its owner out (review N-L5).
    fn silenced(&self, user: &UserRow, source: Option<&str>, asker: Asker) -> bool {
        source.is_some_and(|s| self.is_exempt_domain(s))
            || (is_exempt(user) && (user.verified || asker == Asker::Holder))
    }

    /// Creates a one-time code for `user` (a verification code confirms `attempt`) and emails
    /// its link; `false` (and no code) when the mail is [`silenced`]. Returns whether an
    /// email was queued.
    pub async fn email_code(
        &self,
        user: &UserRow,
        kind: Kind,
        dress: Dress<'_>,
        asker: Asker,
        attempt: Option<&str>,
    ) -> Result<bool, AccountError> {
        if self.silenced(user, dress.source(), asker) {
            return Ok(false);
        }
        let (ttl, purpose, page) = match kind {
            Kind::Reset => (RESET_CODE_TTL, "reset", "reset-password"),
            Kind::SignIn => (SIGNIN_CODE_TTL, "signin", "sign-in"),
            _ => (VERIFY_CODE_TTL, "verify", "verify"),
        };
        let code = crypto::new_code();
        store::add_code(
            &self.db,
            &user.id,
            &crypto::sha256_hex(code.as_bytes()),
            purpose,
            Utc::now() + ttl,
            attempt.filter(|_| purpose == "verify"),
        )
        .await?;
        let link = self.mailer.code_link(page, &code);
        let email = self.mailer.compose(dress, kind, user, &link).await;
        Ok(self.mailer.send(email).await)
    }

    /// `authenticate` for an email without an account: the account (level 0), the attempt
    /// that opened it, and that attempt's confirmation mail. Answers the account, its key
    /// and whether a mail went.
    pub async fn sign_up(
        &self,
        email: &str,
        a: &Attempt<'_>,
    ) -> Result<(UserRow, String, bool), AccountError> {
        let (user, key) = self
            .create_account(email, Some(a.password), a.source, false)
            .await?;
        let attempt = store::add_attempt(
            &self.db,
            NewAttempt {
                user_id: &user.id,
                opened_account: true,
                password_hash: None,
                source: a.source,
                client_ip: a.client_ip,
            },
        )
        .await?;
        let dress = Dress::sign_up(a.source);
        let emailed = self
            .email_code(&user, Kind::Verify, dress, Asker::Holder, Some(&attempt))
            .await?;
        Ok((user, key, emailed))
    }

    /// A sign-up with another password for an account nobody has confirmed yet: the attempt
    /// is kept with its own password and mailed its own confirmation, which (and only
    /// which) makes that password the account's. Whether a mail went.
    pub async fn another_sign_up(
        &self,
        user: &UserRow,
        a: &Attempt<'_>,
    ) -> Result<bool, AccountError> {
        if self.silenced(user, a.source, Asker::Anyone) {
            return Ok(false);
        }
        let hash = hash_password(a.password).await?;
        let attempt = store::add_attempt(
            &self.db,
            NewAttempt {
                user_id: &user.id,
                opened_account: false,
                password_hash: Some(&hash),
                source: a.source,
                client_ip: a.client_ip,
            },
        )
        .await?;
        let dress = Dress::sign_up(a.source);
        self.email_code(
            user,
            Kind::AnotherSignUp,
            dress,
            Asker::Anyone,
            Some(&attempt),
        )
        .await
    }

    /// A fresh confirmation of the attempt that opened the account (`verify-resend`),
    /// dressed by `source` when the request names one.
    pub async fn resend_confirmation(
        &self,
        user: &UserRow,
        source: Option<&str>,
        asker: Asker,
    ) -> Result<bool, AccountError> {
        if self.silenced(user, source, asker) {
            return Ok(false);
        }
        let attempt = match store::opening_attempt(&self.db, &user.id).await? {
            Some(a) => a.id,
            // An account from before attempts were kept: its current password opened it.
            None => {
                store::add_attempt(
                    &self.db,
                    NewAttempt {
                        user_id: &user.id,
                        opened_account: true,
                        password_hash: None,
                        source: user.source.as_deref(),
                        client_ip: None,
                    },
                )
                .await?
            }
        };
        self.email_code(
            user,
            Kind::Verify,
            Dress::sign_up(source),
            asker,
            Some(&attempt),
        )
        .await
    }

    /// Counts a password attempt on `email` before the password is checked, so concurrent
    /// guesses from any number of addresses cannot share a free slot; [`forget_failures`]
    /// undoes it when the password was right. Throttled (429) while the email's delay runs,
    /// known account or not.
    pub async fn count_password_attempt(&self, email: &str) -> Result<(), AccountError> {
        let key = failures_key(email);
        for _ in 0..8 {
            let now = Utc::now();
            let (seen, before) = match store::failures(&self.db, &key).await? {
                None => (None, 0),
                Some(r) if now - r.updated_at > FAILURES_KEPT => (Some(r.failures), 0),
                Some(r) if r.next_at > now => {
                    let wait = (r.next_at - now).num_milliseconds().max(1) as u64;
                    return Err(AccountError::Throttled {
                        retry_after_ms: wait,
                    });
                }
                Some(r) => (Some(r.failures), r.failures),
            };
            let n = before + 1;
            if store::count_failure(&self.db, &key, seen, n, now + delay_after(n)).await? {
                return Ok(());
            }
        }
        Err(AccountError::Throttled {
            retry_after_ms: 1000,
        })
    }

    /// The email's failures are forgotten: a right password, or its owner proved the
    /// mailbox (a verification, a completed reset).
    pub async fn forget_failures(&self, email: &str) -> Result<(), AccountError> {
        Ok(store::clear_failures(&self.db, &failures_key(email)).await?)
    }

    /// Creates an account with a fresh API key; returns it with the key in plain text.
    pub async fn create_account(
        &self,
        email: &str,
        password: Option<&str>,
        source: Option<&str>,
        verified: bool,
    ) -> Result<(UserRow, String), AccountError> {
        self.create(email, password, source.map(|s| (s, true)), verified)
            .await
    }

    /// An account an organization's admin creates (a waitlist accept): `source` names the
    /// organization, but the owner never chose it, so its email templates do not apply.
    pub async fn create_account_for(
        &self,
        email: &str,
        org_domain: &str,
    ) -> Result<(UserRow, String), AccountError> {
        self.create(email, None, Some((org_domain, false)), true)
            .await
    }

    async fn create(
        &self,
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
            Some(p) => Some(hash_password(p).await?),
            None => None,
        };
        let exempt = source.is_some_and(|s| self.is_exempt_domain(s));
        let data = if exempt {
            json!({"exemptions": [EXEMPT_ALL_EMAILS]})
        } else {
            json!({})
        };
        let user = store::create(
            &self.db,
            NewUser {
                email,
                key_hash: &crypto::sha256_hex(key.as_bytes()),
                key_cipher: &self.key.encrypt(key.as_bytes()),
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
    pub fn user_key(&self, user: &UserRow) -> Result<String, AccountError> {
        self.key
            .decrypt(&user.key_cipher)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                AccountError::Internal("stored API key does not decrypt with the master key".into())
            })
    }

    /// A fresh API key: `(plaintext, sha256 hex, ciphertext under the master key)`.
    pub fn new_key(&self) -> (String, String, String) {
        let key = crypto::new_api_key();
        let hash = crypto::sha256_hex(key.as_bytes());
        let cipher = self.key.encrypt(key.as_bytes());
        (key, hash, cipher)
    }

    /// The account as stored after a verification, and the key its owner now holds; the
    /// email's failed sign-ins are forgotten (its owner just proved the mailbox).
    async fn after(
        &self,
        user: Changed<UserRow>,
        fresh: (String, String),
    ) -> Result<(UserRow, String), AccountError> {
        let user = self.caches.announce(user).await;
        self.forget_failures(&user.email).await?;
        let (key, hash) = fresh;
        if crypto::ct_eq(user.key_hash.as_bytes(), hash.as_bytes()) {
            return Ok((user, key));
        }
        let key = self.user_key(&user)?;
        Ok((user, key))
    }

    /// A sign-in of an existing account through an identity provider or the identity
    /// service: the mailbox is proven ([`Self::verify_elsewhere`]) and the sign-in's
    /// source sets the exemption tag ([`Self::apply_exemption`]).
    pub async fn sign_in_elsewhere(
        &self,
        user_id: &str,
        source: Option<&str>,
    ) -> Result<(UserRow, String), AccountError> {
        let (user, key) = self.verify_elsewhere(user_id, source).await?;
        Ok((self.apply_exemption(user, source).await?, key))
    }

    /// Verifies the account after an identity provider or the identity service proved the
    /// mailbox (finding H1): a first verification rotates the API key and drops what the
    /// account's opener set ([`Unproven::Elsewhere`]); `source`, named by this sign-in,
    /// becomes the account's own.
    async fn verify_elsewhere(
        &self,
        user_id: &str,
        source: Option<&str>,
    ) -> Result<(UserRow, String), AccountError> {
        let (key, hash, cipher) = self.new_key();
        let how = Verification {
            new_key: (&hash, &cipher),
            always_rotate: false,
            unproven: Unproven::Elsewhere { source },
            new_password_hash: None,
        };
        let user = store::verify(&self.db, user_id, &how)
            .await?
            .ok_or(AccountError::NotFound)?;
        self.after(user, (key, hash)).await
    }

    /// Spends an emailed one-time code and verifies its account (a verification code
    /// confirms its own sign-up attempt: `db::users::verify_with_code`); `None` when the
    /// code was spent concurrently or has expired.
    pub async fn verify_with_code(
        &self,
        code_hash: &str,
        new_password_hash: Option<&str>,
    ) -> Result<Option<(UserRow, String)>, AccountError> {
        let (key, hash, cipher) = self.new_key();
        match store::verify_with_code(&self.db, code_hash, (&hash, &cipher), new_password_hash)
            .await?
        {
            Some(user) => Ok(Some(self.after(user, (key, hash)).await?)),
            None => Ok(None),
        }
    }
}

/// Who asked for a mail, which decides whether the exemption tag silences it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Asker {
    /// The account's key holder (`verify-resend`) or its own sign-up.
    Holder,
    /// Anyone at all (reset, sign-in link, another sign-up attempt, an expired code).
    Anyone,
}

/// A sign-up attempt: the password chosen, the `source` named, and where it came from.
pub struct Attempt<'a> {
    pub password: &'a str,
    pub source: Option<&'a str>,
    pub client_ip: Option<&'a str>,
}

async fn hash_password(password: &str) -> Result<String, AccountError> {
    let p = password.to_owned();
    tokio::task::spawn_blocking(move || crypto::hash_password(&p))
        .await
        .map_err(|e| AccountError::Internal(e.to_string()))
}

/// Failed password sign-ins per email (review N-M3): this many are free, then each
/// further attempt waits `FIRST_DELAY`, doubling with every failure, at most `MAX_DELAY`.
pub const FREE_FAILURES: i64 = 5;
pub const FIRST_DELAY: Duration = Duration::seconds(1);
pub const MAX_DELAY: Duration = Duration::minutes(10);
/// Failures this old are forgotten.
pub const FAILURES_KEPT: Duration = Duration::hours(24);

/// How long the next attempt waits after `failures` failures.
pub fn delay_after(failures: i64) -> Duration {
    if failures < FREE_FAILURES {
        return Duration::zero();
    }
    let doublings = (failures - FREE_FAILURES).min(20) as i32;
    (FIRST_DELAY * 2i32.pow(doublings as u32)).min(MAX_DELAY)
}

fn failures_key(email: &str) -> String {
    crypto::sha256_hex(email.as_bytes())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guessing_delays_start_after_five_failures_double_and_are_capped() {
        for n in 0..FREE_FAILURES {
            assert_eq!(delay_after(n), Duration::zero());
        }
        assert_eq!(delay_after(5), Duration::seconds(1));
        assert_eq!(delay_after(6), Duration::seconds(2));
        assert_eq!(delay_after(8), Duration::seconds(8));
        assert_eq!(delay_after(15), MAX_DELAY);
        assert_eq!(delay_after(10_000), MAX_DELAY);
    }
}
