//! Orders and their lines. Placing an order takes its units (and a use of its discount
//! code) in the same transaction as the order rows, so an order exists exactly when its
//! units are held; releasing one gives them back in one transaction too.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
// Multi-row inserts are assembled from numbered placeholders only, never from input.
use sqlx::AssertSqlSafe;

use futures::future::BoxFuture;
use plinth_actors::batch::{BatchStore, BatchWriter};

use crate::db::{now, values_sql, BeginWrite, Db};
use crate::states::{OrderStatus, PaymentType};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OrderRow {
    pub id: String,
    pub organization_id: String,
    pub domain: String,
    pub user_id: Option<String>,
    pub guest_session_id: Option<String>,
    pub payment_type: PaymentType,
    pub status: OrderStatus,
    pub subtotal_cents: i64,
    pub discount_cents: i64,
    pub total_cents: i64,
    pub subtotal_tokens: Option<i64>,
    pub discount_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    pub discount_id: Option<String>,
    pub discount_code: Option<String>,
    pub provider: Option<String>,
    pub payment_id: Option<String>,
    pub customer_info: Json<Value>,
    pub shipping_address: Option<Json<Value>>,
    pub email: Option<String>,
    pub reserved_until: Option<DateTime<Utc>>,
    pub receipts_sent: i64,
    pub receipt_sent_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LineRow {
    pub item_id: String,
    pub sku: String,
    pub quantity: i64,
    pub price_cents: i64,
    pub price_tokens: Option<i64>,
}

macro_rules! order_select {
    ($tail:literal) => {
        concat!(
            "SELECT r.id, r.organization_id, g.domain, r.user_id, r.guest_session_id, \
             r.payment_type, r.status, r.subtotal_cents, r.discount_cents, r.total_cents, \
             r.subtotal_tokens, r.discount_tokens, r.total_tokens, r.discount_id, r.discount_code, \
             r.provider, r.payment_id, r.customer_info, r.shipping_address, r.email, \
             r.reserved_until, r.receipts_sent, r.receipt_sent_at, r.created_at, r.updated_at \
             FROM orders r JOIN organizations g ON g.id = r.organization_id ",
            $tail
        )
    };
}

/// Who placed an order.
#[derive(Clone, Debug)]
pub enum Buyer {
    User(String),
    Guest(String),
}

impl Buyer {
    /// The ledger's actor.
    fn actor(&self) -> String {
        match self {
            Buyer::User(id) => id.clone(),
            Buyer::Guest(id) => format!("guest:{id}"),
        }
    }
}

/// The units `buyer` holds in pending (unpaid) orders, per item.
pub async fn unpaid_units(db: &Db, buyer: &Buyer) -> sqlx::Result<Vec<(String, i64)>> {
    const SQL: &str = "SELECT l.item_id, CAST(SUM(l.quantity) AS BIGINT) FROM order_lines l \
        JOIN orders o ON o.id = l.order_id WHERE o.status = 'pending' \
        AND (o.user_id = $1 OR o.guest_session_id = $2) GROUP BY l.item_id";
    let (user, guest) = match buyer {
        Buyer::User(id) => (Some(id.as_str()), None),
        Buyer::Guest(id) => (None, Some(id.as_str())),
    };
    with_db!(db, p => sqlx::query_as(SQL).bind(user).bind(guest).fetch_all(p).await)
}

pub struct NewOrder {
    pub id: String,
    pub org_id: String,
    pub buyer: Buyer,
    pub payment_type: PaymentType,
    /// `paid` (tokens, or nothing to pay) or `pending` (a provider payment to come).
    pub status: OrderStatus,
    pub subtotal_cents: i64,
    pub discount_cents: i64,
    pub total_cents: i64,
    pub subtotal_tokens: Option<i64>,
    pub discount_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    /// The discount code's id and code; a use of it is taken with the units.
    pub discount: Option<(String, String)>,
    pub provider: Option<&'static str>,
    pub customer_info: Value,
    pub shipping_address: Option<Value>,
    pub email: Option<String>,
    pub reserved_until: Option<DateTime<Utc>>,
    /// When it is placed (`crate::db::now()`).
    pub at: DateTime<Utc>,
}

impl NewOrder {
    /// The order as it reads once placed, in `domain`.
    pub fn row(&self, domain: &str) -> OrderRow {
        let (user_id, guest_session_id) = match &self.buyer {
            Buyer::User(id) => (Some(id.clone()), None),
            Buyer::Guest(id) => (None, Some(id.clone())),
        };
        OrderRow {
            id: self.id.clone(),
            organization_id: self.org_id.clone(),
            domain: domain.to_owned(),
            user_id,
            guest_session_id,
            payment_type: self.payment_type,
            status: self.status,
            subtotal_cents: self.subtotal_cents,
            discount_cents: self.discount_cents,
            total_cents: self.total_cents,
            subtotal_tokens: self.subtotal_tokens,
            discount_tokens: self.discount_tokens,
            total_tokens: self.total_tokens,
            discount_id: self.discount.as_ref().map(|d| d.0.clone()),
            discount_code: self.discount.as_ref().map(|d| d.1.clone()),
            provider: self.provider.map(str::to_owned),
            payment_id: None,
            customer_info: Json(self.customer_info.clone()),
            shipping_address: self.shipping_address.clone().map(Json),
            email: self.email.clone(),
            reserved_until: self.reserved_until,
            receipts_sent: 0,
            receipt_sent_at: None,
            created_at: self.at,
            updated_at: self.at,
        }
    }
}

/// Why an order was not placed (nothing was written).
#[derive(Debug)]
pub enum NotPlaced {
    /// This line's item has fewer units available than it asks for.
    OutOfStock { sku: String, available: i64 },
    /// The discount code reached `max_uses` or expired meanwhile.
    DiscountUsedUp,
}

/// Takes `quantity` available units of an item for an order, oldest first. PostgreSQL
/// skips units other checkouts hold locked (they are being taken), so concurrent
/// checkouts of one item take different units instead of queueing on the same rows;
/// SQLite has one writer at a time, so the first-available units are free to take.
const TAKE_SQLITE: &str =
    "UPDATE inventory_units SET status = $3, holder_id = $4, order_id = $5, updated_at = $6 \
     WHERE id IN (SELECT id FROM inventory_units WHERE item_id = $1 AND status = 'available' \
     AND deleted_at IS NULL ORDER BY created_at, id LIMIT $2) RETURNING id";
const TAKE_POSTGRES: &str =
    "UPDATE inventory_units SET status = $3, holder_id = $4, order_id = $5, updated_at = $6 \
     WHERE id IN (SELECT id FROM inventory_units WHERE item_id = $1 AND status = 'available' \
     AND deleted_at IS NULL ORDER BY created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) \
     AND status = 'available' RETURNING id";
const AVAILABLE: &str = "SELECT COUNT(*) FROM inventory_units WHERE item_id = $1 \
     AND status = 'available' AND deleted_at IS NULL";
const USE_DISCOUNT: &str = "UPDATE discounts SET uses = uses + 1, updated_at = $2 \
     WHERE id = $1 AND (max_uses IS NULL OR uses < max_uses) \
     AND (expires_at IS NULL OR expires_at > $2)";
const LEDGER: &str =
    "INSERT INTO inventory_ledger (id, item_id, unit_id, action, actor_id, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6)";
/// The columns an order is written with: the 20 values [`bind_order!`] binds, then
/// `updated_at` (the same value as `created_at`).
macro_rules! order_insert {
    () => {
        "INSERT INTO orders (id, organization_id, user_id, guest_session_id, payment_type, \
         status, subtotal_cents, discount_cents, total_cents, subtotal_tokens, discount_tokens, \
         total_tokens, discount_id, discount_code, provider, customer_info, shipping_address, \
         email, reserved_until, created_at, updated_at) VALUES "
    };
}
const INSERT_ORDER: &str = concat!(
    order_insert!(),
    "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
     $20, $20)"
);

