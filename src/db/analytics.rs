//! Analytics: sites, their members, events (written by the ingest actor) and their hourly
//! and daily rollups (written by the worker once an hour has ended), the event list, and
//! what the stats read. Every event query filters on `(site_id, created_at)`, the one
//! index besides the id; rollups are read by their primary key `(site_id, period, label)`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use futures::TryStreamExt;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::AssertSqlSafe;

use crate::db::sketch::{self, Sketch};
use crate::db::{now, values_sql, BeginWrite, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SiteRow {
    pub id: String,
    pub owner_id: String,
    pub name: String,
    /// Secret: keys the visitor ids of this site; never sent.
    pub salt: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const SITE: &str = "id, owner_id, name, salt, created_at, updated_at";

pub async fn create_site(
    db: &Db,
    id: &str,
    owner_id: &str,
    name: &str,
    salt: &str,
) -> sqlx::Result<SiteRow> {
    const SQL: &str =
        "INSERT INTO analytics_sites (id, owner_id, name, salt, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $5) RETURNING id, owner_id, name, salt, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(owner_id).bind(name).bind(salt).bind(now()).fetch_one(p).await)
}

/// The hour `t` falls in: hourly rollups are keyed by it.
pub fn hour_of(t: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::DurationRound;
    t.duration_trunc(chrono::TimeDelta::hours(1))
        .expect("UTC times truncate")
}

/// An active (not deleted) site.
pub async fn site(db: &Db, id: &str) -> sqlx::Result<Option<SiteRow>> {
    let sql = format!("SELECT {SITE} FROM analytics_sites WHERE id = $1 AND deleted_at IS NULL");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(p).await)
}

pub async fn rename_site(db: &Db, id: &str, name: &str) -> sqlx::Result<Option<SiteRow>> {
    let sql = format!(
        "UPDATE analytics_sites SET name = $2, updated_at = $3 WHERE id = $1 AND deleted_at IS NULL \
         RETURNING {SITE}"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).bind(name).bind(now()).fetch_optional(p).await)
}

/// Soft delete: the site stops accepting hits and leaves every list; its events stay.
pub async fn delete_site(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE analytics_sites SET deleted_at = $2, updated_at = $2 \
        WHERE id = $1 AND deleted_at IS NULL";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

#[derive(Debug, sqlx::FromRow)]
pub struct ListedSite {
    #[sqlx(flatten)]
    pub site: SiteRow,
    pub access_level: i64,
    pub is_owner: bool,
}

/// Active sites the user owns (access level 100) or is a member of, oldest first.
pub async fn sites_of(db: &Db, user_id: &str) -> sqlx::Result<Vec<ListedSite>> {
    let sql = format!(
        "SELECT {SITE}, CAST(100 AS BIGINT) AS access_level, TRUE AS is_owner FROM analytics_sites \
         WHERE owner_id = $1 AND deleted_at IS NULL \
         UNION ALL \
         SELECT s.id, s.owner_id, s.name, s.salt, s.created_at, s.updated_at, m.level, FALSE \
         FROM analytics_sites s JOIN analytics_members m ON m.site_id = s.id \
         WHERE m.user_id = $1 AND s.deleted_at IS NULL AND s.owner_id <> $1 \
         ORDER BY created_at, id LIMIT 1000"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(user_id).fetch_all(p).await)
}

#[derive(Debug, sqlx::FromRow)]
pub struct SiteForUser {
    #[sqlx(flatten)]
    pub site: SiteRow,
    /// The user's member level, if they are a member.
    pub member_level: Option<i64>,
}

/// An active site with the user's member level, in one query.
pub async fn site_for_user(db: &Db, id: &str, user_id: &str) -> sqlx::Result<Option<SiteForUser>> {
    const SQL: &str = "SELECT s.id, s.owner_id, s.name, s.salt, s.created_at, s.updated_at, \
        m.level AS member_level FROM analytics_sites s \
        LEFT JOIN analytics_members m ON m.site_id = s.id AND m.user_id = $2 \
        WHERE s.id = $1 AND s.deleted_at IS NULL";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(user_id).fetch_optional(p).await)
}

#[derive(Debug, sqlx::FromRow)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub level: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn members(db: &Db, site_id: &str) -> sqlx::Result<Vec<Member>> {
    const SQL: &str = "SELECT m.user_id, u.email, m.level, m.created_at, m.updated_at \
        FROM analytics_members m JOIN users u ON u.id = m.user_id \
        WHERE m.site_id = $1 ORDER BY m.created_at, m.user_id";
    with_db!(db, p => sqlx::query_as(SQL).bind(site_id).fetch_all(p).await)
}

