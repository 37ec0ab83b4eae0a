//! Inventory: items of an organization and their units. Removals are soft (`deleted_at`)
//! and every one is written to the inventory ledger in the same transaction.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, BeginWrite, Db};
use crate::states::UnitStatus;
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ItemRow {
    pub id: String,
    pub organization_id: String,
    pub domain: String,
    pub sku: String,
    pub slug: String,
    pub price_cents: i64,
    pub price_tokens: Option<i64>,
    pub min_tier: Option<i64>,
    pub private: bool,
    pub data: Json<Value>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub available_count: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UnitRow {
    pub id: String,
    pub item_id: String,
    pub data: Json<Value>,
    pub status: UnitStatus,
    /// Who claimed or bought it.
    pub holder_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

macro_rules! item_select {
    ($tail:literal) => {
        concat!(
            "SELECT i.id, i.organization_id, o.domain, i.sku, i.slug, i.price_cents, i.price_tokens, \
             i.min_tier, i.private, i.data, i.version, i.created_at, i.updated_at, \
             (SELECT COUNT(*) FROM inventory_units u WHERE u.item_id = i.id \
              AND u.status = 'available' AND u.deleted_at IS NULL) AS available_count \
             FROM inventory_items i JOIN organizations o ON o.id = i.organization_id ",
            $tail
        )
    };
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<ItemRow>> {
    const SQL: &str = item_select!("WHERE i.id = $1 AND i.deleted_at IS NULL");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

pub async fn by_sku(db: &Db, org_id: &str, sku: &str) -> sqlx::Result<Option<ItemRow>> {
    const SQL: &str =
        item_select!("WHERE i.organization_id = $1 AND i.sku = $2 AND i.deleted_at IS NULL");
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).bind(sku).fetch_optional(p).await)
}

/// The organization's items, newest first; private ones only when `with_private`.
pub async fn list(
    db: &Db,
    org_id: &str,
    with_private: bool,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<ItemRow>, i64)> {
    const SQL: &str = item_select!(
        "WHERE i.organization_id = $1 AND i.deleted_at IS NULL AND ($2 OR NOT i.private) \
         ORDER BY i.created_at DESC, i.id LIMIT $3 OFFSET $4"
    );
    const COUNT: &str = "SELECT COUNT(*) FROM inventory_items WHERE organization_id = $1 \
         AND deleted_at IS NULL AND ($2 OR NOT private)";
    with_db!(db, p => {
        let rows = sqlx::query_as(SQL).bind(org_id).bind(with_private).bind(limit).bind(offset).fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(COUNT).bind(org_id).bind(with_private).fetch_one(p).await?;
        Ok((rows, total))
    })
}

/// Candidates of a search: keyword matches (every word, also as a prefix) within a price
/// range, best first for keywords, else newest first; at most `cap` (the handler applies
/// the JSON-field filters to them).
#[allow(clippy::too_many_arguments)]
pub async fn search(
    db: &Db,
    org_id: &str,
    with_private: bool,
    words: &[String],
    min_cents: Option<i64>,
    max_cents: Option<i64>,
    cap: i64,
) -> sqlx::Result<Vec<ItemRow>> {
    let has_words = !words.is_empty();
    match db {
        Db::Sqlite(p) => {
            const SQL: &str = item_select!(
                "LEFT JOIN (SELECT rowid AS r, bm25(inventory_fts) AS score FROM inventory_fts \
                 WHERE $2 AND inventory_fts MATCH $3) f ON f.r = i.rowid \
                 WHERE i.organization_id = $1 AND i.deleted_at IS NULL AND ($4 OR NOT i.private) \
                 AND (NOT $2 OR f.r IS NOT NULL) \
                 AND ($5 IS NULL OR i.price_cents >= $5) AND ($6 IS NULL OR i.price_cents <= $6) \
                 ORDER BY f.score, i.created_at DESC LIMIT $7"
            );
            let query = if has_words {
                words
                    .iter()
                    .map(|w| format!("\"{w}\"*"))
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                "x".to_owned()
            };
            sqlx::query_as(SQL)
                .bind(org_id)
                .bind(has_words)
                .bind(query)
                .bind(with_private)
                .bind(min_cents)
                .bind(max_cents)
                .bind(cap)
                .fetch_all(p)
                .await
        }
        Db::Postgres(p) => {
            const SQL: &str = item_select!(
                "WHERE i.organization_id = $1 AND i.deleted_at IS NULL AND ($4 OR NOT i.private) \
                 AND (NOT $2 OR i.search @@ to_tsquery('simple', $3)) \
                 AND ($5::BIGINT IS NULL OR i.price_cents >= $5) AND ($6::BIGINT IS NULL OR i.price_cents <= $6) \
                 ORDER BY CASE WHEN $2 THEN ts_rank(i.search, to_tsquery('simple', $3)) ELSE 0 END DESC, \
                 i.created_at DESC LIMIT $7"
            );
            let query = if has_words {
                words
                    .iter()
                    .map(|w| format!("{w}:*"))
                    .collect::<Vec<_>>()
                    .join(" & ")
            } else {
                "x".to_owned()
            };
            sqlx::query_as(SQL)
                .bind(org_id)
                .bind(has_words)
                .bind(query)
                .bind(with_private)
                .bind(min_cents)
                .bind(max_cents)
                .bind(cap)
                .fetch_all(p)
                .await
        }
    }
}

pub struct NewItem<'a> {
    pub org_id: &'a str,
    pub sku: &'a str,
    pub slug: &'a str,
    pub price_cents: i64,
    pub price_tokens: Option<i64>,
    pub min_tier: Option<i64>,
    pub private: bool,
    pub data: &'a Value,
}

const INSERT_UNIT: &str =
    "INSERT INTO inventory_units (id, item_id, data, status, created_at, updated_at) \
     VALUES ($1, $2, $3, 'available', $4, $4)";

/// The item and its units, in one transaction; a taken sku or slug is a unique violation.
pub async fn create(db: &Db, n: &NewItem<'_>, units: &[Value]) -> sqlx::Result<String> {
    const SQL: &str = "INSERT INTO inventory_items (id, organization_id, sku, slug, price_cents, \
        price_tokens, min_tier, private, data, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)";
    let id = uuid::Uuid::new_v4().to_string();
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        sqlx::query(SQL).bind(&id).bind(n.org_id).bind(n.sku).bind(n.slug).bind(n.price_cents)
            .bind(n.price_tokens).bind(n.min_tier).bind(n.private).bind(Json(n.data)).bind(at)
            .execute(&mut *tx).await?;
        for data in units {
            sqlx::query(INSERT_UNIT).bind(uuid::Uuid::new_v4().to_string()).bind(&id)
                .bind(Json(data)).bind(at).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(id)
    })
}

