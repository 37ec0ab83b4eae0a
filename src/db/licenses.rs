//! Licenses and their activated machines. Activation is one conditional increment of
//! `activations_current` (it locks the row on PostgreSQL; SQLite has one writer) and the
//! machine's row, in one transaction: the limit is exact under concurrency, and a
//! machine activated twice at once counts once.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, BeginWrite, Db};
use crate::states::LicenseStatus;
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LicenseRow {
    pub id: String,
    pub organization_id: String,
    pub domain: String,
    pub item_id: Option<String>,
    pub order_id: Option<String>,
    pub user_id: Option<String>,
    pub issuer_id: Option<String>,
    pub key_cipher: String,
    pub status: LicenseStatus,
    pub product_id: Option<String>,
    pub activations_allowed: Option<i64>,
    pub activations_current: i64,
    pub expires_at: Option<DateTime<Utc>>,
    pub data: Json<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

macro_rules! license_select {
    ($tail:literal) => {
        concat!(
            "SELECT l.id, l.organization_id, g.domain, l.item_id, l.order_id, l.user_id, \
             l.issuer_id, l.key_cipher, l.status, l.product_id, l.activations_allowed, \
             l.activations_current, l.expires_at, l.data, l.created_at, l.updated_at \
             FROM licenses l JOIN organizations g ON g.id = l.organization_id ",
            $tail
        )
    };
}

/// A license to mint.
pub struct NewLicense {
    pub id: String,
    pub key_hash: String,
    pub key_cipher: String,
}

/// What the licenses of one grant share.
pub struct Grant<'a> {
    pub org_id: &'a str,
    pub item_id: Option<&'a str>,
    pub user_id: Option<&'a str>,
    pub issuer_id: Option<&'a str>,
    pub product_id: Option<&'a str>,
    pub activations_allowed: Option<i64>,
    pub expires_at: Option<DateTime<Utc>>,
}

const INSERT: &str = "INSERT INTO licenses (id, organization_id, item_id, order_id, user_id, \
    issuer_id, key_hash, key_cipher, status, product_id, activations_allowed, expires_at, data, \
    created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active', $9, $10, $11, $12, \
    $13, $13)";

/// Writes `licenses` of one grant against `$order_id` on `$tx`.
macro_rules! insert_licenses {
    ($tx:expr, $order_id:expr, $g:expr, $licenses:expr, $at:expr) => {
        for l in $licenses {
            sqlx::query(INSERT)
                .bind(&l.id)
                .bind($g.org_id)
                .bind($g.item_id)
                .bind($order_id)
                .bind($g.user_id)
                .bind($g.issuer_id)
                .bind(&l.key_hash)
                .bind(&l.key_cipher)
                .bind($g.product_id)
                .bind($g.activations_allowed)
                .bind($g.expires_at)
                .bind(Json(Value::Object(Default::default())))
                .bind($at)
                .execute(&mut *$tx)
                .await?;
        }
    };
}

/// Licenses an admin issues, with the zero-cost `admin_grant` order they are recorded
/// against, in one transaction; the order's id.
pub async fn grant(db: &Db, g: &Grant<'_>, licenses: &[NewLicense]) -> sqlx::Result<String> {
    const ORDER: &str = "INSERT INTO orders (id, organization_id, user_id, payment_type, status, \
        subtotal_cents, discount_cents, total_cents, customer_info, created_at, updated_at) \
        VALUES ($1, $2, $3, 'admin_grant', 'paid', 0, 0, 0, '{}', $4, $4)";
    let order_id = uuid::Uuid::new_v4().to_string();
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        sqlx::query(ORDER).bind(&order_id).bind(g.org_id).bind(g.user_id).bind(at)
            .execute(&mut *tx).await?;
        insert_licenses!(tx, &order_id, g, licenses, at);
        tx.commit().await?;
        Ok(order_id)
    })
}

