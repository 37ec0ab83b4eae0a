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
    let rows = match db {
        Db::Sqlite(pool) => sqlite_batch(pool, now, &sums, &entries).await?,
        Db::Postgres(pool) => postgres_batch(pool, now, &sums, &entries).await?,
    };
    Ok(rows.map(|rows| outcomes(changes, rows)))
}

/// One ledger row of a set-based batch, as written.
struct LedgerRow<'a> {
    id: String,
    account_id: String,
    balance_after: i64,
    entry: &'a plinth_actors::credits::Entry,
}

/// Time-ordered ids: a batch's rows land at the right edge of the primary-key index (a
/// few pages) instead of one random leaf each (issue 46).
fn ledger_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// SQLite (one writer, statements in process): the summed UPDATE, the ledger rows
/// replayed here from what it returned, their INSERT, in one transaction.
async fn sqlite_batch<'a>(
    pool: &sqlx::SqlitePool,
    now: DateTime<Utc>,
    sums: &[(&str, i64)],
    entries: &[&'a plinth_actors::credits::Entry],
) -> sqlx::Result<Option<Vec<LedgerRow<'a>>>> {
    // The rows travel as one JSON array, so every batch reuses one prepared statement
    // whatever its size (issue 46).
    const ADD_SUMS: &str = "UPDATE credit_accounts \
        SET balance = credit_accounts.balance + v.delta, updated_at = $1 \
        FROM (SELECT value ->> 0 AS user_id, value ->> 1 AS delta, value ->> 2 AS cap \
              FROM json_each($2)) AS v \
        WHERE credit_accounts.user_id = v.user_id \
        AND credit_accounts.balance <= v.cap AND credit_accounts.balance + v.delta >= 0 \
        RETURNING credit_accounts.user_id, credit_accounts.id, credit_accounts.balance";
    // `data` travels as a JSON string holding its text, so it is stored exactly as the
    // one-by-one path stores it.
    const INSERT_ROWS: &str = "INSERT INTO credit_transactions \
        (id, account_id, kind, amount, balance_after, data, idem_key, created_at) \
        SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, \
               value ->> 6, $2 FROM json_each($1)";
    let mut tx = pool.begin_write().await?;
    let v: Vec<Value> = sums
        .iter()
        .map(|(user_id, delta)| serde_json::json!([user_id, delta, balance_cap(*delta)]))
        .collect();
    let updated: Vec<(String, String, i64)> = match sqlx::query_as(ADD_SUMS)
        .bind(now)
        .bind(Value::Array(v).to_string())
        .fetch_all(&mut *tx)
        .await
    {
        Ok(rows) => rows,
        // Whatever went wrong, the careful path decides change by change.
        Err(err) => {
            tracing::warn!(error = %err, "set-based credit batch failed; applying one by one");
            return Ok(None);
        }
    };
    let Some(rows) = replay(entries, sums, &updated) else {
        tx.rollback().await?;
        return Ok(None);
    };
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
    let inserted = sqlx::query(INSERT_ROWS)
        .bind(Value::Array(v).to_string())
        .bind(now)
        .execute(&mut *tx)
        .await;
    match inserted {
        Ok(_) => {}
        Err(err) if crate::db::unique_violation(&err).is_some() => {
            tx.rollback().await?;
            return Ok(None);
        }
        Err(err) => return Err(err),
    }
    tx.commit().await?;
    Ok(Some(rows))
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
            id: ledger_id(),
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

/// PostgreSQL: the whole batch as one statement, so it costs one round trip and commits
/// by itself (issue 46). Each account's running balances are known here up to its
/// starting balance: entry k leaves `start + prefix_k`, where `prefix_k` is the sum of
/// the account's deltas up to k. So one conditional UPDATE per account, `start + low >= 0`
/// and `start <= cap` (`low` the lowest prefix, at most 0; `cap` what the highest
/// prefix leaves below `i64::MAX`), proves every balance along the way stays in
/// `0..=i64::MAX`, and returns `start` (the new balance less the summed delta); the
/// ledger rows take `start + prefix_k`. Under READ COMMITTED the row lock takes the
/// newest version of each account and keeps it so until the commit, and the UPDATE adds
/// to that version, so `start` is the balance it added to. When an account is missing
/// or short, the UPDATE skips it and `credit_batch_refused()` (migration 0035) raises:
/// the statement, rows already written included, is undone, and the careful path
/// decides change by change. The table's `balance >= 0` check stays as the backstop.
///
/// The accounts are locked first, one index lookup each in user-id order (the order the
/// careful path and every other batch lock in, so batches of several processes and
/// transfers cannot deadlock), and updated through those locks. The locks cost a WAL
/// record per account; the running sums cost nothing in SQL (they were a `numeric`
/// window sum), and nothing scans the table (docs/benchmarks.md, issue 46, eleventh
/// session).
const BATCH_POSTGRES: &str =
    "WITH v(user_id, delta, low, cap) AS \
       (SELECT * FROM UNNEST($2::text[], $3::int8[], $4::int8[], $5::int8[])), \
    locked AS (SELECT l.id, l.user_id FROM UNNEST($2::text[]) AS k(user_id) \
               CROSS JOIN LATERAL (SELECT id, user_id FROM credit_accounts c \
                                   WHERE c.user_id = k.user_id FOR UPDATE) l), \
    upd AS (UPDATE credit_accounts a SET balance = a.balance + v.delta, updated_at = $1 \
            FROM v JOIN locked l ON l.user_id = v.user_id \
            WHERE a.id = l.id AND a.balance + v.low >= 0 AND a.balance <= v.cap \
            RETURNING a.user_id, a.id, a.balance - v.delta AS start), \
    e AS (SELECT r.n, r.id, u.id AS account_id, r.kind, r.amount, r.data, r.idem_key, \
                 u.start + r.prefix AS balance_after \
          FROM UNNEST($6::text[], $7::text[], $8::text[], $9::int8[], $10::int8[], $11::text[], \
                      $12::text[]) WITH ORDINALITY AS r(id, user_id, kind, amount, prefix, data, idem_key, n) \
          JOIN upd u ON u.user_id = r.user_id), \
    ins AS (INSERT INTO credit_transactions \
            (id, account_id, kind, amount, balance_after, data, idem_key, created_at) \
            SELECT e.id, e.account_id, e.kind, e.amount, e.balance_after, e.data::jsonb, \
                   e.idem_key, $1 FROM e RETURNING 1) \
    SELECT e.account_id, e.balance_after FROM e \
    WHERE CASE WHEN (SELECT count(*) FROM upd) = cardinality($2::text[]) THEN true \
               ELSE credit_batch_refused() END \
    ORDER BY e.n";