/// A new member; an existing one is a unique violation (409).
pub async fn add_member(db: &Db, site_id: &str, user_id: &str, level: i64) -> sqlx::Result<()> {
    const SQL: &str =
        "INSERT INTO analytics_members (site_id, user_id, level, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $4)";
    with_db!(db, p => sqlx::query(SQL).bind(site_id).bind(user_id).bind(level).bind(now()).execute(p).await.map(|_| ()))
}

pub async fn set_member_level(
    db: &Db,
    site_id: &str,
    user_id: &str,
    level: i64,
) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE analytics_members SET level = $3, updated_at = $4 \
        WHERE site_id = $1 AND user_id = $2";
    let n = with_db!(db, p => sqlx::query(SQL).bind(site_id).bind(user_id).bind(level).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

pub async fn remove_member(db: &Db, site_id: &str, user_id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM analytics_members WHERE site_id = $1 AND user_id = $2";
    let n = with_db!(db, p => sqlx::query(SQL).bind(site_id).bind(user_id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

#[derive(Debug, sqlx::FromRow)]
pub struct EventRow {
    pub id: String,
    pub label: Option<String>,
    pub visitor_id: String,
    pub data: Option<Json<Value>>,
    pub created_at: DateTime<Utc>,
    pub attachment_key: Option<String>,
}

/// Events of a site in `[from, to]`, newest first, after the cursor (the last row's
/// time and id).
pub async fn events(
    db: &Db,
    site_id: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    label: Option<&str>,
    after: Option<(DateTime<Utc>, &str)>,
    limit: i64,
) -> sqlx::Result<Vec<EventRow>> {
    // Optional filters are parameters that may be NULL: one statement text to prepare.
    let sql = format!(
        "SELECT id, label, visitor_id, data, created_at, attachment_key FROM analytics_events \
         WHERE site_id = $1 AND created_at >= $2 AND created_at <= $3 \
         AND ($4 IS NULL OR label = $4) \
         AND ($5 IS NULL OR created_at < $5 OR (created_at = $5 AND id < $6)) \
         ORDER BY created_at DESC, id DESC LIMIT {limit}"
    );
    let (at, id) = after.map_or((None, None), |(t, i)| (Some(t), Some(i)));
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str()))
        .bind(site_id).bind(from).bind(to).bind(label).bind(at).bind(id)
        .fetch_all(p).await)
}

/// The rollup tables: whole UTC hours and days.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Grain {
    Hour,
    Day,
}

impl Grain {
    fn table(self) -> &'static str {
        match self {
            Grain::Hour => "analytics_hourly",
            Grain::Day => "analytics_daily",
        }
    }

    /// The period `t` falls in, as stored: `YYYY-MM-DDTHH` or `YYYY-MM-DD` (UTC).
    pub fn period(self, t: DateTime<Utc>) -> String {
        t.format(match self {
            Grain::Hour => "%Y-%m-%dT%H",
            Grain::Day => "%Y-%m-%d",
        })
        .to_string()
    }
}

/// Rollup rows being built: hits and visitors per (site, period, label); `label` is ''
/// for events without one. Sorted, so writers touch rows in one order.
#[derive(Default)]
struct Cells(BTreeMap<(String, String, String), (i64, Sketch)>);

impl Cells {
    fn add(&mut self, grain: Grain, site: &str, at: DateTime<Utc>, label: Option<&str>, h: u32) {
        let key = (
            site.to_owned(),
            grain.period(at),
            label.unwrap_or_default().to_owned(),
        );
        let cell = self.0.entry(key).or_default();
        cell.0 += 1;
        cell.1.insert(h);
    }
}

/// Both grains of rollups for a set of events.
#[derive(Default)]
struct Rollup {
    hourly: Cells,
    daily: Cells,
}

impl Rollup {
    fn add(&mut self, site: &str, at: DateTime<Utc>, label: Option<&str>, visitor_id: &str) {
        let h = sketch::hash(visitor_id);
        self.hourly.add(Grain::Hour, site, at, label, h);
        self.daily.add(Grain::Day, site, at, label, h);
    }

    fn sites(&self) -> Vec<&str> {
        let mut s: Vec<&str> = self.daily.0.keys().map(|k| k.0.as_str()).collect();
        s.dedup();
        s
    }
}

/// Cells per statement when reading (3 parameters each) and writing (5 each).
const CELLS_PER_STATEMENT: usize = 200;

