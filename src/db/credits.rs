//! Credit accounts and their ledger. Every change is committed ledger rows plus
//! conditional balance updates in one transaction; the credit-account actors
//! (`plinth_actors::credits`) serialize changes per account and call this store.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use plinth_actors::credits::{Applied, Change, CreditError, CreditStore};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, BeginWrite, Db};
use crate::with_db;

/// The database as the actors' store.
pub struct DbCredits(pub Db);

impl CreditStore for DbCredits {
    fn balance<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<i64>, plinth_actors::StoreError>> {
        // Bounded like batches: a hung database must not hold the shard.
        Box::pin(async move {
            match tokio::time::timeout(BATCH_DEADLINE, balance(&self.0, user_id)).await {
                Ok(loaded) => loaded.map_err(plinth_actors::StoreError::new),
                Err(_) => Err(plinth_actors::StoreError::new(
                    "the database did not answer in time",
                )),
            }
        })
    }

    fn apply_batch<'a>(
        &'a self,
        changes: &'a [Change],
    ) -> BoxFuture<'a, Result<Vec<Applied>, CreditError>> {
        Box::pin(async move {
            // A database that hangs (connections open, no answer) must not hold the shard,
            // and every account behind it, until it comes back: past the deadline the
            // batch is dropped, its outcome unknown (its COMMIT may be in flight).
            match tokio::time::timeout(BATCH_DEADLINE, apply_batch(&self.0, changes)).await {
                Ok(Ok(done)) => Ok(done),
                Ok(Err(e)) => {
                    let outage = crate::db::outage(&e);
                    if outage.is_some() {
                        crate::db::note_outage();
                    }
                    Err(match outage {
                        Some(crate::db::Outage::Unknown) => CreditError::Unknown(e.to_string()),
                        _ => CreditError::NotApplied(e.to_string()),
                    })
                }
                Err(_) => {
                    crate::db::note_outage();
                    Err(CreditError::Unknown(format!(
                        "the database did not answer within {} s",
                        BATCH_DEADLINE.as_secs()
                    )))
                }
            }
        })
    }
}

/// The longest a batch of credit changes may take to commit.
const BATCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn balance(db: &Db, user_id: &str) -> sqlx::Result<Option<i64>> {
    let row: Option<(i64,)> = with_db!(db, p => sqlx::query_as(
        "SELECT balance FROM credit_accounts WHERE user_id = $1"
    ).bind(user_id).fetch_optional(p).await)?;
    Ok(row.map(|r| r.0))
}

/// Applies changes in one transaction: the whole batch costs one commit. Most batches
/// apply in full, so they are first tried set-based (one UPDATE for every account and
/// one INSERT for every ledger row, whatever the batch size); if any change cannot
/// apply (short balance, repeat, no account), that attempt is rolled back and the batch
/// runs again with each change in its own savepoint, so a failed change leaves nothing
/// behind and does not affect the others.
async fn apply_batch(db: &Db, changes: &[Change]) -> sqlx::Result<Vec<Applied>> {
    if let Some(done) = try_set_based(db, changes).await? {
        return Ok(done);
    }
    apply_each(db, changes).await
}

/// The common case in a fixed number of statements: every account's summed delta in one
/// conditional UPDATE, every ledger row in one INSERT. `None` (nothing committed) when
/// any account is missing or would go below zero at any point of the batch, or an
/// entry repeats an `idem_key`: the careful path then sorts out which change failed.
async fn try_set_based(db: &Db, changes: &[Change]) -> sqlx::Result<Option<Vec<Applied>>> {
    if changes.iter().all(|c| c.entries.is_empty()) {
        return Ok(None);
    }
    let now = now();
    // Summed delta per account, in one global order (PostgreSQL locks rows in it).
    // Checked: a sum that does not fit 64 bits goes to the careful path, where each
    // change fails or succeeds alone (finding M2).
    let mut sums: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
    for e in changes.iter().flat_map(|c| &c.entries) {
        let sum = sums.entry(e.user_id.as_str()).or_default();
        let Some(next) = sum.checked_add(e.delta) else {
            return Ok(None);
        };
        *sum = next;
    }
    let sums: Vec<(&str, i64)> = sums.into_iter().collect();
    let entries: Vec<&plinth_actors::credits::Entry> =
        changes.iter().flat_map(|c| &c.entries).collect();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        tx.lock_accounts(&sums).await?;
        let updated = match tx.add_sums(now, &sums).await {
            Ok(rows) => rows,
            // Whatever went wrong, the careful path decides change by change.
            Err(err) => {
                tracing::warn!(error = %err, "set-based credit batch failed; applying one by one");
                return Ok(None);
            }
        };
        let Some(rows) = replay(&entries, &sums, &updated) else {
            tx.rollback().await?;
            return Ok(None);
        };
        match tx.insert_rows(now, &rows).await {
            Ok(()) => {}
            Err(err) if crate::db::unique_violation(&err).is_some() => {
                tx.rollback().await?;
                return Ok(None);
            }
            Err(err) => return Err(err),
        }
        tx.commit().await?;
        Ok(Some(outcomes(changes, rows)))
    })
}

