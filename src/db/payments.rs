//! Customers, subscriptions, checkout sessions, one-time payments and processed webhook
//! events.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, Db};
use crate::states::{CheckoutMode, CheckoutStatus, PaymentStatus, SubscriptionStatus};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Customer {
    pub customer_id: String,
    pub payment_method_id: Option<String>,
    pub payment_method: Option<Json<Value>>,
}

pub async fn customer(db: &Db, user_id: &str) -> sqlx::Result<Option<Customer>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT user_id, provider, customer_id, payment_method_id, payment_method FROM customers WHERE user_id = $1"
    ).bind(user_id).fetch_optional(p).await)
}

pub async fn save_customer(
    db: &Db,
    user_id: &str,
    provider: &str,
    customer_id: &str,
    card: Option<&Value>,
) -> sqlx::Result<()> {
    let now = now();
    let pm_id = card
        .and_then(|c| c.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    with_db!(db, p => sqlx::query(
        "INSERT INTO customers (user_id, provider, customer_id, payment_method_id, payment_method, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (user_id) DO UPDATE SET \
         payment_method_id = COALESCE(excluded.payment_method_id, customers.payment_method_id), \
         payment_method = COALESCE(excluded.payment_method, customers.payment_method), updated_at = excluded.updated_at"
    ).bind(user_id).bind(provider).bind(customer_id).bind(pm_id).bind(card.map(Json)).bind(now)
     .execute(p).await.map(|_| ()))
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct Subscription {
    pub id: String,
    pub user_id: String,
    pub provider: String,
    pub provider_subscription_id: String,
    pub product_id: String,
    pub level: i64,
    pub status: SubscriptionStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Records (or re-activates) a subscription; idempotent on the provider's id.
pub async fn upsert_subscription(
    db: &Db,
    user_id: &str,
    provider: &str,
    provider_id: &str,
    product_id: &str,
    level: i64,
    status: SubscriptionStatus,
) -> sqlx::Result<()> {
    let now = now();
    with_db!(db, p => sqlx::query(
        "INSERT INTO subscriptions (id, user_id, provider, provider_subscription_id, product_id, level, status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (provider_subscription_id) DO UPDATE SET \
         status = excluded.status, level = excluded.level, updated_at = excluded.updated_at"
    ).bind(uuid::Uuid::new_v4().to_string()).bind(user_id).bind(provider).bind(provider_id)
     .bind(product_id).bind(level).bind(status).bind(now)
     .execute(p).await.map(|_| ()))
}

pub async fn set_subscription_status(
    db: &Db,
    provider_id: &str,
    status: SubscriptionStatus,
) -> sqlx::Result<Option<Subscription>> {
    const SQL: &str = "UPDATE subscriptions SET status = $2, updated_at = $3 WHERE provider_subscription_id = $1 \
        RETURNING id, user_id, provider, provider_subscription_id, product_id, level, status, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(provider_id).bind(status).bind(now()).fetch_optional(p).await)
}

pub async fn subscriptions(db: &Db, user_id: &str) -> sqlx::Result<Vec<Subscription>> {
    const SQL: &str = "SELECT id, user_id, provider, provider_subscription_id, product_id, level, status, created_at, updated_at \
        FROM subscriptions WHERE user_id = $1 ORDER BY created_at DESC, id";
    with_db!(db, p => sqlx::query_as(SQL).bind(user_id).fetch_all(p).await)
}

pub async fn subscription_by_provider_id(
    db: &Db,
    provider_id: &str,
) -> sqlx::Result<Option<Subscription>> {
    const SQL: &str = "SELECT id, user_id, provider, provider_subscription_id, product_id, level, status, created_at, updated_at \
        FROM subscriptions WHERE provider_subscription_id = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(provider_id).fetch_optional(p).await)
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CheckoutSession {
    pub id: String,
    pub user_id: String,
    pub product_id: String,
    pub mode: CheckoutMode,
    pub status: CheckoutStatus,
    pub success_url: String,
    pub cancel_url: String,
}

pub async fn create_checkout(
    db: &Db,
    user_id: &str,
    product_id: &str,
    mode: CheckoutMode,
    success_url: &str,
    cancel_url: &str,
) -> sqlx::Result<String> {
    let id = format!("cs_{}", uuid::Uuid::new_v4().simple());
    let now = now();
    with_db!(db, p => sqlx::query(
        "INSERT INTO checkout_sessions (id, user_id, product_id, mode, status, success_url, cancel_url, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, 'open', $5, $6, $7, $7)"
    ).bind(&id).bind(user_id).bind(product_id).bind(mode).bind(success_url).bind(cancel_url).bind(now)
     .execute(p).await.map(|_| ()))?;
    Ok(id)
}

pub async fn checkout(db: &Db, id: &str) -> sqlx::Result<Option<CheckoutSession>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT id, user_id, product_id, mode, status, success_url, cancel_url FROM checkout_sessions WHERE id = $1"
    ).bind(id).fetch_optional(p).await)
}

/// Moves an open session to `status`; `false` when it was not open (completed twice).
pub async fn close_checkout(db: &Db, id: &str, status: CheckoutStatus) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query(
        "UPDATE checkout_sessions SET status = $2, updated_at = $3 WHERE id = $1 AND status = 'open'"
    ).bind(id).bind(status).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct Payment {
    pub id: String,
    pub user_id: String,
    pub provider_payment_id: String,
    pub amount_cents: i64,
    pub status: PaymentStatus,
    pub created_at: DateTime<Utc>,
}

pub async fn record_payment(
    db: &Db,
    user_id: &str,
    provider_id: &str,
    amount_cents: i64,
    status: PaymentStatus,
) -> sqlx::Result<Payment> {
    let now = now();
    with_db!(db, p => sqlx::query_as(
        "INSERT INTO payments (id, user_id, provider_payment_id, amount_cents, status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (provider_payment_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at \
         RETURNING id, user_id, provider_payment_id, amount_cents, status, created_at"
    ).bind(uuid::Uuid::new_v4().to_string()).bind(user_id).bind(provider_id).bind(amount_cents).bind(status).bind(now)
     .fetch_one(p).await)
}

pub async fn payments(db: &Db, user_id: &str) -> sqlx::Result<Vec<Payment>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT id, user_id, provider_payment_id, amount_cents, status, created_at FROM payments \
         WHERE user_id = $1 ORDER BY created_at DESC, id"
    ).bind(user_id).fetch_all(p).await)
}

