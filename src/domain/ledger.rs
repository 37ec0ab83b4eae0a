//! Ledger rules shared by the credit routes, the usage layer (token charges), billing
//! and periodic work: the monthly allotment, the per-call amount bound, running a change
//! through the credit-account actors, and the errors a change can end in.

use plinth_actors::credits::{Applied, Change, CreditError, Entry};
use serde_json::{json, Value};

use crate::db::users::UserRow;
use crate::state::AppState;
use crate::states::LedgerKind;

/// Monthly allotment by level (the spec's tier table).
pub fn monthly_credits(level: i64) -> i64 {
    match level {
        l if l >= 30 => 45_000,
        l if l >= 20 => 1_500,
        _ => 0,
    }
}

/// The largest amount one call may move (10^15 tokens). Far above any real balance, and
/// small enough that no batch of changes can overflow a 64-bit sum (finding M2).
pub const MAX_AMOUNT: i64 = 1_000_000_000_000_000;

/// Why a change did not apply.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The spec's 402: the balance is short of what a call or an operation needs.
    #[error("{required} tokens are needed and the balance is {balance}")]
    Insufficient {
        required: i64,
        balance: i64,
        /// Where the account's owner can buy more (`PLINTH_PAYMENT_URL`).
        payment_url: String,
    },
    /// A 404: the account has no credit account.
    #[error("that account has no credit account (an admin can create it)")]
    NoAccount,
    /// No outcome from the credit actors (a 503): when it is unknown the client is told
    /// so, to check the balance before retrying (a blind retry could apply twice).
    #[error("{0}")]
    Unanswered(CreditError),
}

/// The 402 for a balance of `balance` short of `required`.
pub fn insufficient(app: &AppState, required: i64, balance: i64) -> LedgerError {
    LedgerError::Insufficient {
        required,
        balance,
        payment_url: app.payment_url.clone(),
    }
}

/// The balance of `user_id` after a change that applied.
pub fn balance_after(applied: &Applied, user_id: &str) -> Option<i64> {
    match applied {
        Applied::Done { balances, .. } => balances.iter().find(|(u, _)| u == user_id).map(|b| b.1),
        _ => None,
    }
}

pub fn entry(
    user_id: &str,
    delta: i64,
    kind: LedgerKind,
    idem_key: Option<String>,
    data: Value,
) -> Entry {
    Entry {
        user_id: user_id.to_owned(),
        delta,
        kind: kind.as_str().to_owned(),
        idem_key,
        data,
    }
}

/// Runs a change through the actors. `Ok(None)` when an idempotency key made it a
/// repeat; the balances of the entries otherwise.
pub async fn apply(app: &AppState, entries: Vec<Entry>) -> Result<Option<Applied>, LedgerError> {
    let required = entries.iter().map(|e| -e.delta).max().unwrap_or(0);
    match app
        .credits
        .apply(Change { entries })
        .await
        .map_err(LedgerError::Unanswered)?
    {
        done @ Applied::Done { .. } => Ok(Some(done)),
        Applied::Duplicate => Ok(None),
        Applied::Insufficient { balance, .. } => Err(insufficient(app, required, balance)),
        Applied::NoAccount { .. } => Err(LedgerError::NoAccount),
    }
}

/// Pays `user`'s monthly allotment for the current calendar month (UTC) once.
pub async fn distribute_monthly(
    app: &AppState,
    user: &UserRow,
) -> Result<(i64, bool), LedgerError> {
    let amount = monthly_credits(user.level);
    let month = chrono::Utc::now().format("%Y-%m").to_string();
    if amount == 0 {
        return Ok((0, false));
    }
    let applied = apply(
        app,
        vec![entry(
            &user.id,
            amount,
            LedgerKind::Monthly,
            Some(format!("monthly:{month}")),
            json!({"month": month, "level": user.level}),
        )],
    )
    .await?;
    Ok((amount, applied.is_none()))
}
