//! Account rules that more than one front door needs: reading an account's API key and
//! verifying an account once its owner proved control of the mailbox.

use crate::crypto;
use crate::db::users::{self as store, UserRow, Verification};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The account's API key in plain text (stored encrypted under the master key).
pub fn user_key(app: &AppState, user: &UserRow) -> Result<String, ApiError> {
    app.key
        .decrypt(&user.key_cipher)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| ApiError::internal("stored API key does not decrypt with the master key"))
}

/// What proved control of the mailbox, which decides what survives from before.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Proof {
    /// The emailed verification code of a password sign-up: the password stays (its owner
    /// asked for the code), the key rotates on the first verification.
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
fn after(app: &AppState, user: UserRow, fresh: (String, String)) -> ApiResult<(UserRow, String)> {
    app.callers.invalidate_user(&user.id);
    let (key, hash) = fresh;
    if crypto::ct_eq(user.key_hash.as_bytes(), hash.as_bytes()) {
        return Ok((user, key));
    }
    let key = user_key(app, &user)?;
    Ok((user, key))
}

/// Verifies the account (finding H1): the first verification by any path rotates the
/// API key, so a key handed out before the mailbox was proven stops working.
pub async fn verify(app: &AppState, user_id: &str, proof: Proof) -> ApiResult<(UserRow, String)> {
    let (key, hash, cipher) = new_key(app);
    let user = store::verify(
        &app.db,
        user_id,
        &proof.verification((&hash, &cipher), None),
    )
    .await?
    .ok_or_else(|| ApiError::not_found("user not found"))?;
    after(app, user, (key, hash))
}

/// Spends an emailed one-time code and verifies its account; `None` when the code was
/// spent concurrently or has expired.
pub async fn verify_with_code(
    app: &AppState,
    code_hash: &str,
    proof: Proof,
    new_password_hash: Option<&str>,
) -> ApiResult<Option<(UserRow, String)>> {
    let (key, hash, cipher) = new_key(app);
    let how = proof.verification((&hash, &cipher), new_password_hash);
    match store::verify_with_code(&app.db, code_hash, &how).await? {
        Some(user) => Ok(Some(after(app, user, (key, hash))?)),
        None => Ok(None),
    }
}
