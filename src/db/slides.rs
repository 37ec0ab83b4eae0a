//! Slide decks, revisions, assets, jobs and publications (their idempotency records are
//! `db::idempotency`).
//!
//! Version-checked changes are conditional updates (`WHERE version = $expected`) inside
//! one transaction with the rows they add, so a stale version changes nothing.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sqlx::types::Json;
// Statements are assembled from the column-list constants below only, never from input.
use sqlx::AssertSqlSafe;

use crate::db::{now, BeginWrite, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeckRow {
    pub id: String,
    pub owner_id: String,
    pub organization_id: Option<String>,
    pub domain: Option<String>,
    pub title: Option<String>,
    pub version: i64,
    pub current_revision_id: String,
    pub data: Json<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const DECK_COLUMNS: &str = "d.id, d.owner_id, d.organization_id, o.domain, d.title, d.version, \
     d.current_revision_id, d.data, d.created_at, d.updated_at";
const DECK_FROM: &str = " FROM slide_decks d LEFT JOIN organizations o ON o.id = d.organization_id";

impl DeckRow {
    pub fn presentation_key(&self) -> &str {
        self.data.0["presentation_key"].as_str().unwrap_or("")
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RevisionRow {
    pub content: Json<Value>,
    #[sqlx(flatten)]
    pub summary: RevisionSummary,
}

/// A revision without its content: what lists show (finding M1: a list never reads
/// contents, which may be a megabyte each).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RevisionSummary {
    pub id: String,
    pub deck_id: String,
    pub version: i64,
    pub source: String,
    pub restored_from: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub slide_count: i64,
}

const SUMMARY_COLUMNS: &str =
    "id, deck_id, version, source, restored_from, created_by, created_at, slide_count";
const REVISION_COLUMNS: &str =
    "id, deck_id, version, source, restored_from, created_by, created_at, slide_count, content";

/// A new revision: the deck as saved (its JSON in `content`) and how it was written.
pub struct NewRevision<'a> {
    pub deck: &'a plinth_slides::Deck,
    pub content: &'a Value,
    pub source: &'a str,
    pub restored_from: Option<&'a str>,
    pub created_by: &'a str,
}

/// Adds a revision row and its image references; `$3` is its version.
const INSERT_REVISION: &str = "INSERT INTO slide_revisions (id, deck_id, version, content, source, \
    restored_from, created_by, created_at, slide_count) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const INSERT_REVISION_ASSET: &str =
    "INSERT INTO slide_revision_assets (revision_id, deck_id, asset_id) \
    VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";

pub async fn create_deck(
    db: &Db,
    owner_id: &str,
    organization_id: Option<&str>,
    presentation_key: &str,
    rev: NewRevision<'_>,
) -> sqlx::Result<(DeckRow, RevisionRow)> {
    let deck_id = uuid::Uuid::new_v4().to_string();
    let rev_id = uuid::Uuid::new_v4().to_string();
    let now = now();
    let data = json!({ "presentation_key": presentation_key });
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        sqlx::query("INSERT INTO slide_decks (id, owner_id, organization_id, title, version, \
            current_revision_id, data, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $7)")
            .bind(&deck_id).bind(owner_id).bind(organization_id).bind(rev.deck.title.as_deref())
            .bind(&rev_id).bind(Json(&data)).bind(now)
            .execute(&mut *tx).await?;
        sqlx::query(INSERT_REVISION)
            .bind(&rev_id).bind(&deck_id).bind(1i64).bind(Json(rev.content)).bind(rev.source)
            .bind(rev.restored_from).bind(rev.created_by).bind(now).bind(rev.deck.slides.len() as i64)
            .execute(&mut *tx).await?;
        for asset in rev.deck.asset_ids() {
            sqlx::query(INSERT_REVISION_ASSET).bind(&rev_id).bind(&deck_id).bind(asset)
                .execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok::<(), sqlx::Error>(())
    })?;
    let deck = deck(db, &deck_id).await?.ok_or(sqlx::Error::RowNotFound)?;
    let revision = revision(db, &deck_id, &rev_id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    Ok((deck, revision))
}

/// A deck that is not deleted.
pub async fn deck(db: &Db, id: &str) -> sqlx::Result<Option<DeckRow>> {
    let sql = format!("SELECT {DECK_COLUMNS}{DECK_FROM} WHERE d.id = $1 AND d.deleted_at IS NULL");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(p).await)
}

/// The caller's personal decks and the decks of organizations they belong to.
pub async fn list(db: &Db, user_id: &str) -> sqlx::Result<Vec<DeckRow>> {
    let sql = format!(
        "SELECT {DECK_COLUMNS}{DECK_FROM} WHERE d.deleted_at IS NULL AND \
         ((d.organization_id IS NULL AND d.owner_id = $1) OR d.organization_id IN \
          (SELECT organization_id FROM organization_members WHERE user_id = $1)) \
         ORDER BY d.updated_at DESC, d.id"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(user_id).fetch_all(p).await)
}

/// Saves a new revision if the deck is at `expected` (its version then advances);
/// `None` when it is not (or is gone).
pub async fn save_revision(
    db: &Db,
    deck_id: &str,
    expected: i64,
    rev: NewRevision<'_>,
) -> sqlx::Result<Option<(DeckRow, RevisionRow)>> {
    let rev_id = uuid::Uuid::new_v4().to_string();
    let now = now();
    let saved = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let bumped = sqlx::query("UPDATE slide_decks SET version = version + 1, current_revision_id = $3, \
            title = $4, updated_at = $5 WHERE id = $1 AND version = $2 AND deleted_at IS NULL")
            .bind(deck_id).bind(expected).bind(&rev_id).bind(rev.deck.title.as_deref()).bind(now)
            .execute(&mut *tx).await?.rows_affected();
        if bumped == 0 {
            return Ok(None);
        }
        sqlx::query(INSERT_REVISION)
            .bind(&rev_id).bind(deck_id).bind(expected + 1).bind(Json(rev.content)).bind(rev.source)
            .bind(rev.restored_from).bind(rev.created_by).bind(now).bind(rev.deck.slides.len() as i64)
            .execute(&mut *tx).await?;
        for asset in rev.deck.asset_ids() {
            sqlx::query(INSERT_REVISION_ASSET).bind(&rev_id).bind(deck_id).bind(asset)
                .execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok::<bool, sqlx::Error>(true)
    })?;
    if !saved {
        return Ok(None);
    }
    let deck = deck(db, deck_id).await?.ok_or(sqlx::Error::RowNotFound)?;
    let revision = revision(db, deck_id, &rev_id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    Ok(Some((deck, revision)))
}

/// Deletes the deck (kept as a tombstone) and revokes its publications, if it is at
/// `expected`; false otherwise.
pub async fn delete_deck(db: &Db, deck_id: &str, expected: i64) -> sqlx::Result<bool> {
    let now = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let n = sqlx::query("UPDATE slide_decks SET deleted_at = $3, updated_at = $3 \
            WHERE id = $1 AND version = $2 AND deleted_at IS NULL")
            .bind(deck_id).bind(expected).bind(now)
            .execute(&mut *tx).await?.rows_affected();
        if n == 0 {
            return Ok(false);
        }
        sqlx::query("UPDATE slide_publications SET status = 'revoked', revoked_at = $2 \
            WHERE deck_id = $1 AND status = 'active'")
            .bind(deck_id).bind(now).execute(&mut *tx).await?;
        sqlx::query("UPDATE slide_jobs SET status = 'cancelled', updated_at = $2, finished_at = $2 \
            WHERE deck_id = $1 AND status IN ('pending', 'running')")
            .bind(deck_id).bind(now).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    })
}