/// Records a webhook event id; `false` when it was seen before.
pub async fn record_event(db: &Db, id: &str, kind: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query(
        "INSERT INTO webhook_events (id, type, received_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING"
    ).bind(id).bind(kind).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

pub async fn forget_event(db: &Db, id: &str) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query("DELETE FROM webhook_events WHERE id = $1").bind(id).execute(p).await.map(|_| ()))
}

pub async fn user_by_customer(db: &Db, customer_id: &str) -> sqlx::Result<Option<String>> {
    let row: Option<(String,)> = with_db!(db, p => sqlx::query_as(
        "SELECT user_id FROM customers WHERE customer_id = $1"
    ).bind(customer_id).fetch_optional(p).await)?;
    Ok(row.map(|r| r.0))
}

/// Claims a store transaction for an account; `Err(owner)` when it was claimed before.
pub async fn claim_store_transaction(
    db: &Db,
    store: &str,
    transaction_id: &str,
    user_id: &str,
    product_id: &str,
    tokens: i64,
) -> sqlx::Result<Result<(), Option<String>>> {
    let n = with_db!(db, p => sqlx::query(
        "INSERT INTO store_transactions (transaction_id, store, user_id, product_id, tokens, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (transaction_id) DO NOTHING"
    ).bind(transaction_id).bind(store).bind(user_id).bind(product_id).bind(tokens).bind(now())
     .execute(p).await.map(|r| r.rows_affected()))?;
    if n > 0 {
        return Ok(Ok(()));
    }
    let owner: Option<(Option<String>,)> = with_db!(db, p => sqlx::query_as(
        "SELECT user_id FROM store_transactions WHERE transaction_id = $1"
    ).bind(transaction_id).fetch_optional(p).await)?;
    Ok(Err(owner.and_then(|o| o.0)))
}

pub async fn release_store_transaction(db: &Db, transaction_id: &str) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query("DELETE FROM store_transactions WHERE transaction_id = $1")
        .bind(transaction_id).execute(p).await.map(|_| ()))
}