/// Binds an order's 20 values to `$q` in [`order_insert!`]'s order.
macro_rules! bind_order {
    ($q:expr, $o:expr) => {{
        let o: &NewOrder = $o;
        let (user_id, guest_id) = match &o.buyer {
            Buyer::User(id) => (Some(id.as_str()), None),
            Buyer::Guest(id) => (None, Some(id.as_str())),
        };
        $q.bind(&o.id)
            .bind(&o.org_id)
            .bind(user_id)
            .bind(guest_id)
            .bind(o.payment_type)
            .bind(o.status)
            .bind(o.subtotal_cents)
            .bind(o.discount_cents)
            .bind(o.total_cents)
            .bind(o.subtotal_tokens)
            .bind(o.discount_tokens)
            .bind(o.total_tokens)
            .bind(o.discount.as_ref().map(|d| d.0.as_str()))
            .bind(o.discount.as_ref().map(|d| d.1.as_str()))
            .bind(o.provider)
            .bind(Json(&o.customer_info))
            .bind(o.shipping_address.as_ref().map(Json))
            .bind(o.email.as_deref())
            .bind(o.reserved_until)
            .bind(o.at)
    }};
}
const INSERT_LINE: &str = "INSERT INTO order_lines (order_id, item_id, sku, quantity, \
     price_cents, price_tokens) VALUES ($1, $2, $3, $4, $5, $6)";