/// One page of a deck's revisions, newest first, without contents; and how many there are.
pub async fn revisions(
    db: &Db,
    deck_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<RevisionSummary>, i64)> {
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM slide_revisions WHERE deck_id = $1 \
         ORDER BY version DESC LIMIT $2 OFFSET $3"
    );
    with_db!(db, p => {
        let rows = sqlx::query_as(AssertSqlSafe(sql.as_str()))
            .bind(deck_id).bind(limit).bind(offset).fetch_all(p).await?;
        let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM slide_revisions WHERE deck_id = $1")
            .bind(deck_id).fetch_one(p).await?;
        Ok((rows, total))
    })
}

pub async fn revision(db: &Db, deck_id: &str, id: &str) -> sqlx::Result<Option<RevisionRow>> {
    let sql =
        format!("SELECT {REVISION_COLUMNS} FROM slide_revisions WHERE deck_id = $1 AND id = $2");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(deck_id).bind(id).fetch_optional(p).await)
}

/// Whether any retained revision of the deck shows the image (an index lookup, M1).
pub async fn asset_in_use(db: &Db, deck_id: &str, asset_id: &str) -> sqlx::Result<bool> {
    let row: Option<(String,)> = with_db!(db, p => sqlx::query_as(
        "SELECT asset_id FROM slide_revision_assets WHERE deck_id = $1 AND asset_id = $2 LIMIT 1"
    ).bind(deck_id).bind(asset_id).fetch_optional(p).await)?;
    Ok(row.is_some())
}

