//! Carts and discount codes.

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::states::DiscountKind;
use crate::with_db;

/// A cart line with what the item looks like now.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CartLine {
    pub item_id: String,
    pub sku: String,
    pub domain: String,
    pub quantity: i64,
    pub price_cents: i64,
    pub price_tokens: Option<i64>,
    pub available_count: i64,
    pub added_at: DateTime<Utc>,
}

/// Whose cart: a user's, or a guest session's (a table each; the SQL is the same).
#[derive(Clone, Copy)]
pub enum Owner<'a> {
    User(&'a str),
    Guest(&'a str),
}

impl Owner<'_> {
    fn id(&self) -> &str {
        match self {
            Owner::User(id) | Owner::Guest(id) => id,
        }
    }
}

pub async fn cart(db: &Db, owner: Owner<'_>) -> sqlx::Result<Vec<CartLine>> {
    const USER: &str =
        "SELECT c.item_id, i.sku, o.domain, c.quantity, i.price_cents, i.price_tokens, \
        (SELECT COUNT(*) FROM inventory_units u WHERE u.item_id = i.id AND u.status = 'available' \
         AND u.deleted_at IS NULL) AS available_count, c.created_at AS added_at \
        FROM cart_lines c JOIN inventory_items i ON i.id = c.item_id \
        JOIN organizations o ON o.id = i.organization_id \
        WHERE c.user_id = $1 AND i.deleted_at IS NULL ORDER BY c.created_at, c.item_id";
    const GUEST: &str =
        "SELECT c.item_id, i.sku, o.domain, c.quantity, i.price_cents, i.price_tokens, \
        (SELECT COUNT(*) FROM inventory_units u WHERE u.item_id = i.id AND u.status = 'available' \
         AND u.deleted_at IS NULL) AS available_count, c.created_at AS added_at \
        FROM guest_cart_lines c JOIN inventory_items i ON i.id = c.item_id \
        JOIN organizations o ON o.id = i.organization_id \
        WHERE c.session_id = $1 AND i.deleted_at IS NULL ORDER BY c.created_at, c.item_id";
    let sql = match owner {
        Owner::User(_) => USER,
        Owner::Guest(_) => GUEST,
    };
    with_db!(db, p => sqlx::query_as(sql).bind(owner.id()).fetch_all(p).await)
}

/// Adds `quantity` to the line (a new line when there is none); the new quantity.
pub async fn add(db: &Db, owner: Owner<'_>, item_id: &str, quantity: i64) -> sqlx::Result<i64> {
    const USER: &str =
        "INSERT INTO cart_lines (user_id, item_id, quantity, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $4) ON CONFLICT (user_id, item_id) \
        DO UPDATE SET quantity = cart_lines.quantity + $3, updated_at = $4 RETURNING quantity";
    const GUEST: &str = "INSERT INTO guest_cart_lines (session_id, item_id, quantity, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $4) ON CONFLICT (session_id, item_id) \
        DO UPDATE SET quantity = guest_cart_lines.quantity + $3, updated_at = $4 RETURNING quantity";
    let sql = match owner {
        Owner::User(_) => USER,
        Owner::Guest(_) => GUEST,
    };
    with_db!(db, p => sqlx::query_scalar(sql).bind(owner.id()).bind(item_id).bind(quantity).bind(now()).fetch_one(p).await)
}

