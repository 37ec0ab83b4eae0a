//! Ledger rules shared by the credit routes, the usage layer (token charges), billing
//! and periodic work: the monthly allotment, the per-call amount bound, running a change
//! through the credit-account actors, and the errors a change can end in.

use plinth_actors::credits::{Applied, Change, CreditError, Entry};
use serde_json::{json, Value};

use crate::db::users::UserRow;
use crate::error::{ApiError, ApiResult};
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

/// The 402 of the spec: the balance is short of what a call or an operation needs.
pub fn payment_required(app: &AppState, required: i64, balance: i64) -> ApiError {
    ApiError::payment_required(format!(
        "{required} tokens are needed and the balance is {balance}"
    ))
    .with("tokens_required", required)
    .with("tokens_balance", balance)
    .with("payment_url", app.payment_url.clone())
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

/// A change without an outcome: 503 either way; when the outcome is unknown the client
/// is told so, to check the balance before retrying (a blind retry could apply twice).
pub fn credit_error(e: CreditError) -> ApiError {
    let cause = e.to_string();
    let mut err = match e {
        CreditError::NotApplied(_) => ApiError::service_unavailable(
            "the credit ledger is busy; nothing was applied, try again",
        ),
        CreditError::Unknown(_) => ApiError::service_unavailable(
            "the credit ledger did not answer in time; the change may still apply: check the \
             balance or history before retrying",
        )
        .with("outcome_unknown", true),
    };
    // Logged once, with the request's context, by the usage layer.
    err.cause = Some(cause);
    err
}

/// Runs a change through the actors. `Ok(None)` when an idempotency key made it a
/// repeat; the balances of the entries otherwise.
pub async fn apply(app: &AppState, entries: Vec<Entry>) -> ApiResult<Option<Applied>> {
    let required = entries.iter().map(|e| -e.delta).max().unwrap_or(0);
    match app
        .credits
        .apply(Change { entries })
        .await
        .map_err(credit_error)?
    {
        done @ Applied::Done { .. } => Ok(Some(done)),
        Applied::Duplicate => Ok(None),
        Applied::Insufficient { balance, .. } => Err(payment_required(app, required, balance)),
        Applied::NoAccount { .. } => Err(ApiError::not_found(
            "that account has no credit account (an admin can create it)",
        )),
    }
}

/// Pays `user`'s monthly allotment for the current calendar month (UTC) once.
pub async fn distribute_monthly(app: &AppState, user: &UserRow) -> ApiResult<(i64, bool)> {
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