/// One ledger row of a set-based batch, as written.
struct LedgerRow<'a> {
    id: String,
    account_id: String,
    balance_after: i64,
    entry: &'a plinth_actors::credits::Entry,
}

/// Replays the batch in order from each account's starting balance (its balance after
/// the UPDATE less its summed delta): every intermediate balance must stay at or above
/// zero, as if applied one by one. `None` when one does not, or an account was not
/// updated (missing, or short for the whole sum).
fn replay<'a>(
    entries: &[&'a plinth_actors::credits::Entry],
    sums: &[(&str, i64)],
    updated: &[(String, String, i64)],
) -> Option<Vec<LedgerRow<'a>>> {
    if updated.len() != sums.len() {
        return None;
    }
    let sum_of: std::collections::HashMap<&str, i64> = sums.iter().copied().collect();
    let mut running: std::collections::HashMap<&str, (&str, i64)> = updated
        .iter()
        .map(|(user_id, account_id, end)| {
            let start = end - sum_of.get(user_id.as_str()).copied().unwrap_or(0);
            (user_id.as_str(), (account_id.as_str(), start))
        })
        .collect();
    let mut rows = Vec::with_capacity(entries.len());
    for entry in entries {
        let slot = running.get_mut(entry.user_id.as_str())?;
        slot.1 = slot.1.saturating_add(entry.delta);
        if slot.1 < 0 {
            return None;
        }
        rows.push(LedgerRow {
            // Time-ordered ids: a batch's rows land at the right edge of the primary-key
            // index (a few pages) instead of one random leaf each (issue 46).
            id: uuid::Uuid::now_v7().to_string(),
            account_id: slot.0.to_owned(),
            balance_after: slot.1,
            entry,
        });
    }
    Some(rows)
}

/// Each change's outcome, its rows taken in order from the batch's.
fn outcomes(changes: &[Change], rows: Vec<LedgerRow<'_>>) -> Vec<Applied> {
    let mut rest = rows.into_iter();
    changes
        .iter()
        .map(|c| {
            let mut balances = Vec::with_capacity(c.entries.len());
            let mut transaction_ids = Vec::with_capacity(c.entries.len());
            for row in rest.by_ref().take(c.entries.len()) {
                balances.push((row.entry.user_id.clone(), row.balance_after));
                transaction_ids.push(row.id);
            }
            Applied::Done {
                balances,
                transaction_ids,
            }
        })
        .collect()
}