// ---- assets ----

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AssetRow {
    pub id: String,
    pub deck_id: String,
    pub file: String,
    #[sqlx(rename = "type")]
    pub mime: String,
    pub size: i64,
    pub sha256: String,
    pub object_key: String,
    pub status: plinth_vocab::AssetStatus,
    pub reason: Option<String>,
    pub format: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const ASSET_COLUMNS: &str = "id, deck_id, created_by, file, type, size, sha256, object_key, \
     status, reason, format, width, height, created_at, updated_at";

pub struct NewAsset<'a> {
    pub id: &'a str,
    pub deck_id: &'a str,
    pub created_by: &'a str,
    pub file: &'a str,
    pub mime: &'a str,
    pub size: i64,
    pub sha256: &'a str,
    pub object_key: &'a str,
}

pub async fn create_asset(db: &Db, a: NewAsset<'_>) -> sqlx::Result<AssetRow> {
    let sql = format!(
        "INSERT INTO slide_assets (id, deck_id, created_by, file, type, size, sha256, object_key, \
         status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending_upload', $9, $9) \
         RETURNING {ASSET_COLUMNS}"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str()))
        .bind(a.id).bind(a.deck_id).bind(a.created_by).bind(a.file).bind(a.mime).bind(a.size)
        .bind(a.sha256).bind(a.object_key).bind(now())
        .fetch_one(p).await)
}

pub async fn asset(db: &Db, id: &str) -> sqlx::Result<Option<AssetRow>> {
    let sql = format!("SELECT {ASSET_COLUMNS} FROM slide_assets WHERE id = $1");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(p).await)
}

/// Assets of a deck, by id (those the content references).
pub async fn deck_assets(db: &Db, deck_id: &str) -> sqlx::Result<Vec<AssetRow>> {
    let sql = format!("SELECT {ASSET_COLUMNS} FROM slide_assets WHERE deck_id = $1");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(deck_id).fetch_all(p).await)
}

/// Moves an uploaded (or rejected) asset to `validating` and queues its check, in one
/// transaction; the row either way.
pub async fn start_validation(db: &Db, id: &str) -> sqlx::Result<Option<AssetRow>> {
    use plinth_workers::Enqueue;
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let moved = sqlx::query("UPDATE slide_assets SET status = 'validating', reason = NULL, updated_at = $2 \
            WHERE id = $1 AND status IN ('pending_upload', 'rejected')")
            .bind(id).bind(now()).execute(&mut *tx).await?.rows_affected();
        if moved > 0 {
            tx.enqueue(plinth_workers::ImageTask { asset_id: id.to_owned() }).await?;
        }
        tx.commit().await?;
        if moved > 0 {
            plinth_workers::wake(plinth_workers::QueueName::Images);
        }
        Ok::<(), sqlx::Error>(())
    })?;
    asset(db, id).await
}