/// Adds `cells` to the rollup rows of `grain` inside transaction `$tx`: reads the rows
/// that exist, merges in Rust, writes every row back in multi-row upserts. The caller
/// keeps other writers of these rows out (SQLite's write lock; on PostgreSQL the locks
/// at ROLLUP_LOCK). A macro because the body is compiled once per backend, like `with_db!`.
macro_rules! merge_cells {
    ($tx:expr, $grain:expr, $cells:expr) => {{
        let table = $grain.table();
        let mut cells: Cells = $cells;
        let keys: Vec<(String, String, String)> = cells.0.keys().cloned().collect();
        for chunk in keys.chunks(CELLS_PER_STATEMENT) {
            let sql = format!(
                "SELECT site_id, period, label, hits, sketch FROM {table} \
                 WHERE (site_id, period, label) IN (VALUES {})",
                values_sql(chunk.len(), 3, None)
            );
            let mut q = sqlx::query_as::<_, (String, String, String, i64, Vec<u8>)>(AssertSqlSafe(
                sql.as_str(),
            ));
            for k in chunk {
                q = q.bind(&k.0).bind(&k.1).bind(&k.2);
            }
            for (site, period, label, hits, stored) in q.fetch_all(&mut *$tx).await? {
                if let Some(cell) = cells.0.get_mut(&(site, period, label)) {
                    cell.0 += hits;
                    cell.1.merge_bytes(&stored);
                }
            }
        }
        let rows: Vec<_> = cells.0.into_iter().collect();
        for chunk in rows.chunks(CELLS_PER_STATEMENT) {
            let sql = format!(
                "INSERT INTO {table} (site_id, period, label, hits, sketch) VALUES {} \
                 ON CONFLICT (site_id, period, label) DO UPDATE \
                 SET hits = excluded.hits, sketch = excluded.sketch",
                values_sql(chunk.len(), 5, None)
            );
            let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
            for ((site, period, label), (hits, s)) in chunk {
                q = q
                    .bind(site)
                    .bind(period)
                    .bind(label)
                    .bind(*hits)
                    .bind(s.to_bytes());
            }
            q.execute(&mut *$tx).await?;
        }
    }};
}

/// PostgreSQL advisory locks (SQLite's write lock already serializes writers): the roller
/// holds ROLLUP_LOCK exclusively and every ingest transaction shares it, so a hit commits
/// either before a roll reads its hour or after it, when it sees the new `rolled_until`;
/// ingest transactions merging late hits hold SITE_LOCK per site, taken in sorted order.
const ROLLUP_LOCK: (i32, i32) = (16, 0);
const SITE_LOCK: i32 = 17;

/// Where the rollups stand: every event before this is in them, none after it. `None`
/// before the first roll.
pub async fn rolled_until(db: &Db) -> sqlx::Result<Option<DateTime<Utc>>> {
    with_db!(db, p => sqlx::query_scalar("SELECT rolled_until FROM analytics_rollup_state")
        .fetch_one(p).await)
}

/// Rolls up the events before `until` (an hour boundary) that are not yet, at most a day
/// of them per transaction (writers wait for one transaction, not for all); returns how
/// many events were read.
pub async fn roll_up(db: &Db, until: DateTime<Utc>) -> sqlx::Result<u64> {
    let mut read = 0;
    while let Some(n) = roll_up_step(db, until).await? {
        read += n;
    }
    Ok(read)
}