/// The three statements of a set-based batch. Each has one text whatever the batch's
/// size (the rows travel as one JSON array on SQLite, as arrays on PostgreSQL), so
/// every batch reuses one prepared statement instead of preparing a new text for
/// each new size (issue 46).
trait SetBased {
    /// Locks the accounts' rows in one order (PostgreSQL; SQLite has one writer).
    async fn lock_accounts(&mut self, sums: &[(&str, i64)]) -> sqlx::Result<()>;
    /// Adds each account's summed delta where the balance allows it; the rows updated
    /// as (user id, account id, balance after).
    async fn add_sums(
        &mut self,
        now: DateTime<Utc>,
        sums: &[(&str, i64)],
    ) -> sqlx::Result<Vec<(String, String, i64)>>;
    /// Writes every ledger row.
    async fn insert_rows(&mut self, now: DateTime<Utc>, rows: &[LedgerRow<'_>])
        -> sqlx::Result<()>;
}

const ADD_SUMS_SQLITE: &str = "UPDATE credit_accounts \
    SET balance = credit_accounts.balance + v.delta, updated_at = $1 \
    FROM (SELECT value ->> 0 AS user_id, value ->> 1 AS delta, value ->> 2 AS cap \
          FROM json_each($2)) AS v \
    WHERE credit_accounts.user_id = v.user_id \
    AND credit_accounts.balance <= v.cap AND credit_accounts.balance + v.delta >= 0 \
    RETURNING credit_accounts.user_id, credit_accounts.id, credit_accounts.balance";

/// `data` travels as a JSON string holding its text, so it is stored exactly as the
/// one-by-one path stores it.
const INSERT_ROWS_SQLITE: &str = "INSERT INTO credit_transactions \
    (id, account_id, kind, amount, balance_after, data, idem_key, created_at) \
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, \
           value ->> 6, $2 FROM json_each($1)";

impl SetBased for sqlx::Transaction<'static, sqlx::Sqlite> {
    async fn lock_accounts(&mut self, _: &[(&str, i64)]) -> sqlx::Result<()> {
        Ok(())
    }

    async fn add_sums(
        &mut self,
        now: DateTime<Utc>,
        sums: &[(&str, i64)],
    ) -> sqlx::Result<Vec<(String, String, i64)>> {
        let v: Vec<Value> = sums
            .iter()
            .map(|(user_id, delta)| serde_json::json!([user_id, delta, balance_cap(*delta)]))
            .collect();
        sqlx::query_as(ADD_SUMS_SQLITE)
            .bind(now)
            .bind(Value::Array(v).to_string())
            .fetch_all(&mut **self)
            .await
    }

    async fn insert_rows(
        &mut self,
        now: DateTime<Utc>,
        rows: &[LedgerRow<'_>],
    ) -> sqlx::Result<()> {
        let v: Vec<Value> = rows
            .iter()
            .map(|r| {
                let e = r.entry;
                serde_json::json!([
                    r.id,
                    r.account_id,
                    e.kind.as_str(),
                    e.delta,
                    r.balance_after,
                    e.data.to_string(),
                    e.idem_key
                ])
            })
            .collect();
        sqlx::query(INSERT_ROWS_SQLITE)
            .bind(Value::Array(v).to_string())
            .bind(now)
            .execute(&mut **self)
            .await
            .map(drop)
    }
}

impl SetBased for sqlx::Transaction<'static, sqlx::Postgres> {
    async fn lock_accounts(&mut self, sums: &[(&str, i64)]) -> sqlx::Result<()> {
        let users: Vec<&str> = sums.iter().map(|s| s.0).collect();
        sqlx::query(
            "SELECT id FROM credit_accounts WHERE user_id = ANY($1) ORDER BY user_id FOR UPDATE",
        )
        .bind(users)
        .execute(&mut **self)
        .await
        .map(drop)
    }

    async fn add_sums(
        &mut self,
        now: DateTime<Utc>,
        sums: &[(&str, i64)],
    ) -> sqlx::Result<Vec<(String, String, i64)>> {
        let users: Vec<&str> = sums.iter().map(|s| s.0).collect();
        let deltas: Vec<i64> = sums.iter().map(|s| s.1).collect();
        let caps: Vec<i64> = deltas.iter().map(|d| balance_cap(*d)).collect();
        sqlx::query_as(
            "UPDATE credit_accounts SET balance = credit_accounts.balance + v.delta, updated_at = $1 \
             FROM UNNEST($2::text[], $3::int8[], $4::int8[]) AS v(user_id, delta, cap) \
             WHERE credit_accounts.user_id = v.user_id \
             AND credit_accounts.balance <= v.cap AND credit_accounts.balance + v.delta >= 0 \
             RETURNING credit_accounts.user_id, credit_accounts.id, credit_accounts.balance",
        )
        .bind(now)
        .bind(users)
        .bind(deltas)
        .bind(caps)
        .fetch_all(&mut **self)
        .await
    }

    async fn insert_rows(
        &mut self,
        now: DateTime<Utc>,
        rows: &[LedgerRow<'_>],
    ) -> sqlx::Result<()> {
        let col = |f: fn(&LedgerRow<'_>) -> String| rows.iter().map(f).collect::<Vec<String>>();
        let ids = col(|r| r.id.clone());
        let accounts = col(|r| r.account_id.clone());
        let kinds = col(|r| r.entry.kind.as_str().to_owned());
        let data = col(|r| r.entry.data.to_string());
        let amounts: Vec<i64> = rows.iter().map(|r| r.entry.delta).collect();
        let balances: Vec<i64> = rows.iter().map(|r| r.balance_after).collect();
        let keys: Vec<Option<&str>> = rows.iter().map(|r| r.entry.idem_key.as_deref()).collect();
        sqlx::query(
            "INSERT INTO credit_transactions \
             (id, account_id, kind, amount, balance_after, data, idem_key, created_at) \
             SELECT id, account_id, kind, amount, balance_after, data::jsonb, idem_key, $8 \
             FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], \
                         $6::text[], $7::text[]) \
                  AS r(id, account_id, kind, amount, balance_after, data, idem_key)",
        )
        .bind(ids)
        .bind(accounts)
        .bind(kinds)
        .bind(amounts)
        .bind(balances)
        .bind(data)
        .bind(keys)
        .bind(now)
        .execute(&mut **self)
        .await
        .map(drop)
    }
}

/// The largest balance that `delta` can be added to without leaving 64 bits: the SQL
/// checks it before adding, so an absurd credit fails alone instead of failing the
/// statement (and with it every change of the batch).
fn balance_cap(delta: i64) -> i64 {
    if delta > 0 {
        i64::MAX - delta
    } else {
        i64::MAX
    }
}

/// The careful path: each change in its own savepoint, so a change that cannot apply
/// leaves nothing behind and does not affect the others; still one commit.
async fn apply_each(db: &Db, changes: &[Change]) -> sqlx::Result<Vec<Applied>> {
    let now = now();
    // PostgreSQL locks rows as updates reach them; batches (and transfers) touching the
    // same accounts in different orders would deadlock. Lock every account of the batch
    // first, in one global order. (SQLite has a single writer: nothing to order.)
    let mut accounts: Vec<&str> = changes
        .iter()
        .flat_map(|c| c.entries.iter().map(|e| e.user_id.as_str()))
        .collect();
    accounts.sort_unstable();
    accounts.dedup();
    let lock_first = matches!(db, Db::Postgres(_));
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if lock_first {
            for user_id in &accounts {
                sqlx::query("SELECT id FROM credit_accounts WHERE user_id = $1 FOR UPDATE")
                    .bind(*user_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let mut results = Vec::with_capacity(changes.len());
        for change in changes {
            let mut sp = sqlx::Acquire::begin(&mut tx).await?;
            let outcome = 'change: {
                let mut balances = Vec::with_capacity(change.entries.len());
                let mut ids = Vec::with_capacity(change.entries.len());
                for e in &change.entries {
                    let updated: Option<(String, i64)> = sqlx::query_as(
                        "UPDATE credit_accounts SET balance = balance + $1, updated_at = $3 \
                         WHERE user_id = $2 AND balance <= $4 AND balance + $1 >= 0 \
                         RETURNING id, balance",
                    )
                    .bind(e.delta).bind(&e.user_id).bind(now).bind(balance_cap(e.delta))
                    .fetch_optional(&mut *sp).await?;
                    let Some((account_id, balance)) = updated else {
                        let current: Option<(i64,)> =
                            sqlx::query_as("SELECT balance FROM credit_accounts WHERE user_id = $1")
                                .bind(&e.user_id).fetch_optional(&mut *sp).await?;
                        break 'change match current {
                            Some((b,)) => Applied::Insufficient { user_id: e.user_id.clone(), balance: b },
                            None => Applied::NoAccount { user_id: e.user_id.clone() },
                        };
                    };
                    let id = uuid::Uuid::now_v7().to_string();
                    let inserted = sqlx::query(
                        "INSERT INTO credit_transactions (id, account_id, kind, amount, balance_after, data, idem_key, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(&id).bind(&account_id).bind(e.kind).bind(e.delta).bind(balance)
                    .bind(Json(&e.data)).bind(&e.idem_key).bind(now)
                    .execute(&mut *sp).await;
                    match inserted {
                        Ok(_) => {}
                        Err(err) if crate::db::unique_violation(&err).is_some() => break 'change Applied::Duplicate,
                        Err(err) => return Err(err),
                    }
                    balances.push((e.user_id.clone(), balance));
                    ids.push(id);
                }
                Applied::Done { balances, transaction_ids: ids }
            };
            if matches!(outcome, Applied::Done { .. }) {
                sp.commit().await?;
            } else {
                sp.rollback().await?;
            }
            results.push(outcome);
        }
        tx.commit().await?;
        Ok(results)
    })
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccountRow {
    pub id: String,
    pub user_id: String,
    pub balance: i64,
    pub created_at: DateTime<Utc>,
}

pub async fn account(db: &Db, user_id: &str) -> sqlx::Result<Option<AccountRow>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT id, user_id, balance, created_at, updated_at FROM credit_accounts WHERE user_id = $1"
    ).bind(user_id).fetch_optional(p).await)
}

pub async fn account_by_id(db: &Db, id: &str) -> sqlx::Result<Option<AccountRow>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT id, user_id, balance, created_at, updated_at FROM credit_accounts WHERE id = $1"
    ).bind(id).fetch_optional(p).await)
}