/// Records the validation verdict, if the asset is still being validated.
pub async fn judge_asset(
    db: &Db,
    id: &str,
    ready: Option<(&str, i64, i64)>,
    reason: Option<&str>,
) -> sqlx::Result<()> {
    let (status, format, w, h) = match ready {
        Some((f, w, h)) => ("ready", Some(f), Some(w), Some(h)),
        None => ("rejected", None, None, None),
    };
    with_db!(db, p => sqlx::query("UPDATE slide_assets SET status = $2, reason = $3, format = $4, width = $5, \
        height = $6, updated_at = $7 WHERE id = $1 AND status = 'validating'")
        .bind(id).bind(status).bind(reason).bind(format).bind(w).bind(h).bind(now())
        .execute(p).await.map(|_| ()))?;
    crate::db::watch::changed(&asset_watch(id));
    Ok(())
}

/// What an upload waiting for its image check watches (`crate::db::watch`; job ids are bare
/// UUIDs, so the prefix keeps the two apart).
pub fn asset_watch(asset_id: &str) -> String {
    format!("asset:{asset_id}")
}

pub async fn delete_asset(db: &Db, id: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query("DELETE FROM slide_assets WHERE id = $1")
        .bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

// ---- jobs ----

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: String,
    pub deck_id: String,
    pub revision_id: String,
    pub format: String,
    pub status: plinth_vocab::ExportStatus,
    pub done: i64,
    pub total: i64,
    pub attempts: i64,
    pub error: Option<String>,
    pub artifacts: Json<Value>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Where the completion event goes (issue 34), if the client asked for one.
    pub callback_url: Option<String>,
}

const JOB_COLUMNS: &str =
    "id, deck_id, revision_id, format, status, done, total, attempts, error, \
     artifacts, requested_by, created_at, started_at, finished_at, updated_at, callback_url";

/// Writes a pending export and queues it, in one transaction: the row and its task
/// exist together or not at all.
pub async fn create_job(
    db: &Db,
    deck_id: &str,
    revision_id: &str,
    format: &str,
    requested_by: &str,
    callback_url: Option<&str>,
) -> sqlx::Result<JobRow> {
    use plinth_workers::Enqueue;
    let sql = format!(
        "INSERT INTO slide_jobs (id, deck_id, revision_id, format, status, artifacts, requested_by, \
         created_at, updated_at, callback_url) VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $7, $8) \
         RETURNING {JOB_COLUMNS}"
    );
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let row: JobRow = sqlx::query_as(AssertSqlSafe(sql.as_str()))
            .bind(&id).bind(deck_id).bind(revision_id).bind(format).bind(Json(json!([])))
            .bind(requested_by).bind(now()).bind(callback_url)
            .fetch_one(&mut *tx).await?;
        tx.enqueue(plinth_workers::ExportTask { job_id: id.clone() }).await?;
        tx.commit().await?;
        plinth_workers::wake(plinth_workers::QueueName::Export);
        Ok(row)
    })
}

/// Exports a user has queued or running (the live-render cap).
pub async fn live_jobs_of(db: &Db, user_id: &str) -> sqlx::Result<i64> {
    let (n,): (i64,) = with_db!(db, p => sqlx::query_as(
        "SELECT COUNT(*) FROM slide_jobs WHERE requested_by = $1 AND status IN ('pending', 'running')"
    ).bind(user_id).fetch_one(p).await)?;
    Ok(n)
}

pub async fn job(db: &Db, id: &str) -> sqlx::Result<Option<JobRow>> {
    let sql = format!("SELECT {JOB_COLUMNS} FROM slide_jobs WHERE id = $1");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(p).await)
}

