//! Ledger rules shared by the credit routes, the usage layer (token charges), billing
//! and periodic work: the monthly allotment, the per-call amount bound, running a change
//! through the credit-account actors, and the errors a change can end in.

use plinth_actors::credits::{Applied, Change, CreditAccounts, CreditError, Entry};
use serde_json::{json, Value};

use crate::db::users::UserRow;
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
        kind,
        idem_key,
        data,
    }
}

/// The ledger's rules with what they need: the credit-account actors and where an
/// account's owner buys more tokens. Cheap to clone (the actors are shared).
#[derive(Clone)]
pub struct Ledger {
    credits: CreditAccounts,
    payment_url: String,
}

impl Ledger {
    /// `payment_url`: `PLINTH_PAYMENT_URL`, named in every 402.
    pub fn new(credits: CreditAccounts, payment_url: String) -> Self {
        Self {
            credits,
            payment_url,
        }
    }

    /// The 402 for a balance of `balance` short of `required`.
    pub fn insufficient(&self, required: i64, balance: i64) -> LedgerError {
        LedgerError::Insufficient {
            required,
            balance,
            payment_url: self.payment_url.clone(),
        }
    }

    /// Runs a change through the actors. `Ok(None)` when an idempotency key made it a
    /// repeat; the balances of the entries otherwise.
    pub async fn apply(&self, entries: Vec<Entry>) -> Result<Option<Applied>, LedgerError> {
        let required = entries.iter().map(|e| -e.delta).max().unwrap_or(0);
        match self
            .credits
            .apply(Change { entries })
            .await
            .map_err(LedgerError::Unanswered)?
        {
            done @ Applied::Done { .. } => Ok(Some(done)),
            Applied::Duplicate => Ok(None),
            Applied::Insufficient { balance, .. } => Err(self.insufficient(required, balance)),
            Applied::NoAccount { .. } => Err(LedgerError::NoAccount),
        }
    }

    /// Pays `user`'s monthly allotment for the current calendar month (UTC) once.
    pub async fn distribute_monthly(&self, user: &UserRow) -> Result<(i64, bool), LedgerError> {
        let amount = monthly_credits(user.level);
        let month = chrono::Utc::now().format("%Y-%m").to_string();
        if amount == 0 {
            return Ok((0, false));
        }
        let applied = self
            .apply(vec![entry(
                &user.id,
                amount,
                LedgerKind::Monthly,
                Some(format!("monthly:{month}")),
                json!({"month": month, "level": user.level}),
            )])
            .await?;
        Ok((amount, applied.is_none()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::db::users::NewUser;
    use crate::db::Db;

    /// A ledger over a fresh SQLite file: the rules run without a server or its state.
    async fn ledger(dir: &tempfile::TempDir) -> (Db, Ledger) {
        let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
        let db = Db::connect(&url, "test").await.unwrap();
        db.migrate().await.unwrap();
        let store = Arc::new(crate::db::credits::DbCredits(db.clone()));
        let credits = CreditAccounts::start(1, store).await.unwrap();
        (
            db,
            Ledger::new(credits, "https://pay.example/tokens".into()),
        )
    }

    async fn user(db: &Db, email: &str, level: i64, account: bool) -> UserRow {
        let new = NewUser {
            email,
            key_hash: email,
            key_cipher: "",
            password_hash: None,
            level,
            verified: true,
            data: json!({}),
            source: None,
            source_by_self: true,
        };
        let user = crate::db::users::create(db, new, None).await.unwrap();
        if account {
            crate::db::credits::ensure_account(db, &user.id)
                .await
                .unwrap();
        }
        user
    }

    #[tokio::test]
    async fn the_monthly_allotment_is_paid_once_and_a_short_balance_names_where_to_pay() {
        let dir = tempfile::tempdir().unwrap();
        let (db, ledger) = ledger(&dir).await;
        let pro = user(&db, "pro@example.com", 20, true).await;
        assert_eq!(
            ledger.distribute_monthly(&pro).await.unwrap(),
            (1_500, false)
        );
        assert_eq!(
            ledger.distribute_monthly(&pro).await.unwrap(),
            (1_500, true)
        );
        let spend = |n: i64| vec![entry(&pro.id, -n, LedgerKind::Deduct, None, json!({}))];
        let applied = ledger.apply(spend(500)).await.unwrap().unwrap();
        assert_eq!(balance_after(&applied, &pro.id), Some(1_000));
        match ledger.apply(spend(2_000)).await {
            Err(LedgerError::Insufficient {
                required,
                balance,
                payment_url,
            }) => {
                assert_eq!((required, balance), (2_000, 1_000));
                assert_eq!(payment_url, "https://pay.example/tokens");
            }
            other => panic!("expected a 402, got {other:?}"),
        }
    }
}