/// Creates the user's account if it has none; `true` when created.
pub async fn ensure_account(db: &Db, user_id: &str) -> sqlx::Result<bool> {
    let now = now();
    let n = with_db!(db, p => sqlx::query(
        "INSERT INTO credit_accounts (id, user_id, balance, created_at, updated_at) \
         VALUES ($1, $2, 0, $3, $3) ON CONFLICT (user_id) DO NOTHING"
    ).bind(uuid::Uuid::new_v4().to_string()).bind(user_id).bind(now)
     .execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

#[derive(Debug, sqlx::FromRow, serde::Serialize)]
pub struct TransactionRow {
    pub id: String,
    pub account_id: String,
    pub kind: crate::states::LedgerKind,
    pub amount: i64,
    pub balance_after: i64,
    pub data: Json<Value>,
    pub created_at: DateTime<Utc>,
}

/// The ledger row an account holds under `idem_key` (a change made once per key):
/// (transaction id, amount, balance after).
pub async fn by_idem_key(
    db: &Db,
    user_id: &str,
    idem_key: &str,
) -> sqlx::Result<Option<(String, i64, i64)>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT t.id, t.amount, t.balance_after FROM credit_transactions t \
         JOIN credit_accounts a ON a.id = t.account_id WHERE a.user_id = $1 AND t.idem_key = $2"
    ).bind(user_id).bind(idem_key).fetch_optional(p).await)
}