/// Cancels a job that has not ended: whether it did, and the row after. A job no worker
/// has taken yet is cancelled in the queue too (its task, found by the client's job id,
/// its idempotency key there), in the same transaction, so operators see it `cancelled`
/// rather than a run that found nothing to do; a running one stops at its next slide.
pub async fn cancel_job(db: &Db, id: &str) -> sqlx::Result<Option<(bool, JobRow)>> {
    let now = now();
    let (cancelled, call) = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let ended: Option<(Option<String>,)> = sqlx::query_as("UPDATE slide_jobs SET status = 'cancelled', \
            finished_at = $2, updated_at = $2 WHERE id = $1 AND status IN ('pending', 'running') \
            RETURNING callback_url")
            .bind(id).bind(now).fetch_optional(&mut *tx).await?;
        if ended.is_some() {
            use plinth_workers::queue::tables::Tables;
            tx.cancel_keyed::<plinth_workers::ExportTask>(id, "cancelled by its client").await?;
        }
        // The completion event is queued with the end, or not at all.
        let call = matches!(ended, Some((Some(_),)));
        if call {
            use plinth_workers::Enqueue;
            tx.enqueue(plinth_workers::CallbackTask::new(id)).await?;
        }
        tx.commit().await?;
        (ended.is_some(), call)
    });
    if call {
        plinth_workers::wake(plinth_workers::QueueName::Callbacks);
    }
    if cancelled {
        crate::db::watch::changed(id);
    }
    Ok(job(db, id).await?.map(|j| (cancelled, j)))
}

/// What [`start_job`] found.
pub enum Started {
    /// Claimed by `owner` (the attempt is counted): run it.
    Claimed(Box<JobRow>),
    /// Another run holds a live lease on it until then.
    Leased(DateTime<Utc>),
    /// Ended (succeeded or failed) or unknown.
    Ended,
    /// Cancelled by its client.
    Cancelled,
}

/// Claims a job for the run `owner` until `lease_until`: a pending job, or a running one
/// whose lease lapsed (its run died or stalled). One conditional update, so of two runs
/// at most one holds a job at any time.
pub async fn start_job(
    db: &Db,
    id: &str,
    owner: &str,
    lease_until: DateTime<Utc>,
) -> sqlx::Result<Started> {
    let sql = format!(
        "UPDATE slide_jobs SET status = 'running', attempts = attempts + 1, \
         lease_owner = $3, lease_until = $4, \
         started_at = COALESCE(started_at, $2), updated_at = $2 \
         WHERE id = $1 AND (status = 'pending' OR (status = 'running' \
             AND (lease_until IS NULL OR lease_until < $2))) RETURNING {JOB_COLUMNS}"
    );
    let now = now();
    let claimed: Option<JobRow> = with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str()))
        .bind(id).bind(now).bind(owner).bind(lease_until).fetch_optional(p).await)?;
    if let Some(row) = claimed {
        crate::db::watch::changed(id);
        return Ok(Started::Claimed(Box::new(row)));
    }
    let lease: Option<(String, Option<DateTime<Utc>>)> = with_db!(db, p => sqlx::query_as(
        "SELECT status, lease_until FROM slide_jobs WHERE id = $1"
    ).bind(id).fetch_optional(p).await)?;
    Ok(match lease {
        // Lapsed between the two statements: the caller asks again at once.
        Some((status, until)) if status == "running" => Started::Leased(until.unwrap_or(now)),
        Some((status, _)) if status == "cancelled" => Started::Cancelled,
        _ => Started::Ended,
    })
}

/// Extends the lease of the run `owner` (and records progress when given); false when
/// the job is no longer running or another run took it over.
pub async fn renew_job(
    db: &Db,
    id: &str,
    owner: &str,
    lease_until: DateTime<Utc>,
    progress: Option<(i64, i64)>,
) -> sqlx::Result<bool> {
    let reported = progress.is_some();
    let n = match progress {
        Some((done, total)) => {
            with_db!(db, p => sqlx::query("UPDATE slide_jobs SET done = $4, total = $5, \
            lease_until = $3, updated_at = $6 WHERE id = $1 AND status = 'running' AND lease_owner = $2")
            .bind(id).bind(owner).bind(lease_until).bind(done).bind(total).bind(now())
            .execute(p).await.map(|r| r.rows_affected()))?
        }
        // A renewal alone leaves `updated_at` (the sweep's "no progress since") alone.
        None => with_db!(db, p => sqlx::query("UPDATE slide_jobs SET lease_until = $3 \
            WHERE id = $1 AND status = 'running' AND lease_owner = $2")
            .bind(id).bind(owner).bind(lease_until)
            .execute(p).await.map(|r| r.rows_affected()))?,
    };
    if reported && n > 0 {
        crate::db::watch::changed(id);
    }
    Ok(n > 0)
}