/// The mutable fields of an item.
pub struct ItemChange<'a> {
    pub price_cents: i64,
    pub price_tokens: Option<i64>,
    pub min_tier: Option<i64>,
    pub private: bool,
    pub data: &'a Value,
}

/// Writes the item's next state if nobody wrote since `version`.
pub async fn update(db: &Db, id: &str, version: i64, c: &ItemChange<'_>) -> sqlx::Result<bool> {
    const SQL: &str =
        "UPDATE inventory_items SET price_cents = $3, price_tokens = $4, min_tier = $5, \
        private = $6, data = $7, version = version + 1, updated_at = $8 \
        WHERE id = $1 AND version = $2 AND deleted_at IS NULL";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(version).bind(c.price_cents)
        .bind(c.price_tokens).bind(c.min_tier).bind(c.private).bind(Json(c.data)).bind(now())
        .execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

const LEDGER: &str =
    "INSERT INTO inventory_ledger (id, item_id, unit_id, action, actor_id, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6)";

/// Soft-deletes the item and its live units, each removal in the ledger; `false` when it
/// was already gone.
pub async fn remove(db: &Db, id: &str, actor: &str) -> sqlx::Result<bool> {
    const ITEM: &str = "UPDATE inventory_items SET deleted_at = $2, updated_at = $2 \
        WHERE id = $1 AND deleted_at IS NULL";
    const UNITS: &str =
        "UPDATE inventory_units SET status = 'removed', deleted_at = $2, updated_at = $2 \
        WHERE item_id = $1 AND deleted_at IS NULL RETURNING id";
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if sqlx::query(ITEM).bind(id).bind(at).execute(&mut *tx).await?.rows_affected() == 0 {
            return Ok(false);
        }
        let units: Vec<String> = sqlx::query_scalar(UNITS).bind(id).bind(at).fetch_all(&mut *tx).await?;
        for unit in &units {
            sqlx::query(LEDGER).bind(uuid::Uuid::new_v4().to_string()).bind(id).bind(unit)
                .bind("unit_removed").bind(actor).bind(at).execute(&mut *tx).await?;
        }
        sqlx::query(LEDGER).bind(uuid::Uuid::new_v4().to_string()).bind(id).bind(None::<String>)
            .bind("item_removed").bind(actor).bind(at).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    })
}

/// The item's live units, oldest first.
pub async fn units(db: &Db, item_id: &str) -> sqlx::Result<Vec<UnitRow>> {
    const SQL: &str = "SELECT id, item_id, data, status, holder_id, created_at, updated_at \
        FROM inventory_units WHERE item_id = $1 AND deleted_at IS NULL ORDER BY created_at, id";
    with_db!(db, p => sqlx::query_as(SQL).bind(item_id).fetch_all(p).await)
}