/// One transaction of `roll_up`: `None` once the rollups reach `until`.
async fn roll_up_step(db: &Db, until: DateTime<Utc>) -> sqlx::Result<Option<u64>> {
    let pg = matches!(db, Db::Postgres(_));
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if pg {
            sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
                .bind(ROLLUP_LOCK.0).bind(ROLLUP_LOCK.1).execute(&mut *tx).await?;
        }
        let rolled: Option<DateTime<Utc>> =
            sqlx::query_scalar("SELECT rolled_until FROM analytics_rollup_state")
                .fetch_one(&mut *tx).await?;
        let from = match rolled {
            Some(t) => t,
            // The first roll starts at the hour of the oldest event (one scan, once).
            None => {
                let oldest: Option<DateTime<Utc>> =
                    sqlx::query_scalar("SELECT MIN(created_at) FROM analytics_events")
                        .fetch_one(&mut *tx).await?;
                match oldest {
                    Some(t) => hour_of(t).min(until),
                    None => until,
                }
            }
        };
        if from >= until {
            if rolled.is_none() {
                sqlx::query("UPDATE analytics_rollup_state SET rolled_until = $1")
                    .bind(until).execute(&mut *tx).await?;
                tx.commit().await?;
            }
            return Ok(None);
        }
        let to = (from + chrono::TimeDelta::days(1)).min(until);
        // Site by site through the (site_id, created_at) index (SQLite keeps the order of
        // a CROSS JOIN; to PostgreSQL it is the same join).
        let mut r = Rollup::default();
        let mut read = 0u64;
        {
            let mut rows = sqlx::query_as::<_, (String, Option<String>, String, DateTime<Utc>)>(
                "SELECT e.site_id, e.label, e.visitor_id, e.created_at \
                 FROM analytics_sites s CROSS JOIN analytics_events e \
                 WHERE e.site_id = s.id AND e.created_at >= $1 AND e.created_at < $2",
            ).bind(from).bind(to).fetch(&mut *tx);
            while let Some((site, label, visitor, at)) = rows.try_next().await? {
                r.add(&site, at, label.as_deref(), &visitor);
                read += 1;
            }
        }
        merge_cells!(tx, Grain::Hour, r.hourly);
        merge_cells!(tx, Grain::Day, r.daily);
        sqlx::query("UPDATE analytics_rollup_state SET rolled_until = $1")
            .bind(to).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Some(read))
    })
}

/// Drops every rollup and rolls up again from the events, up to `until` (after an import
/// or a restore). Stats stay right meanwhile: they read the events past `rolled_until`.
pub async fn rebuild_rollups(db: &Db, until: DateTime<Utc>) -> sqlx::Result<u64> {
    let pg = matches!(db, Db::Postgres(_));
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if pg {
            sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
                .bind(ROLLUP_LOCK.0).bind(ROLLUP_LOCK.1).execute(&mut *tx).await?;
        }
        sqlx::query("DELETE FROM analytics_hourly").execute(&mut *tx).await?;
        sqlx::query("DELETE FROM analytics_daily").execute(&mut *tx).await?;
        sqlx::query("UPDATE analytics_rollup_state SET rolled_until = NULL").execute(&mut *tx).await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(())
    })?;
    roll_up(db, until).await
}

/// One hit as written.
pub struct HitRow {
    pub id: String,
    pub site_id: String,
    pub label: Option<String>,
    pub visitor_id: String,
    pub data: Option<Value>,
    pub created_at: DateTime<Utc>,
    /// sha256 of the attachment token, and its end, when the hit asked for one.
    pub attachment: Option<(String, DateTime<Utc>)>,
}

/// The ingest actor's store: every hit of a flush in one transaction.
pub struct Ingest(pub Db);

/// Hits per statement (8 parameters each: far under either database's limit).
const HITS_PER_STATEMENT: usize = 500;

impl Ingest {
    /// Every hit of the flush in multi-row statements of one transaction. Hits of hours
    /// already rolled up (a write that waited past the roll) are merged into the rollups
    /// here; all others are left to the roller.
    async fn write_groups(&self, groups: &[Vec<HitRow>]) -> sqlx::Result<Vec<u64>> {
        let hits: Vec<&HitRow> = groups.iter().flatten().collect();
        let pg = matches!(self.0, Db::Postgres(_));
        with_db!(&self.0, p => {
            let mut tx = p.begin_write().await?;
            if pg {
                sqlx::query("SELECT pg_advisory_xact_lock_shared($1, $2)")
                    .bind(ROLLUP_LOCK.0).bind(ROLLUP_LOCK.1).execute(&mut *tx).await?;
            }
            for chunk in hits.chunks(HITS_PER_STATEMENT) {
                let sql = format!(
                    "INSERT INTO analytics_events (id, site_id, label, visitor_id, data, \
                     created_at, attachment_token_hash, attachment_token_expires_at) VALUES {}",
                    values_sql(chunk.len(), 8, None)
                );
                let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
                for h in chunk {
                    q = q
                        .bind(&h.id)
                        .bind(&h.site_id)
                        .bind(&h.label)
                        .bind(&h.visitor_id)
                        .bind(h.data.as_ref().map(Json))
                        .bind(h.created_at)
                        .bind(h.attachment.as_ref().map(|a| &a.0))
                        .bind(h.attachment.as_ref().map(|a| a.1));
                }
                q.execute(&mut *tx).await?;
            }
            let rolled: Option<DateTime<Utc>> =
                sqlx::query_scalar("SELECT rolled_until FROM analytics_rollup_state")
                    .fetch_one(&mut *tx).await?;
            let mut late = Rollup::default();
            for h in hits.iter().filter(|h| rolled.is_some_and(|r| h.created_at < r)) {
                late.add(&h.site_id, h.created_at, h.label.as_deref(), &h.visitor_id);
            }
            if !late.daily.0.is_empty() {
                if pg {
                    for site in late.sites() {
                        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                            .bind(SITE_LOCK).bind(site).execute(&mut *tx).await?;
                    }
                }
                merge_cells!(tx, Grain::Hour, late.hourly);
                merge_cells!(tx, Grain::Day, late.daily);
            }
            tx.commit().await?;
            Ok(groups.iter().map(|g| g.len() as u64).collect())
        })
    }
}