/// Gives the job up from the run `owner` (it failed and is retried, or its process
/// stops): the job is `pending` again (nobody holds it) and the next run claims it at
/// once. Its progress stays until that run reports its own.
pub async fn release_job(db: &Db, id: &str, owner: &str) -> sqlx::Result<()> {
    let n = with_db!(db, p => sqlx::query("UPDATE slide_jobs SET status = 'pending', lease_owner = NULL, \
        lease_until = NULL, updated_at = $3 WHERE id = $1 AND status = 'running' AND lease_owner = $2")
        .bind(id).bind(owner).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    if n > 0 {
        crate::db::watch::changed(id);
    }
    Ok(())
}

/// Ends a running job held by the run `owner`, publishing its artifacts; false when the
/// job was no longer running (cancelled) or another run holds it.
pub async fn finish_job(
    db: &Db,
    id: &str,
    owner: &str,
    status: &str,
    artifacts: &Value,
    error: Option<&str>,
) -> sqlx::Result<bool> {
    use plinth_workers::Enqueue;
    let now = now();
    let ended: Option<(Option<String>,)> = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let ended: Option<(Option<String>,)> = sqlx::query_as("UPDATE slide_jobs SET status = $2, \
            artifacts = $3, error = $4, done = CASE WHEN $2 = 'succeeded' THEN total ELSE done END, \
            finished_at = $5, updated_at = $5, lease_until = NULL \
            WHERE id = $1 AND status = 'running' AND lease_owner = $6 RETURNING callback_url")
            .bind(id).bind(status).bind(Json(artifacts)).bind(error).bind(now).bind(owner)
            .fetch_optional(&mut *tx).await?;
        // The completion event is queued with the end, or not at all.
        if let Some((Some(_),)) = &ended {
            tx.enqueue(plinth_workers::CallbackTask::new(id)).await?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(ended)
    })?;
    if let Some((callback,)) = &ended {
        crate::db::watch::changed(id);
        if callback.is_some() {
            plinth_workers::wake(plinth_workers::QueueName::Callbacks);
        }
    }
    Ok(ended.is_some())
}

/// Whether some export of this revision succeeded (publishing requires one).
pub async fn revision_rendered(db: &Db, revision_id: &str) -> sqlx::Result<bool> {
    let row: Option<(String,)> = with_db!(db, p => sqlx::query_as(
        "SELECT id FROM slide_jobs WHERE revision_id = $1 AND status = 'succeeded' LIMIT 1"
    ).bind(revision_id).fetch_optional(p).await)?;
    Ok(row.is_some())
}

// ---- publications ----

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PublicationRow {
    pub id: String,
    pub deck_id: String,
    pub revision_id: String,
    pub status: crate::states::PublicationStatus,
    pub content: Json<Value>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

const PUBLICATION_COLUMNS: &str =
    "id, deck_id, revision_id, status, content, created_by, created_at, revoked_at";

pub enum Published {
    Done(PublicationRow),
    StaleVersion,
}

/// Makes `revision_id` the deck's active publication (revoking the previous one), if the
/// deck is at `expected`.
pub async fn publish(
    db: &Db,
    deck_id: &str,
    expected: i64,
    revision_id: &str,
    content: &Value,
    created_by: &str,
) -> sqlx::Result<Published> {
    let id = uuid::Uuid::new_v4().to_string();
    let now = now();
    let sql = format!(
        "INSERT INTO slide_publications (id, deck_id, revision_id, status, content, created_by, created_at) \
         VALUES ($1, $2, $3, 'active', $4, $5, $6) RETURNING {PUBLICATION_COLUMNS}"
    );
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        // Touching the deck row locks it (PostgreSQL) and checks the version.
        let n = sqlx::query("UPDATE slide_decks SET updated_at = updated_at WHERE id = $1 AND version = $2 \
            AND deleted_at IS NULL")
            .bind(deck_id).bind(expected).execute(&mut *tx).await?.rows_affected();
        if n == 0 {
            return Ok(Published::StaleVersion);
        }
        sqlx::query("UPDATE slide_publications SET status = 'revoked', revoked_at = $2 \
            WHERE deck_id = $1 AND status = 'active'")
            .bind(deck_id).bind(now).execute(&mut *tx).await?;
        let row: PublicationRow = sqlx::query_as(AssertSqlSafe(sql.as_str()))
            .bind(&id).bind(deck_id).bind(revision_id).bind(Json(content)).bind(created_by).bind(now)
            .fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(Published::Done(row))
    })
}