pub async fn unit(db: &Db, id: &str) -> sqlx::Result<Option<UnitRow>> {
    const SQL: &str = "SELECT id, item_id, data, status, holder_id, created_at, updated_at \
        FROM inventory_units WHERE id = $1 AND deleted_at IS NULL";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

pub async fn add_units(db: &Db, item_id: &str, units: &[Value]) -> sqlx::Result<Vec<String>> {
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let mut ids = Vec::with_capacity(units.len());
        for data in units {
            let id = uuid::Uuid::new_v4().to_string();
            sqlx::query(INSERT_UNIT).bind(&id).bind(item_id).bind(Json(data)).bind(at)
                .execute(&mut *tx).await?;
            ids.push(id);
        }
        tx.commit().await?;
        Ok(ids)
    })
}

/// Sets a unit's data and status (a claimed or sold unit keeps its holder).
pub async fn update_unit(
    db: &Db,
    id: &str,
    data: &Value,
    status: UnitStatus,
) -> sqlx::Result<Option<UnitRow>> {
    const SQL: &str = "UPDATE inventory_units SET data = $2, status = $3, updated_at = $4 \
        WHERE id = $1 AND deleted_at IS NULL \
        RETURNING id, item_id, data, status, holder_id, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(Json(data)).bind(status).bind(now()).fetch_optional(p).await)
}

/// Soft-deletes a unit with a ledger entry; `false` when it was already gone.
pub async fn remove_unit(db: &Db, unit: &UnitRow, actor: &str) -> sqlx::Result<bool> {
    const SQL: &str =
        "UPDATE inventory_units SET status = 'removed', deleted_at = $2, updated_at = $2 \
        WHERE id = $1 AND deleted_at IS NULL";
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if sqlx::query(SQL).bind(&unit.id).bind(at).execute(&mut *tx).await?.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query(LEDGER).bind(uuid::Uuid::new_v4().to_string()).bind(&unit.item_id).bind(&unit.id)
            .bind("unit_removed").bind(actor).bind(at).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    })
}

/// Whether the user already claimed a unit of the item.
pub async fn has_claimed(db: &Db, item_id: &str, user_id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "SELECT COUNT(*) FROM inventory_units WHERE item_id = $1 AND holder_id = $2 \
        AND status = 'claimed'";
    let n: i64 =
        with_db!(db, p => sqlx::query_scalar(SQL).bind(item_id).bind(user_id).fetch_one(p).await)?;
    Ok(n > 0)
}

/// What a claim came to.
pub enum Claim {
    Taken(UnitRow),
    NoneLeft,
    /// The user already holds a claimed unit of the item (the unique index
    /// `inventory_units_one_claim` decides, so concurrent claims cannot both win).
    AlreadyHeld,
}

/// Gives one available unit of the item to the user, with a ledger entry. The update is
/// conditional on the unit still being available, so two claims never get the same unit;
/// a lost race picks another.
pub async fn claim(db: &Db, item_id: &str, user_id: &str) -> sqlx::Result<Claim> {
    match take_unit(db, item_id, user_id).await {
        Ok(Some(unit)) => Ok(Claim::Taken(unit)),
        Ok(None) => Ok(Claim::NoneLeft),
        Err(e) if crate::db::unique_violation(&e).is_some() => Ok(Claim::AlreadyHeld),
        Err(e) => Err(e),
    }
}

async fn take_unit(db: &Db, item_id: &str, user_id: &str) -> sqlx::Result<Option<UnitRow>> {
    // One statement picks and takes the unit, so the transaction writes first (SQLite
    // takes its write lock at once instead of upgrading a read); on PostgreSQL a
    // concurrent taker re-checks `status` after the first commits and updates nothing.
    const TAKE: &str =
        "UPDATE inventory_units SET status = 'claimed', holder_id = $2, updated_at = $3 \
        WHERE id = (SELECT id FROM inventory_units WHERE item_id = $1 AND status = 'available' \
        AND deleted_at IS NULL ORDER BY created_at, id LIMIT 1) AND status = 'available' \
        RETURNING id, item_id, data, status, holder_id, created_at, updated_at";
    const LEFT: &str = "SELECT COUNT(*) FROM inventory_units WHERE item_id = $1 \
        AND status = 'available' AND deleted_at IS NULL";
    for _ in 0..32 {
        let at = now();
        let taken: Option<UnitRow> = with_db!(db, p => {
            let mut tx = p.begin_write().await?;
            let unit: Option<UnitRow> = sqlx::query_as(TAKE).bind(item_id).bind(user_id).bind(at)
                .fetch_optional(&mut *tx).await?;
            if let Some(u) = &unit {
                sqlx::query(LEDGER).bind(uuid::Uuid::new_v4().to_string()).bind(item_id).bind(&u.id)
                    .bind("unit_claimed").bind(user_id).bind(at).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok::<_, sqlx::Error>(unit)
        })?;
        if taken.is_some() {
            return Ok(taken);
        }
        let left: i64 =
            with_db!(db, p => sqlx::query_scalar(LEFT).bind(item_id).fetch_one(p).await)?;
        if left == 0 {
            return Ok(None);
        }
    }
    Ok(None)
}