/// The writes of one order on `$conn` (a transaction or a savepoint of one), for either
/// backend: units (`sold` when paid, else `reserved`) with a ledger row each, a use of
/// the discount, the order and its lines. `Ok(Err(_))` when it cannot be placed: the
/// caller rolls `$conn` back.
macro_rules! place_in {
    ($conn:expr, $take:expr, $o:expr, $lines:expr) => {{
        let o: &NewOrder = $o;
        let (unit_status, action) = if o.status == OrderStatus::Paid {
            ("sold", "unit_sold")
        } else {
            ("reserved", "unit_reserved")
        };
        let actor = o.buyer.actor();
        let at = o.at;
        'place: {
            for line in $lines {
                let units: Vec<String> = sqlx::query_scalar($take)
                    .bind(&line.item_id)
                    .bind(line.quantity)
                    .bind(unit_status)
                    .bind(&actor)
                    .bind(&o.id)
                    .bind(at)
                    .fetch_all(&mut *$conn)
                    .await?;
                if (units.len() as i64) < line.quantity {
                    let available: i64 = sqlx::query_scalar(AVAILABLE)
                        .bind(&line.item_id)
                        .fetch_one(&mut *$conn)
                        .await?;
                    break 'place Ok(Err(NotPlaced::OutOfStock {
                        sku: line.sku.clone(),
                        available: available + units.len() as i64,
                    }));
                }
                for unit in &units {
                    sqlx::query(LEDGER)
                        .bind(uuid::Uuid::new_v4().to_string())
                        .bind(&line.item_id)
                        .bind(unit)
                        .bind(action)
                        .bind(&actor)
                        .bind(at)
                        .execute(&mut *$conn)
                        .await?;
                }
            }
            if let Some((discount_id, _)) = &o.discount {
                let used = sqlx::query(USE_DISCOUNT)
                    .bind(discount_id)
                    .bind(at)
                    .execute(&mut *$conn)
                    .await?;
                if used.rows_affected() == 0 {
                    break 'place Ok(Err(NotPlaced::DiscountUsedUp));
                }
            }
            bind_order!(sqlx::query(INSERT_ORDER), o)
                .execute(&mut *$conn)
                .await?;
            for line in $lines {
                sqlx::query(INSERT_LINE)
                    .bind(&o.id)
                    .bind(&line.item_id)
                    .bind(&line.sku)
                    .bind(line.quantity)
                    .bind(line.price_cents)
                    .bind(line.price_tokens)
                    .execute(&mut *$conn)
                    .await?;
            }
            Ok(Ok(()))
        }
    }};
}

