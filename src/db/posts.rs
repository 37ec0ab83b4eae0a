//! Posts, their threads and replies, and their reception (visits, referrers, backlinks).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use futures::future::BoxFuture;
use plinth_actors::batch::{BatchStore, BatchWriter};

use crate::db::changed::{Changed, Stale};
use crate::db::{now, BeginWrite, Db, StoredJson};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PostRow {
    pub id: String,
    pub r#type: String,
    pub user_id: String,
    pub organization_id: Option<String>,
    pub thread_id: Option<String>,
    pub slug: Option<String>,
    pub src: Option<String>,
    pub data: StoredJson,
    pub published: bool,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The columns a write sets; `published`, `private` and `team_post` are copies of flags
/// in `data`, kept so both databases filter on plain columns.
pub struct PostFields<'a> {
    pub slug: Option<&'a str>,
    pub src: Option<&'a str>,
    pub data: &'a Value,
    pub published: bool,
    pub private: bool,
    pub team_post: bool,
}

macro_rules! columns {
    () => {
        "id, type, user_id, organization_id, thread_id, slug, src, CAST(data AS TEXT) AS data, \
         published, version, created_at, updated_at"
    };
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<PostRow>> {
    const SQL: &str = concat!("SELECT ", columns!(), " FROM posts WHERE id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

pub async fn by_slug(db: &Db, slug: &str) -> sqlx::Result<Option<PostRow>> {
    const SQL: &str = concat!("SELECT ", columns!(), " FROM posts WHERE slug = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(slug).fetch_optional(p).await)
}

/// Filters of the post lists.
#[derive(Default)]
pub struct Filter<'a> {
    pub r#type: Option<&'a str>,
    pub organization_id: Option<&'a str>,
    pub user_id: Option<&'a str>,
    /// The replies of this thread.
    pub thread_id: Option<&'a str>,
    /// Top-level posts only.
    pub top_level: bool,
    /// Published posts only...
    pub published_only: bool,
    /// ...and, when set, also this user's own.
    pub or_owner: Option<&'a str>,
    /// Leave out posts with `data.private: true`.
    pub no_private: bool,
    /// Organization posts only if this reader may read them one by one (published, or
    /// `domain::posts::may_read` in SQL: a member, the author, a team previewer), and
    /// replies only to threads they may read. `None`: no such limit (administrators, or
    /// lists that filter on `published` themselves).
    pub reader: Option<Reader<'a>>,
}

/// A caller who is not an administrator, as the post lists see them.
#[derive(Clone, Copy, Default)]
pub struct Reader<'a> {
    /// `None` for an anonymous caller.
    pub user_id: Option<&'a str>,
    /// A verified account on a granted partner domain (reads `teamPost` drafts).
    pub team_previewer: bool,
}

/// Posts matching `f`, newest first, and how many match in all.
pub async fn list(
    db: &Db,
    f: &Filter<'_>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<PostRow>, i64)> {
    macro_rules! filter {
        () => {
            " WHERE ($1 IS NULL OR type = $1) AND ($2 IS NULL OR organization_id = $2) \
             AND ($3 IS NULL OR user_id = $3) AND ($4 IS NULL OR thread_id = $4) \
             AND (NOT $5 OR thread_id IS NULL) \
             AND (NOT $6 OR published OR ($7 IS NOT NULL AND user_id = $7)) \
             AND (NOT $8 OR NOT private) \
             AND (NOT $9 OR organization_id IS NULL OR published OR user_id = $10 \
                  OR ($11 AND team_post) OR organization_id IN \
                  (SELECT organization_id FROM organization_members WHERE user_id = $10)) \
             AND (NOT $9 OR thread_id IS NULL OR EXISTS (SELECT 1 FROM posts t \
                  WHERE t.id = posts.thread_id AND (t.published OR t.user_id = $10 \
                  OR ($11 AND t.team_post) OR t.organization_id IN \
                  (SELECT organization_id FROM organization_members WHERE user_id = $10))))"
        };
    }
    const SQL: &str = concat!(
        "SELECT ",
        columns!(),
        " FROM posts",
        filter!(),
        " ORDER BY created_at DESC, id LIMIT $12 OFFSET $13"
    );
    const COUNT: &str = concat!("SELECT COUNT(*) FROM posts", filter!());
    let reader = f.reader.unwrap_or_default();
    with_db!(db, p => {
        let rows = sqlx::query_as(SQL)
            .bind(f.r#type).bind(f.organization_id).bind(f.user_id).bind(f.thread_id)
            .bind(f.top_level).bind(f.published_only).bind(f.or_owner).bind(f.no_private)
            .bind(f.reader.is_some()).bind(reader.user_id).bind(reader.team_previewer)
            .bind(limit).bind(offset)
            .fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(COUNT)
            .bind(f.r#type).bind(f.organization_id).bind(f.user_id).bind(f.thread_id)
            .bind(f.top_level).bind(f.published_only).bind(f.or_owner).bind(f.no_private)
            .bind(f.reader.is_some()).bind(reader.user_id).bind(reader.team_previewer)
            .fetch_one(p).await?;
        Ok((rows, total))
    })
}

/// Published replies per thread, for one page of `all-threads` (the same page as
/// `list` with the thread filter: published threads and the caller's own), in one query.
pub async fn reply_counts(
    db: &Db,
    caller: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<std::collections::HashMap<String, i64>> {
    const SQL: &str = "SELECT thread_id, COUNT(*) FROM posts WHERE published AND thread_id IN \
        (SELECT id FROM posts WHERE type = 'THREAD' AND thread_id IS NULL \
         AND (published OR ($1 IS NOT NULL AND user_id = $1)) \
         ORDER BY created_at DESC, id LIMIT $2 OFFSET $3) GROUP BY thread_id";
    let rows: Vec<(String, i64)> = with_db!(db, p => sqlx::query_as(SQL).bind(caller).bind(limit).bind(offset).fetch_all(p).await)?;
    Ok(rows.into_iter().collect())
}

pub struct NewPost<'a> {
    pub r#type: &'a str,
    pub user_id: &'a str,
    pub organization_id: Option<&'a str>,
    pub thread_id: Option<&'a str>,
    pub fields: PostFields<'a>,
}

const INSERT: &str = concat!(
    "INSERT INTO posts (id, type, user_id, organization_id, thread_id, slug, src, data, \
     published, private, team_post, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING ",
    columns!()
);

/// Inserts a post; a taken `slug` or `src` is a unique violation (409).
pub async fn create(db: &Db, n: &NewPost<'_>) -> sqlx::Result<PostRow> {
    let id = uuid::Uuid::new_v4().to_string();
    let f = &n.fields;
    with_db!(db, p => sqlx::query_as(INSERT).bind(&id).bind(n.r#type).bind(n.user_id)
        .bind(n.organization_id).bind(n.thread_id).bind(f.slug).bind(f.src).bind(Json(f.data))
        .bind(f.published).bind(f.private).bind(f.team_post).bind(now()).fetch_one(p).await)
}

/// A post to insert, owned: it may cross to the writer task.
pub struct OwnedPost {
    pub r#type: String,
    pub user_id: String,
    pub organization_id: Option<String>,
    pub thread_id: Option<String>,
    pub slug: Option<String>,
    pub src: Option<String>,
    pub data: Value,
    /// The flag columns (see [`PostFields`]).
    pub published: bool,
    pub private: bool,
    pub team_post: bool,
}

impl OwnedPost {
    fn fields(&self) -> PostFields<'_> {
        PostFields {
            slug: self.slug.as_deref(),
            src: self.src.as_deref(),
            data: &self.data,
            published: self.published,
            private: self.private,
            team_post: self.team_post,
        }
    }

    fn new_post(&self) -> NewPost<'_> {
        NewPost {
            r#type: &self.r#type,
            user_id: &self.user_id,
            organization_id: self.organization_id.as_deref(),
            thread_id: self.thread_id.as_deref(),
            fields: self.fields(),
        }
    }
}

/// Inserts posts. On SQLite, creates that arrive together are written in one
/// transaction by the group-commit writer (`plinth_actors::batch`, as telemetry and the
/// credit ledger do): a commit is the expensive part of an insert there, and one writer
/// never sleeps in SQLite's busy handler. A failed insert (a taken slug) fails alone:
/// SQLite rolls back the statement, not the transaction. PostgreSQL inserts directly.
#[derive(Clone)]
pub enum Writer {
    Direct(Db),
    Batched(BatchWriter<OwnedPost, sqlx::Result<PostRow>>),
}

/// Posts one transaction takes at most.
const BATCH: usize = 64;

impl Writer {
    pub async fn start(db: &Db) -> Result<Writer, ractor::SpawnErr> {
        Ok(match db {
            Db::Sqlite(pool) => Writer::Batched(
                BatchWriter::start(
                    "posts",
                    1,
                    BATCH,
                    std::sync::Arc::new(Batches(pool.clone())),
                )
                .await?,
            ),
            Db::Postgres(_) => Writer::Direct(db.clone()),
        })
    }

    pub fn stop(&self) {
        if let Writer::Batched(w) = self {
            w.stop();
        }
    }

    pub async fn create(&self, post: OwnedPost) -> sqlx::Result<PostRow> {
        match self {
            Writer::Direct(db) => create(db, &post.new_post()).await,
            Writer::Batched(w) => w
                .write("posts", vec![post])
                .await
                .map_err(|why| sqlx::Error::Protocol(format!("post batch not committed: {why}")))?,
        }
    }
}

/// The SQLite store of the group-commit writer: one post per group (as `create` sends).
struct Batches(sqlx::SqlitePool);

impl BatchStore<OwnedPost, sqlx::Result<PostRow>> for Batches {
    fn write<'a>(
        &'a self,
        groups: &'a [Vec<OwnedPost>],
    ) -> BoxFuture<'a, Result<Vec<sqlx::Result<PostRow>>, plinth_actors::StoreError>> {
        Box::pin(async move {
            insert_batch(&self.0, groups.iter().flatten())
                .await
                .map_err(plinth_actors::StoreError::new)
        })
    }
}

async fn insert_batch(
    pool: &sqlx::SqlitePool,
    posts: impl Iterator<Item = &OwnedPost>,
) -> sqlx::Result<Vec<sqlx::Result<PostRow>>> {
    let mut tx = pool.begin_write().await?;
    let mut results = Vec::new();
    for post in posts {
        let n = post.new_post();
        let f = &n.fields;
        results.push(
            sqlx::query_as(INSERT)
                .bind(uuid::Uuid::new_v4().to_string())
                .bind(n.r#type)
                .bind(n.user_id)
                .bind(n.organization_id)
                .bind(n.thread_id)
                .bind(f.slug)
                .bind(f.src)
                .bind(Json(f.data))
                .bind(f.published)
                .bind(f.private)
                .bind(f.team_post)
                .bind(now())
                .fetch_one(&mut *tx)
                .await,
        );
    }
    tx.commit().await?;
    Ok(results)
}

/// Writes the post's next state if nobody wrote since `version`; `None` when somebody
/// did. A taken `slug` or `src` is a unique violation (409).
pub async fn write(
    db: &Db,
    id: &str,
    version: i64,
    f: &PostFields<'_>,
) -> sqlx::Result<Option<Changed<PostRow>>> {
    const SQL: &str = concat!(
        "UPDATE posts SET slug = $3, src = $4, data = $5, published = $6, private = $7, \
         team_post = $8, version = version + 1, updated_at = $9 WHERE id = $1 AND version = $2 \
         RETURNING ",
        columns!()
    );
    let post: Option<PostRow> = with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(version).bind(f.slug).bind(f.src)
        .bind(Json(f.data)).bind(f.published).bind(f.private).bind(f.team_post).bind(now())
        .fetch_optional(p).await)?;
    // The cache is by slug, and the slug may have changed: every cached post goes.
    Ok(post.map(|p| Changed::new(p, Stale::Posts)))
}

/// Deletes the post (its replies and reception go with it, so every cached post is
/// stale).
pub async fn delete(db: &Db, id: &str) -> sqlx::Result<Changed<bool>> {
    const SQL: &str = "DELETE FROM posts WHERE id = $1";
    let n =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(Changed::new(n == 1, Stale::Posts))
}

/// Platform-wide counts, of one type or of all.
#[derive(Debug, sqlx::FromRow)]
pub struct Stats {
    pub total: i64,
    pub published: i64,
    pub private: i64,
    pub team_posts: i64,
    pub replies: i64,
    pub authors: i64,
    pub organizations: i64,
}

pub async fn stats(db: &Db, post_type: Option<&str>) -> sqlx::Result<Stats> {
    const SQL: &str = "SELECT COUNT(*) AS total, \
        COALESCE(SUM(CASE WHEN published THEN 1 ELSE 0 END), 0) AS published, \
        COALESCE(SUM(CASE WHEN private THEN 1 ELSE 0 END), 0) AS private, \
        COALESCE(SUM(CASE WHEN team_post THEN 1 ELSE 0 END), 0) AS team_posts, \
        COALESCE(SUM(CASE WHEN thread_id IS NOT NULL THEN 1 ELSE 0 END), 0) AS replies, \
        COUNT(DISTINCT user_id) AS authors, COUNT(DISTINCT organization_id) AS organizations \
        FROM posts WHERE ($1 IS NULL OR type = $1)";
    with_db!(db, p => sqlx::query_as(SQL).bind(post_type).fetch_one(p).await)
}

/// Posts per type, for `admin-stats` without a type.
pub async fn counts_by_type(db: &Db) -> sqlx::Result<Vec<(String, i64)>> {
    const SQL: &str = "SELECT type, COUNT(*) FROM posts GROUP BY type ORDER BY type";
    with_db!(db, p => sqlx::query_as(SQL).fetch_all(p).await)
}

/// One read of a post that tracks its reception: a visit on `day` (`YYYY-MM-DD`, UTC),
/// and the referrer's domain and URL when the rendering server forwarded one.
pub async fn record_visit(
    db: &Db,
    post_id: &str,
    day: &str,
    referrer: Option<(&str, &str)>,
) -> sqlx::Result<()> {
    const VISIT: &str = "INSERT INTO post_visits (post_id, day, visits) VALUES ($1, $2, 1) \
        ON CONFLICT (post_id, day) DO UPDATE SET visits = post_visits.visits + 1";
    const REFERRER: &str = "INSERT INTO post_referrers (post_id, domain, visits, seen_at) \
        VALUES ($1, $2, 1, $3) ON CONFLICT (post_id, domain) \
        DO UPDATE SET visits = post_referrers.visits + 1, seen_at = $3";
    const BACKLINK: &str = "INSERT INTO post_backlinks (post_id, url, domain, seen_at) \
        VALUES ($1, $2, $3, $4) ON CONFLICT (post_id, url) DO UPDATE SET seen_at = $4";
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        sqlx::query(VISIT).bind(post_id).bind(day).execute(&mut *tx).await?;
        if let Some((domain, url)) = referrer {
            sqlx::query(REFERRER).bind(post_id).bind(domain).bind(at).execute(&mut *tx).await?;
            sqlx::query(BACKLINK).bind(post_id).bind(url).bind(domain).bind(at).execute(&mut *tx).await?;
        }
        tx.commit().await
    })
}