/// What `credit_batch_refused()` raises (migration 0035): an account of the batch was
/// missing or short, an expected outcome rather than a fault.
const BATCH_REFUSED: &str = "PB001";

/// Per account (in `sums`' order): the lowest prefix sum (at most 0) and the largest
/// start balance that its highest prefix sum keeps within `i64::MAX`; per entry: its
/// account's prefix sum up to and including it. `None` when a prefix sum leaves 64 bits
/// (the careful path then decides change by change).
fn prefixes(
    sums: &[(&str, i64)],
    entries: &[&plinth_actors::credits::Entry],
) -> Option<(Vec<i64>, Vec<i64>, Vec<i64>)> {
    let mut running: std::collections::HashMap<&str, (i64, i64, i64)> =
        sums.iter().map(|(u, _)| (*u, (0, 0, 0))).collect();
    let mut prefix = Vec::with_capacity(entries.len());
    for e in entries {
        let (sum, low, high) = running.get_mut(e.user_id.as_str())?;
        *sum = sum.checked_add(e.delta)?;
        *low = (*low).min(*sum);
        *high = (*high).max(*sum);
        prefix.push(*sum);
    }
    let (lows, caps) = sums
        .iter()
        .map(|(u, _)| {
            let (_, low, high) = running[u];
            (low, i64::MAX - high)
        })
        .unzip();
    Some((lows, caps, prefix))
}

async fn postgres_batch<'a>(
    pool: &sqlx::PgPool,
    now: DateTime<Utc>,
    sums: &[(&str, i64)],
    entries: &[&'a plinth_actors::credits::Entry],
) -> sqlx::Result<Option<Vec<LedgerRow<'a>>>> {
    let Some((lows, caps, prefix)) = prefixes(sums, entries) else {
        return Ok(None);
    };
    let col = |f: fn(&plinth_actors::credits::Entry) -> String| {
        entries.iter().map(|e| f(e)).collect::<Vec<String>>()
    };
    let ids: Vec<String> = entries.iter().map(|_| ledger_id()).collect();
    let answered: sqlx::Result<Vec<(String, i64)>> = sqlx::query_as(BATCH_POSTGRES)
        .bind(now)
        .bind(sums.iter().map(|s| s.0).collect::<Vec<&str>>())
        .bind(sums.iter().map(|s| s.1).collect::<Vec<i64>>())
        .bind(lows)
        .bind(caps)
        .bind(&ids)
        .bind(col(|e| e.user_id.clone()))
        .bind(col(|e| e.kind.as_str().to_owned()))
        .bind(entries.iter().map(|e| e.delta).collect::<Vec<i64>>())
        .bind(prefix)
        .bind(col(|e| e.data.to_string()))
        .bind(
            entries
                .iter()
                .map(|e| e.idem_key.as_deref())
                .collect::<Vec<Option<&str>>>(),
        )
        .fetch_all(pool)
        .await;
    let written = match answered {
        Ok(written) => written,
        // The database refused the statement (an account short or missing, a repeated
        // idem_key): it rolled back whole, and the careful path decides
        // change by change. An outage is the caller's to classify.
        Err(err) if crate::db::outage(&err).is_none() && err.as_database_error().is_some() => {
            let code = err.as_database_error().and_then(|e| e.code());
            if code.as_deref() != Some(BATCH_REFUSED) && crate::db::unique_violation(&err).is_none()
            {
                tracing::warn!(error = %err, "set-based credit batch failed; applying one by one");
            }
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    if written.len() != entries.len() {
        return Ok(None);
    }
    Ok(Some(
        written
            .into_iter()
            .zip(ids)
            .zip(entries)
            .map(|(((account_id, balance_after), id), entry)| LedgerRow {
                id,
                account_id,
                balance_after,
                entry,
            })
            .collect(),
    ))
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

/// The batch paths against a real database (SQLite here, and PostgreSQL too when
/// `PLINTH_TEST_DATABASE_URL` names one): whatever path a batch takes, each change ends
/// as if applied alone, in order.
#[cfg(test)]
#[path = "credits_batch_tests.rs"]
mod batch_tests;