/// The outcome of placing one order.
pub type Placed = sqlx::Result<Result<(), NotPlaced>>;

/// Places orders. On SQLite (one writer at a time) the group-commit writer
/// (`plinth_actors::batch`) commits the orders waiting together in one transaction, each
/// in its own savepoint, so an order that cannot be placed changes nothing and the others
/// still commit; on PostgreSQL each order is its own transaction, concurrent ones taking
/// different units (`SKIP LOCKED`).
pub enum Placer {
    Direct(sqlx::PgPool),
    Batched(BatchWriter<(NewOrder, Vec<LineRow>), Placed>),
}

/// Orders one SQLite transaction takes at most.
const BATCH: usize = 64;

impl Placer {
    pub async fn start(db: &Db) -> Result<Placer, ractor::SpawnErr> {
        Ok(match db {
            Db::Sqlite(pool) => Placer::Batched(
                BatchWriter::start(
                    "orders",
                    1,
                    BATCH,
                    std::sync::Arc::new(Batches(pool.clone())),
                )
                .await?,
            ),
            Db::Postgres(p) => Placer::Direct(p.clone()),
        })
    }

    pub fn stop(&self) {
        if let Placer::Batched(w) = self {
            w.stop();
        }
    }

    /// Writes the order with its units and discount use, all or nothing.
    pub async fn place(&self, order: NewOrder, lines: Vec<LineRow>) -> Placed {
        match self {
            Placer::Direct(p) => {
                let mut tx = p.begin_write().await?;
                let placed: Placed = place_in!(tx, TAKE_POSTGRES, &order, &lines);
                if matches!(placed, Ok(Ok(()))) {
                    tx.commit().await?;
                }
                placed
            }
            Placer::Batched(w) => w
                .write("orders", vec![(order, lines)])
                .await
                .map_err(|why| {
                    sqlx::Error::Protocol(format!("order batch not committed: {why}"))
                })?,
        }
    }
}

/// The SQLite store of the group-commit writer: one order per group (as `place` sends).
struct Batches(sqlx::SqlitePool);

impl BatchStore<(NewOrder, Vec<LineRow>), Placed> for Batches {
    fn write<'a>(
        &'a self,
        groups: &'a [Vec<(NewOrder, Vec<LineRow>)>],
    ) -> BoxFuture<'a, Result<Vec<Placed>, plinth_actors::StoreError>> {
        Box::pin(async move {
            place_batch(&self.0, groups.iter().flatten())
                .await
                .map_err(plinth_actors::StoreError::new)
        })
    }
}

/// One unit of one item, with or without a discount: the common order, placed without
/// a savepoint (see [`place_batch`]).
fn simple(lines: &[LineRow]) -> bool {
    matches!(lines, [l] if l.quantity == 1)
}