/// Sets the line's quantity; `false` when the item is not in the cart.
pub async fn set(db: &Db, owner: Owner<'_>, item_id: &str, quantity: i64) -> sqlx::Result<bool> {
    const USER: &str =
        "UPDATE cart_lines SET quantity = $3, updated_at = $4 WHERE user_id = $1 AND item_id = $2";
    const GUEST: &str = "UPDATE guest_cart_lines SET quantity = $3, updated_at = $4 WHERE session_id = $1 AND item_id = $2";
    let sql = match owner {
        Owner::User(_) => USER,
        Owner::Guest(_) => GUEST,
    };
    let n = with_db!(db, p => sqlx::query(sql).bind(owner.id()).bind(item_id).bind(quantity).bind(now())
        .execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

pub async fn remove(db: &Db, owner: Owner<'_>, item_id: &str) -> sqlx::Result<bool> {
    const USER: &str = "DELETE FROM cart_lines WHERE user_id = $1 AND item_id = $2";
    const GUEST: &str = "DELETE FROM guest_cart_lines WHERE session_id = $1 AND item_id = $2";
    let sql = match owner {
        Owner::User(_) => USER,
        Owner::Guest(_) => GUEST,
    };
    let n = with_db!(db, p => sqlx::query(sql).bind(owner.id()).bind(item_id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

pub async fn clear(db: &Db, owner: Owner<'_>) -> sqlx::Result<u64> {
    const USER: &str = "DELETE FROM cart_lines WHERE user_id = $1";
    const GUEST: &str = "DELETE FROM guest_cart_lines WHERE session_id = $1";
    let sql = match owner {
        Owner::User(_) => USER,
        Owner::Guest(_) => GUEST,
    };
    with_db!(db, p => sqlx::query(sql).bind(owner.id()).execute(p).await.map(|r| r.rows_affected()))
}

/// A guest session: its id and organization, while it lasts.
pub async fn guest_session(db: &Db, token_hash: &str) -> sqlx::Result<Option<(String, String)>> {
    const SQL: &str = "SELECT id, organization_id FROM guest_sessions \
        WHERE token_hash = $1 AND expires_at > $2";
    with_db!(db, p => sqlx::query_as(SQL).bind(token_hash).bind(now()).fetch_optional(p).await)
}

/// A new guest session of the organization, valid until `expires_at`; removes sessions
/// that ended (their carts go with them).
pub async fn create_guest_session(
    db: &Db,
    token_hash: &str,
    org_id: &str,
    expires_at: DateTime<Utc>,
) -> sqlx::Result<String> {
    const SQL: &str =
        "INSERT INTO guest_sessions (id, token_hash, organization_id, expires_at, created_at) \
        VALUES ($1, $2, $3, $4, $5)";
    const PRUNE: &str = "DELETE FROM guest_sessions WHERE expires_at <= $1";
    let id = uuid::Uuid::new_v4().to_string();
    let at = now();
    with_db!(db, p => {
        sqlx::query(PRUNE).bind(at).execute(p).await?;
        sqlx::query(SQL).bind(&id).bind(token_hash).bind(org_id).bind(expires_at).bind(at).execute(p).await?;
        Ok(id)
    })
}

/// A live item as carts and checkouts see it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SkuItem {
    pub id: String,
    pub private: bool,
    pub organization_id: String,
    pub domain: String,
    pub sku: String,
    pub price_cents: i64,
    pub price_tokens: Option<i64>,
    /// Whether a unit is available now (checkout's cheap early refusal; taking the units
    /// decides).
    pub in_stock: bool,
}

/// Live items with this sku (of every organization, or of one).
pub async fn items_by_sku(db: &Db, sku: &str, domain: Option<&str>) -> sqlx::Result<Vec<SkuItem>> {
    const SQL: &str = "SELECT i.id, i.private, i.organization_id, o.domain, i.sku, i.price_cents, \
        i.price_tokens, EXISTS (SELECT 1 FROM inventory_units u WHERE u.item_id = i.id \
        AND u.status = 'available' AND u.deleted_at IS NULL) AS in_stock \
        FROM inventory_items i JOIN organizations o ON o.id = i.organization_id \
        WHERE i.sku = $1 AND i.deleted_at IS NULL AND ($2 IS NULL OR o.domain = $2) LIMIT 10";
    with_db!(db, p => sqlx::query_as(SQL).bind(sku).bind(domain).fetch_all(p).await)
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Discount {
    pub id: String,
    pub organization_id: String,
    pub code: String,
    pub r#type: DiscountKind,
    pub value: f64,
    pub expires_at: Option<DateTime<Utc>>,
    pub max_uses: Option<i64>,
    pub uses: i64,
    pub min_order_cents: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

macro_rules! discount_columns {
    () => {
        "id, organization_id, code, type, value, expires_at, max_uses, uses, min_order_cents, \
         created_at, updated_at"
    };
}

pub struct DiscountFields<'a> {
    pub code: &'a str,
    pub r#type: DiscountKind,
    pub value: f64,
    pub expires_at: Option<DateTime<Utc>>,
    pub max_uses: Option<i64>,
    pub min_order_cents: Option<i64>,
}

pub async fn discounts(db: &Db, org_id: &str) -> sqlx::Result<Vec<Discount>> {
    const SQL: &str = concat!(
        "SELECT ",
        discount_columns!(),
        " FROM discounts WHERE organization_id = $1 ORDER BY created_at DESC, id LIMIT 1000"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).fetch_all(p).await)
}

pub async fn discount(db: &Db, id: &str) -> sqlx::Result<Option<Discount>> {
    const SQL: &str = concat!(
        "SELECT ",
        discount_columns!(),
        " FROM discounts WHERE id = $1"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// A new code; a code the organization already has is a unique violation (409).
pub async fn create_discount(
    db: &Db,
    org_id: &str,
    f: &DiscountFields<'_>,
) -> sqlx::Result<Discount> {
    const SQL: &str = concat!(
        "INSERT INTO discounts (id, organization_id, code, type, value, expires_at, max_uses, \
         min_order_cents, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING ",
        discount_columns!()
    );
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query_as(SQL).bind(&id).bind(org_id).bind(f.code).bind(f.r#type)
        .bind(f.value).bind(f.expires_at).bind(f.max_uses).bind(f.min_order_cents).bind(now())
        .fetch_one(p).await)
}

pub async fn update_discount(
    db: &Db,
    id: &str,
    f: &DiscountFields<'_>,
) -> sqlx::Result<Option<Discount>> {
    const SQL: &str = concat!(
        "UPDATE discounts SET code = $2, type = $3, value = $4, expires_at = $5, max_uses = $6, \
         min_order_cents = $7, updated_at = $8 WHERE id = $1 RETURNING ",
        discount_columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(f.code).bind(f.r#type).bind(f.value)
        .bind(f.expires_at).bind(f.max_uses).bind(f.min_order_cents).bind(now()).fetch_optional(p).await)
}

pub async fn delete_discount(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM discounts WHERE id = $1";
    let n =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// The organization's discount with this code.
pub async fn discount_by_code(db: &Db, org_id: &str, code: &str) -> sqlx::Result<Option<Discount>> {
    const SQL: &str = concat!(
        "SELECT ",
        discount_columns!(),
        " FROM discounts WHERE organization_id = $1 AND code = $2"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).bind(code).fetch_optional(p).await)
}