/// Licenses of a paid order, in one transaction.
pub async fn mint(
    db: &Db,
    order_id: &str,
    g: &Grant<'_>,
    licenses: &[NewLicense],
) -> sqlx::Result<()> {
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        insert_licenses!(tx, order_id, g, licenses, at);
        tx.commit().await?;
        Ok(())
    })
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<LicenseRow>> {
    const SQL: &str = license_select!("WHERE l.id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// The licenses of an order, oldest first.
pub async fn by_order(db: &Db, order_id: &str) -> sqlx::Result<Vec<LicenseRow>> {
    const SQL: &str = license_select!("WHERE l.order_id = $1 ORDER BY l.created_at, l.id");
    with_db!(db, p => sqlx::query_as(SQL).bind(order_id).fetch_all(p).await)
}

/// Whose licenses a list shows.
pub enum Of<'a> {
    User(&'a str),
    Organization(&'a str),
}

pub async fn list(
    db: &Db,
    of: Of<'_>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<LicenseRow>, i64)> {
    const BY_USER: &str =
        license_select!("WHERE l.user_id = $1 ORDER BY l.created_at DESC, l.id LIMIT $2 OFFSET $3");
    const BY_ORG: &str = license_select!(
        "WHERE l.organization_id = $1 ORDER BY l.created_at DESC, l.id LIMIT $2 OFFSET $3"
    );
    const COUNT_USER: &str = "SELECT COUNT(*) FROM licenses WHERE user_id = $1";
    const COUNT_ORG: &str = "SELECT COUNT(*) FROM licenses WHERE organization_id = $1";
    let (sql, count, key) = match of {
        Of::User(id) => (BY_USER, COUNT_USER, id),
        Of::Organization(id) => (BY_ORG, COUNT_ORG, id),
    };
    with_db!(db, p => {
        let rows = sqlx::query_as(sql).bind(key).bind(limit).bind(offset).fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(count).bind(key).fetch_one(p).await?;
        Ok((rows, total))
    })
}

/// The machines a license is activated on, oldest first.
pub async fn machines(db: &Db, license_id: &str) -> sqlx::Result<Vec<String>> {
    const SQL: &str = "SELECT machine_id FROM license_machines WHERE license_id = $1 \
        ORDER BY created_at, machine_id";
    with_db!(db, p => sqlx::query_scalar(SQL).bind(license_id).fetch_all(p).await)
}

/// A key as validation sees it, in one query.
#[derive(Debug, sqlx::FromRow)]
pub struct Lookup {
    pub id: String,
    pub status: LicenseStatus,
    pub product_id: Option<String>,
    pub activations_allowed: Option<i64>,
    pub activations_current: i64,
    pub expires_at: Option<DateTime<Utc>>,
    /// Its order was refunded.
    pub refunded: bool,
    /// This machine is activated already.
    pub known: bool,
}

pub async fn lookup(db: &Db, key_hash: &str, machine: &str) -> sqlx::Result<Option<Lookup>> {
    const SQL: &str = "SELECT l.id, l.status, l.product_id, l.activations_allowed, \
        l.activations_current, l.expires_at, \
        COALESCE((SELECT o.status = 'refunded' FROM orders o WHERE o.id = l.order_id), FALSE) AS refunded, \
        EXISTS (SELECT 1 FROM license_machines m WHERE m.license_id = l.id AND m.machine_id = $2) AS known \
        FROM licenses l WHERE l.key_hash = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(key_hash).bind(machine).fetch_optional(p).await)
}

/// The outcome of activating a machine.
#[derive(Debug, PartialEq, Eq)]
pub enum Activation {
    /// Newly activated; the count after it.
    Activated(i64),
    /// The machine was activated already (perhaps by a concurrent call).
    Known,
    /// Every activation is taken by other machines.
    Limit,
}

/// Activates `machine` on an active license: the conditional increment first (which
/// PostgreSQL serializes on the row), then the machine's row; a machine that got there
/// first undoes the increment.
pub async fn activate(db: &Db, license_id: &str, machine: &str) -> sqlx::Result<Activation> {
    const COUNT: &str = "UPDATE licenses SET activations_current = activations_current + 1, \
        updated_at = $2 WHERE id = $1 AND status = 'active' \
        AND (activations_allowed IS NULL OR activations_current < activations_allowed) \
        RETURNING activations_current";
    const MACHINE: &str = "INSERT INTO license_machines (license_id, machine_id, created_at) \
        VALUES ($1, $2, $3) ON CONFLICT (license_id, machine_id) DO NOTHING";
    const KNOWN: &str =
        "SELECT COUNT(*) FROM license_machines WHERE license_id = $1 AND machine_id = $2";
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let counted: Option<i64> = sqlx::query_scalar(COUNT).bind(license_id).bind(at)
            .fetch_optional(&mut *tx).await?;
        let Some(count) = counted else {
            let known: i64 = sqlx::query_scalar(KNOWN).bind(license_id).bind(machine)
                .fetch_one(&mut *tx).await?;
            return Ok(if known > 0 { Activation::Known } else { Activation::Limit });
        };
        let inserted = sqlx::query(MACHINE).bind(license_id).bind(machine).bind(at)
            .execute(&mut *tx).await?.rows_affected();
        if inserted == 0 {
            tx.rollback().await?;
            return Ok(Activation::Known);
        }
        tx.commit().await?;
        Ok(Activation::Activated(count))
    })
}

/// Revokes an active license with `data` as its new data; `false` when it was not active.
pub async fn revoke(db: &Db, id: &str, data: &Value) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE licenses SET status = 'revoked', data = $2, updated_at = $3 \
        WHERE id = $1 AND status = 'active'";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(Json(data)).bind(now())
        .execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// Replaces an active license by `new` in one transaction: the old row is revoked with
/// `data.replaced_by_id`, the new one starts with no machines and the same terms.
/// `false` (nothing written) when the old one was not active any more.
pub async fn regenerate(
    db: &Db,
    old: &LicenseRow,
    old_data: &Value,
    new: &NewLicense,
) -> sqlx::Result<bool> {
    const REVOKE: &str = "UPDATE licenses SET status = 'revoked', data = $2, updated_at = $3 \
        WHERE id = $1 AND status = 'active'";
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let n = sqlx::query(REVOKE).bind(&old.id).bind(Json(old_data)).bind(at)
            .execute(&mut *tx).await?.rows_affected();
        if n == 0 {
            return Ok(false);
        }
        sqlx::query(INSERT).bind(&new.id).bind(&old.organization_id).bind(&old.item_id)
            .bind(&old.order_id).bind(&old.user_id).bind(&old.issuer_id).bind(&new.key_hash)
            .bind(&new.key_cipher).bind(&old.product_id).bind(old.activations_allowed)
            .bind(old.expires_at).bind(Json(serde_json::json!({"replaces_id": old.id})))
            .bind(at).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    })
}