/// One SQLite transaction for the orders waiting together. A simple order (one unit)
/// costs one statement here: its discount use and its unit are taken conditionally (a
/// failed take gives the use back), and its rows join the batch's three multi-row
/// inserts; nothing else writes meanwhile (the transaction holds SQLite's write lock),
/// so nothing can change between the take and the inserts. Other orders run
/// [`place_in!`] in a savepoint each. Statements are what an order costs on SQLite:
/// each is a round trip to the connection's thread.
async fn place_batch(
    pool: &sqlx::SqlitePool,
    batch: impl Iterator<Item = &(NewOrder, Vec<LineRow>)>,
) -> sqlx::Result<Vec<Placed>> {
    const GIVE_BACK: &str =
        "UPDATE discounts SET uses = uses - 1, updated_at = $2 WHERE id = $1 AND uses > 0";
    let mut tx = pool.begin_write().await?;
    let mut results = Vec::new();
    // The rows of the simple orders placed: (order, line, unit).
    let mut placed: Vec<(&NewOrder, &LineRow, String)> = Vec::new();
    for (order, lines) in batch {
        if !simple(lines) {
            let mut sp = sqlx::Acquire::begin(&mut tx).await?;
            let outcome: Placed = async { place_in!(sp, TAKE_SQLITE, order, lines) }.await;
            match &outcome {
                Ok(Ok(())) => sp.commit().await?,
                _ => sp.rollback().await?,
            }
            results.push(outcome);
            continue;
        }
        let line = &lines[0];
        if let Some((discount_id, _)) = &order.discount {
            let used = sqlx::query(USE_DISCOUNT)
                .bind(discount_id)
                .bind(order.at)
                .execute(&mut *tx)
                .await?;
            if used.rows_affected() == 0 {
                results.push(Ok(Err(NotPlaced::DiscountUsedUp)));
                continue;
            }
        }
        let status = if order.status == OrderStatus::Paid {
            "sold"
        } else {
            "reserved"
        };
        let unit: Option<String> = sqlx::query_scalar(TAKE_SQLITE)
            .bind(&line.item_id)
            .bind(1i64)
            .bind(status)
            .bind(order.buyer.actor())
            .bind(&order.id)
            .bind(order.at)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(unit) = unit else {
            if let Some((discount_id, _)) = &order.discount {
                sqlx::query(GIVE_BACK)
                    .bind(discount_id)
                    .bind(order.at)
                    .execute(&mut *tx)
                    .await?;
            }
            results.push(Ok(Err(NotPlaced::OutOfStock {
                sku: line.sku.clone(),
                available: 0,
            })));
            continue;
        };
        placed.push((order, line, unit));
        results.push(Ok(Ok(())));
    }
    if !placed.is_empty() {
        let n = placed.len();
        let ledger = format!(
            "INSERT INTO inventory_ledger (id, item_id, unit_id, action, actor_id, created_at) VALUES {}",
            values_sql(n, 6, None)
        );
        let mut q = sqlx::query(AssertSqlSafe(ledger));
        for (o, l, unit) in &placed {
            let action = if o.status == OrderStatus::Paid {
                "unit_sold"
            } else {
                "unit_reserved"
            };
            q = q
                .bind(uuid::Uuid::new_v4().to_string())
                .bind(&l.item_id)
                .bind(unit)
                .bind(action)
                .bind(o.buyer.actor())
                .bind(o.at);
        }
        q.execute(&mut *tx).await?;
        let orders = format!("{}{}", order_insert!(), values_sql(n, 20, Some(20)));
        let mut q = sqlx::query(AssertSqlSafe(orders));
        for (o, _, _) in &placed {
            q = bind_order!(q, o);
        }
        q.execute(&mut *tx).await?;
        let lines = format!(
            "INSERT INTO order_lines (order_id, item_id, sku, quantity, price_cents, price_tokens) VALUES {}",
            values_sql(n, 6, None)
        );
        let mut q = sqlx::query(AssertSqlSafe(lines));
        for (o, l, _) in &placed {
            q = q
                .bind(&o.id)
                .bind(&l.item_id)
                .bind(&l.sku)
                .bind(l.quantity)
                .bind(l.price_cents)
                .bind(l.price_tokens);
        }
        q.execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(results)
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<OrderRow>> {
    const SQL: &str = order_select!("WHERE r.id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

pub async fn lines(db: &Db, order_id: &str) -> sqlx::Result<Vec<LineRow>> {
    const SQL: &str = "SELECT item_id, sku, quantity, price_cents, price_tokens FROM order_lines \
        WHERE order_id = $1 ORDER BY sku, item_id";
    with_db!(db, p => sqlx::query_as(SQL).bind(order_id).fetch_all(p).await)
}

/// The lines of several orders (a page of a list) in one query, by order id.
pub async fn lines_of(
    db: &Db,
    order_ids: &[String],
) -> sqlx::Result<std::collections::HashMap<String, Vec<LineRow>>> {
    let mut out: std::collections::HashMap<String, Vec<LineRow>> = Default::default();
    if order_ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT order_id, item_id, sku, quantity, price_cents, price_tokens FROM order_lines \
         WHERE order_id IN ({}) ORDER BY sku, item_id",
        (1..=order_ids.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    type Row = (String, String, String, i64, i64, Option<i64>);
    let rows: Vec<Row> = with_db!(db, p => {
        let mut q = sqlx::query_as(AssertSqlSafe(sql.as_str()));
        for id in order_ids {
            q = q.bind(id);
        }
        q.fetch_all(p).await
    })?;
    for (order_id, item_id, sku, quantity, price_cents, price_tokens) in rows {
        out.entry(order_id).or_default().push(LineRow {
            item_id,
            sku,
            quantity,
            price_cents,
            price_tokens,
        });
    }
    Ok(out)
}

/// Whose orders a list shows.
pub enum Of<'a> {
    User(&'a str),
    Organization(&'a str),
}

/// Orders newest first, and how many there are.
pub async fn list(
    db: &Db,
    of: Of<'_>,
    status: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<OrderRow>, i64)> {
    const BY_USER: &str = order_select!(
        "WHERE r.user_id = $1 AND ($2 IS NULL OR r.status = $2) \
         ORDER BY r.created_at DESC, r.id LIMIT $3 OFFSET $4"
    );
    const BY_ORG: &str = order_select!(
        "WHERE r.organization_id = $1 AND ($2 IS NULL OR r.status = $2) \
         ORDER BY r.created_at DESC, r.id LIMIT $3 OFFSET $4"
    );
    const COUNT_USER: &str =
        "SELECT COUNT(*) FROM orders WHERE user_id = $1 AND ($2 IS NULL OR status = $2)";
    const COUNT_ORG: &str =
        "SELECT COUNT(*) FROM orders WHERE organization_id = $1 AND ($2 IS NULL OR status = $2)";
    let (sql, count, key) = match of {
        Of::User(id) => (BY_USER, COUNT_USER, id),
        Of::Organization(id) => (BY_ORG, COUNT_ORG, id),
    };
    with_db!(db, p => {
        let rows = sqlx::query_as(sql).bind(key).bind(status).bind(limit).bind(offset).fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(count).bind(key).bind(status).fetch_one(p).await?;
        Ok((rows, total))
    })
}

/// Moves an order from `from` to `to` when nothing else moved it first; `false` when it
/// was no longer in `from`.
pub async fn set_status(
    db: &Db,
    id: &str,
    from: OrderStatus,
    to: OrderStatus,
) -> sqlx::Result<bool> {
    const SQL: &str =
        "UPDATE orders SET status = $3, updated_at = $4 WHERE id = $1 AND status = $2";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(from).bind(to).bind(now())
        .execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// A pending order is paid: it records the payment and its reserved units are sold.
/// `false` when it was not pending (already paid, canceled or expired).
pub async fn mark_paid(db: &Db, id: &str, payment_id: &str) -> sqlx::Result<bool> {
    const ORDER: &str =
        "UPDATE orders SET status = 'paid', payment_id = $2, reserved_until = NULL, \
        updated_at = $3 WHERE id = $1 AND status = 'pending'";
    const UNITS: &str = "UPDATE inventory_units SET status = 'sold', updated_at = $2 \
        WHERE order_id = $1 AND status = 'reserved' RETURNING id, item_id, holder_id";
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if sqlx::query(ORDER).bind(id).bind(payment_id).bind(at).execute(&mut *tx).await?.rows_affected() == 0 {
            return Ok(false);
        }
        let units: Vec<(String, String, Option<String>)> =
            sqlx::query_as(UNITS).bind(id).bind(at).fetch_all(&mut *tx).await?;
        for (unit, item, holder) in &units {
            sqlx::query(LEDGER).bind(uuid::Uuid::new_v4().to_string()).bind(item).bind(unit)
                .bind("unit_sold").bind(holder).bind(at).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(true)
    })
}

/// Records the provider's payment id on an order (before it is confirmed).
pub async fn set_payment(db: &Db, id: &str, payment_id: &str) -> sqlx::Result<()> {
    const SQL: &str = "UPDATE orders SET payment_id = $2, updated_at = $3 WHERE id = $1";
    with_db!(db, p => sqlx::query(SQL).bind(id).bind(payment_id).bind(now()).execute(p).await.map(|_| ()))
}

/// Ends an order (`from` → `to`: canceled, expired or refunded) and gives its units back
/// to stock and its discount use back, in one transaction; `false` when it was no longer
/// in `from`.
pub async fn release(
    db: &Db,
    id: &str,
    from: OrderStatus,
    to: OrderStatus,
    actor: &str,
) -> sqlx::Result<bool> {
    const ORDER: &str = "UPDATE orders SET status = $3, reserved_until = NULL, updated_at = $4 \
        WHERE id = $1 AND status = $2 RETURNING discount_id";
    const UNITS: &str = "UPDATE inventory_units SET status = 'available', holder_id = NULL, \
        order_id = NULL, updated_at = $2 WHERE order_id = $1 AND status IN ('reserved', 'sold') \
        AND deleted_at IS NULL RETURNING id, item_id";
    const DISCOUNT: &str =
        "UPDATE discounts SET uses = uses - 1, updated_at = $2 WHERE id = $1 AND uses > 0";
    let at = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let Some(discount): Option<Option<String>> = sqlx::query_scalar(ORDER).bind(id).bind(from)
            .bind(to).bind(at).fetch_optional(&mut *tx).await? else {
            return Ok(false);
        };
        let units: Vec<(String, String)> = sqlx::query_as(UNITS).bind(id).bind(at).fetch_all(&mut *tx).await?;
        for (unit, item) in &units {
            sqlx::query(LEDGER).bind(uuid::Uuid::new_v4().to_string()).bind(item).bind(unit)
                .bind("unit_released").bind(actor).bind(at).execute(&mut *tx).await?;
        }
        if let Some(d) = discount {
            sqlx::query(DISCOUNT).bind(d).bind(at).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(true)
    })
}

/// Undoes a pending order whose payment was refused at once: its units and discount
/// use go back (the ledger keeps the hold and its release) and the order is deleted.
pub async fn discard(db: &Db, id: &str) -> sqlx::Result<()> {
    release(
        db,
        id,
        OrderStatus::Pending,
        OrderStatus::Canceled,
        "system",
    )
    .await?;
    const SQL: &str = "DELETE FROM orders WHERE id = $1 AND status = 'canceled'";
    with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|_| ()))
}

/// Pending orders whose reservation ended before `now` (at most `limit`).
pub async fn expired(db: &Db, now: DateTime<Utc>, limit: i64) -> sqlx::Result<Vec<String>> {
    const SQL: &str = "SELECT id FROM orders WHERE status = 'pending' AND reserved_until < $1 \
        ORDER BY reserved_until LIMIT $2";
    with_db!(db, p => sqlx::query_scalar(SQL).bind(now).bind(limit).fetch_all(p).await)
}

/// Releases every pending order whose hold ended before `now`; how many.
pub async fn release_expired(db: &Db, now: DateTime<Utc>) -> sqlx::Result<usize> {
    let mut released = 0;
    loop {
        let ids = expired(db, now, 200).await?;
        for id in &ids {
            if release(db, id, OrderStatus::Pending, OrderStatus::Expired, "system").await? {
                released += 1;
            }
        }
        if ids.len() < 200 {
            return Ok(released);
        }
    }
}

/// A receipt went out.
pub async fn receipt_sent(db: &Db, id: &str) -> sqlx::Result<()> {
    const SQL: &str = "UPDATE orders SET receipts_sent = receipts_sent + 1, receipt_sent_at = $2 \
        WHERE id = $1";
    with_db!(db, p => sqlx::query(SQL).bind(id).bind(now()).execute(p).await.map(|_| ()))
}