/// Newest first.
pub async fn history(
    db: &Db,
    user_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<TransactionRow>, i64)> {
    const SQL: &str =
        "SELECT t.id, t.account_id, t.kind, t.amount, t.balance_after, t.data, t.created_at \
        FROM credit_transactions t JOIN credit_accounts a ON a.id = t.account_id \
        WHERE a.user_id = $1 ORDER BY t.created_at DESC, t.id DESC LIMIT $2 OFFSET $3";
    let rows = with_db!(db, p => sqlx::query_as(SQL).bind(user_id).bind(limit).bind(offset).fetch_all(p).await)?;
    let (total,): (i64,) = with_db!(db, p => sqlx::query_as(
        "SELECT COUNT(*) FROM credit_transactions t JOIN credit_accounts a ON a.id = t.account_id WHERE a.user_id = $1"
    ).bind(user_id).fetch_one(p).await)?;
    Ok((rows, total))
}

/// Paying-tier accounts (user id, level) not yet holding a ledger row with `idem_key`
/// (`monthly:<YYYY-MM>`), after `after` in user-id order: one page of who is due this
/// month. The anti-join uses the ledger's unique (account, idem_key) index, so a round
/// after everyone was paid reads no ledger rows it does not need.
pub async fn due_monthly(
    db: &Db,
    idem_key: &str,
    after: &str,
    limit: i64,
) -> sqlx::Result<Vec<(String, i64)>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT u.id, u.level FROM users u JOIN credit_accounts a ON a.user_id = u.id \
         WHERE u.level >= 20 AND u.deleted_at IS NULL AND u.id > $2 AND NOT EXISTS \
         (SELECT 1 FROM credit_transactions t WHERE t.account_id = a.id AND t.idem_key = $1) \
         ORDER BY u.id LIMIT $3"
    ).bind(idem_key).bind(after).bind(limit).fetch_all(p).await)
}