impl plinth_actors::batch::BatchStore<HitRow> for Ingest {
    fn write<'a>(
        &'a self,
        groups: &'a [Vec<HitRow>],
    ) -> BoxFuture<'a, Result<Vec<u64>, plinth_actors::StoreError>> {
        Box::pin(async move {
            self.write_groups(groups)
                .await
                .map_err(plinth_actors::StoreError::new)
        })
    }
}

/// One rollup row as the stats read it.
#[derive(Debug, sqlx::FromRow)]
pub struct Cell {
    pub period: String,
    pub label: String,
    pub hits: i64,
    pub sketch: Vec<u8>,
}

/// Rollup rows of `grain` for periods in `[from, to)` (the stats filter labels
/// themselves: `domain::analytics::LabelPattern`).
pub async fn cells(
    db: &Db,
    grain: Grain,
    site_id: &str,
    (from, to): (&str, &str),
) -> sqlx::Result<Vec<Cell>> {
    let sql = format!(
        "SELECT period, label, hits, sketch FROM {} \
         WHERE site_id = $1 AND period >= $2 AND period < $3",
        grain.table()
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(site_id).bind(from).bind(to).fetch_all(p).await)
}

/// One event as the stats read it at the edges of a range.
#[derive(Debug, sqlx::FromRow)]
pub struct RawHit {
    pub created_at: DateTime<Utc>,
    pub label: Option<String>,
    pub visitor_id: String,
}

/// Events in `[from, to)` (`[from, to]` with `to_inclusive`).
pub async fn raw_hits(
    db: &Db,
    site_id: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    to_inclusive: bool,
) -> sqlx::Result<Vec<RawHit>> {
    let sql = format!(
        "SELECT created_at, label, visitor_id FROM analytics_events \
         WHERE site_id = $1 AND created_at >= $2 AND created_at {} $3",
        if to_inclusive { "<=" } else { "<" }
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(site_id).bind(from).bind(to).fetch_all(p).await)
}

/// What the attachment routes need of an event.
#[derive(Debug, sqlx::FromRow)]
pub struct EventAttachment {
    pub site_id: String,
    pub attachment_token_hash: Option<String>,
    pub attachment_token_expires_at: Option<DateTime<Utc>>,
    pub attachment_key: Option<String>,
}

pub async fn event_attachment(db: &Db, id: &str) -> sqlx::Result<Option<EventAttachment>> {
    const SQL: &str = "SELECT site_id, attachment_token_hash, attachment_token_expires_at, \
        attachment_key FROM analytics_events WHERE id = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// Records the event's one attachment if the token still holds and there is none yet
/// (one conditional statement); `false` otherwise.
pub async fn claim_attachment(
    db: &Db,
    id: &str,
    token_hash: &str,
    key: &str,
) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE analytics_events SET attachment_key = $3 \
        WHERE id = $1 AND attachment_token_hash = $2 AND attachment_token_expires_at > $4 \
        AND attachment_key IS NULL";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(token_hash).bind(key).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// Attachments of events created before `before`, oldest first.
pub async fn due_attachments(
    db: &Db,
    before: DateTime<Utc>,
    limit: i64,
) -> sqlx::Result<Vec<(String, String)>> {
    let sql = format!(
        "SELECT id, attachment_key FROM analytics_events \
         WHERE attachment_key IS NOT NULL AND created_at < $1 ORDER BY created_at LIMIT {limit}"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(before).fetch_all(p).await)
}

/// The event forgets its attachment (its object is gone).
pub async fn attachment_deleted(db: &Db, id: &str) -> sqlx::Result<()> {
    const SQL: &str = "UPDATE analytics_events SET attachment_key = NULL WHERE id = $1";
    with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|_| ()))
}