pub enum Unpublished {
    Revoked(Vec<String>),
    StaleVersion,
}

pub async fn unpublish(db: &Db, deck_id: &str, expected: i64) -> sqlx::Result<Unpublished> {
    let now = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let n = sqlx::query("UPDATE slide_decks SET updated_at = updated_at WHERE id = $1 AND version = $2 \
            AND deleted_at IS NULL")
            .bind(deck_id).bind(expected).execute(&mut *tx).await?.rows_affected();
        if n == 0 {
            return Ok(Unpublished::StaleVersion);
        }
        let ids: Vec<(String,)> = sqlx::query_as("UPDATE slide_publications SET status = 'revoked', revoked_at = $2 \
            WHERE deck_id = $1 AND status = 'active' RETURNING id")
            .bind(deck_id).bind(now).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        Ok(Unpublished::Revoked(ids.into_iter().map(|r| r.0).collect()))
    })
}

pub async fn active_publication_of(db: &Db, deck_id: &str) -> sqlx::Result<Option<PublicationRow>> {
    let sql = format!(
        "SELECT {PUBLICATION_COLUMNS} FROM slide_publications WHERE deck_id = $1 AND status = 'active'"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(deck_id).fetch_optional(p).await)
}

pub async fn publication(db: &Db, id: &str) -> sqlx::Result<Option<PublicationRow>> {
    let sql = format!("SELECT {PUBLICATION_COLUMNS} FROM slide_publications WHERE id = $1");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(p).await)
}

// ---- upkeep ----

/// What one [`sweep`] changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub assets: u64,
    pub jobs: u64,
    pub idempotency: u64,
}

/// Ends work no worker will finish (finding M11) and forgets old idempotency records
/// (L5). An asset `validating` since before `stuck_before` is rejected (the client may
/// call `assets/complete` again); a job `running` without progress since `stuck_before`,
/// or `pending` since `pending_before`, fails; records older than `records_before` go.
/// Every change is conditional on the state it ends, so concurrent sweeps are harmless.
pub async fn sweep(
    db: &Db,
    stuck_before: DateTime<Utc>,
    pending_before: DateTime<Utc>,
    records_before: DateTime<Utc>,
) -> sqlx::Result<Swept> {
    let now = now();
    with_db!(db, p => {
        let assets = sqlx::query("UPDATE slide_assets SET status = 'rejected', \
            reason = 'validation did not finish; call assets/complete to try again', updated_at = $2 \
            WHERE status = 'validating' AND updated_at < $1")
            .bind(stuck_before).bind(now).execute(p).await?.rows_affected();
        let mut tx = p.begin_write().await?;
        let failed: Vec<(String, Option<String>)> = sqlx::query_as("UPDATE slide_jobs SET status = 'failed', \
            error = 'the export did not finish in time', finished_at = $3, updated_at = $3 \
            WHERE (status = 'running' AND updated_at < $1) OR (status = 'pending' AND created_at < $2) \
            RETURNING id, callback_url")
            .bind(stuck_before).bind(pending_before).bind(now).fetch_all(&mut *tx).await?;
        for (id, _) in failed.iter().filter(|(_, url)| url.is_some()) {
            use plinth_workers::Enqueue;
            tx.enqueue(plinth_workers::CallbackTask::new(id)).await?;
        }
        tx.commit().await?;
        for (id, _) in &failed {
            crate::db::watch::changed(id);
        }
        if failed.iter().any(|(_, url)| url.is_some()) {
            plinth_workers::wake(plinth_workers::QueueName::Callbacks);
        }
        let jobs = failed.len() as u64;
        let idempotency = sqlx::query("DELETE FROM idempotency_records WHERE created_at < $1")
            .bind(records_before).execute(p).await?.rows_affected();
        Ok(Swept { assets, jobs, idempotency })
    })
}