/// A post's reception: visits per day, referrers, backlinks (newest 1,000 of each).
#[allow(clippy::type_complexity)]
pub async fn reception(
    db: &Db,
    post_id: &str,
) -> sqlx::Result<(
    Vec<(String, i64)>,
    Vec<(String, i64, DateTime<Utc>)>,
    Vec<(String, String, DateTime<Utc>)>,
)> {
    const VISITS: &str =
        "SELECT day, visits FROM post_visits WHERE post_id = $1 ORDER BY day DESC LIMIT 1000";
    const REFERRERS: &str =
        "SELECT domain, visits, seen_at FROM post_referrers WHERE post_id = $1 \
        ORDER BY seen_at DESC LIMIT 1000";
    const BACKLINKS: &str = "SELECT url, domain, seen_at FROM post_backlinks WHERE post_id = $1 \
        ORDER BY seen_at DESC LIMIT 1000";
    with_db!(db, p => {
        let visits = sqlx::query_as(VISITS).bind(post_id).fetch_all(p).await?;
        let referrers = sqlx::query_as(REFERRERS).bind(post_id).fetch_all(p).await?;
        let backlinks = sqlx::query_as(BACKLINKS).bind(post_id).fetch_all(p).await?;
        Ok((visits, referrers, backlinks))
    })
}
