//! Marketplace: `/api/marketplace/*`. This file: the cart of each verified user and the
//! discount codes of an organization (docs/api.md). Checkout, orders and receipts are
//! not built yet (501, docs/status.md).

use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::{Caller, OrgAdmin, Viewer};
use crate::db::marketplace::{self as store, CartLine, Discount, DiscountFields};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, NoFields};
use crate::reply::Reply;
use crate::state::AppState;

/// Largest quantity of one line.
const MAX_QUANTITY: i64 = 1_000;
const DISCOUNT_TYPES: [&str; 2] = ["percentage", "fixed"];

fn line_json(l: &CartLine) -> Value {
    json!({
        "sku": l.sku,
        "domain": l.domain,
        "inventory_item_id": l.item_id,
        "quantity": l.quantity,
        "price_cents": l.price_cents,
        "price_tokens": l.price_tokens,
        "available_count": l.available_count,
        "added_at": l.added_at,
    })
}

/// `GET /api/marketplace/cart` (V10): the lines with today's prices and availability;
/// `subtotal_tokens` is null when a line has no token price.
pub async fn cart(State(app): State<AppState>, Viewer(caller): Viewer) -> ApiResult {
    let lines = store::cart(&app.db, &caller.id).await?;
    let subtotal_cents: i64 = lines.iter().map(|l| l.price_cents * l.quantity).sum();
    let subtotal_tokens: Option<i64> = lines
        .iter()
        .map(|l| l.price_tokens.map(|t| t * l.quantity))
        .sum();
    let data: Vec<Value> = lines.iter().map(line_json).collect();
    Ok(Reply::ok(json!({
        "data": data,
        "count": data.len(),
        "subtotal_cents": subtotal_cents,
        "subtotal_tokens": subtotal_tokens,
    })))
}

fn quantity(q: i64) -> ApiResult<i64> {
    if !(1..=MAX_QUANTITY).contains(&q) {
        return Err(ApiError::bad_request(format!(
            "`quantity` must be 1 to {MAX_QUANTITY}"
        )));
    }
    Ok(q)
}

/// The live item a sku names for this caller: private items only for members; a sku
/// several organizations use needs `domain`.
async fn item_for(
    app: &AppState,
    caller: &Caller,
    sku: &str,
    domain: Option<&str>,
) -> ApiResult<String> {
    let mut found = Vec::new();
    for (id, private, org_id) in
        store::items_by_sku(&app.db, sku.trim(), domain.map(str::trim)).await?
    {
        if !private || crate::auth::in_org(app, caller, &org_id).await? {
            found.push(id);
        }
    }
    match found.len() {
        0 => Err(ApiError::not_found("no item with this sku")),
        1 => Ok(found.remove(0)),
        _ => Err(ApiError::bad_request(
            "several organizations sell this sku: send `domain` too",
        )),
    }
}

/// The caller's cart line for a sku (and domain).
async fn line_for(
    app: &AppState,
    caller: &Caller,
    sku: &str,
    domain: Option<&str>,
) -> ApiResult<CartLine> {
    let mut lines: Vec<CartLine> = store::cart(&app.db, &caller.id)
        .await?
        .into_iter()
        .filter(|l| {
            l.sku == sku.trim() && domain.is_none_or(|d| l.domain.eq_ignore_ascii_case(d.trim()))
        })
        .collect();
    match lines.len() {
        0 => Err(ApiError::not_found("this sku is not in the cart")),
        1 => Ok(lines.remove(0)),
        _ => Err(ApiError::bad_request(
            "the cart has this sku from several organizations: send `domain` too",
        )),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct LineBody {
    sku: String,
    /// 1 to 1,000 (for `update`, 0 removes the line).
    quantity: i64,
    /// The item's organization, when several sell the sku.
    domain: Option<String>,
}

/// `POST /api/marketplace/cart/add` (V10): adds to the line's quantity. Availability is
/// checked at checkout, not here.
pub async fn cart_add(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<LineBody>,
) -> ApiResult {
    let q = quantity(body.quantity)?;
    let item = item_for(&app, &caller, &body.sku, body.domain.as_deref()).await?;
    let total = store::add(&app.db, &caller.id, &item, q).await?;
    if total > MAX_QUANTITY {
        store::set(&app.db, &caller.id, &item, total - q).await?;
        return Err(ApiError::bad_request(format!(
            "a line holds at most {MAX_QUANTITY}"
        )));
    }
    cart(State(app), Viewer(caller)).await
}

/// `POST /api/marketplace/cart/update` (V10): sets the line's quantity (0 removes it).
pub async fn cart_update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<LineBody>,
) -> ApiResult {
    let line = line_for(&app, &caller, &body.sku, body.domain.as_deref()).await?;
    if body.quantity == 0 {
        store::remove(&app.db, &caller.id, &line.item_id).await?;
    } else {
        store::set(&app.db, &caller.id, &line.item_id, quantity(body.quantity)?).await?;
    }
    cart(State(app), Viewer(caller)).await
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SkuBody {
    sku: String,
    domain: Option<String>,
}

/// `POST /api/marketplace/cart/remove` (V10).
pub async fn cart_remove(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<SkuBody>,
) -> ApiResult {
    let line = line_for(&app, &caller, &body.sku, body.domain.as_deref()).await?;
    store::remove(&app.db, &caller.id, &line.item_id).await?;
    cart(State(app), Viewer(caller)).await
}

/// `POST /api/marketplace/cart/clear` (V10).
pub async fn cart_clear(State(app): State<AppState>, Viewer(caller): Viewer) -> ApiResult {
    let removed = store::clear(&app.db, &caller.id).await?;
    Ok(Reply::ok(
        json!({"success": true, "removed": removed, "data": [], "count": 0}),
    ))
}

// ---- discounts ----

fn discount_not_found() -> ApiError {
    ApiError::not_found("discount not found")
}

/// The organization's discount `id`.
async fn discount_of(app: &AppState, org_id: &str, id: &str) -> ApiResult<Discount> {
    store::discount(&app.db, id)
        .await?
        .filter(|d| d.organization_id == org_id)
        .ok_or_else(discount_not_found)
}

/// `GET /api/marketplace/discounts?domain=` (OrgAdmin).
pub async fn discounts(State(app): State<AppState>, g: OrgAdmin<NoFields>) -> ApiResult {
    let data = store::discounts(&app.db, &g.org.id).await?;
    Ok(Reply::ok(json!({"count": data.len(), "data": data})))
}

/// `GET /api/marketplace/discounts/{id}?domain=` (OrgAdmin).
pub async fn discount(
    State(app): State<AppState>,
    Path(id): Path<String>,
    g: OrgAdmin<NoFields>,
) -> ApiResult {
    let d = discount_of(&app, &g.org.id, &id).await?;
    Ok(Reply::ok(json!({ "data": d })))
}

/// A code: trimmed, upper-cased, 1 to 64 of `A-Z 0-9 _ -` (matched case-insensitively).
fn code(raw: &str) -> ApiResult<String> {
    let c = raw.trim().to_uppercase();
    if c.is_empty()
        || c.len() > 64
        || !c
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_-".contains(ch))
    {
        return Err(ApiError::bad_request(
            "`code` must be 1 to 64 of letters, digits, `_` and `-`",
        ));
    }
    Ok(c)
}

/// Checks a discount's fields together.
fn check(f: &DiscountFields<'_>) -> ApiResult<()> {
    if !DISCOUNT_TYPES.contains(&f.r#type) {
        return Err(ApiError::bad_request(
            "`type` must be `percentage` or `fixed`",
        ));
    }
    let ok = match f.r#type {
        "percentage" => f.value > 0.0 && f.value <= 100.0,
        _ => f.value >= 1.0 && f.value.fract() == 0.0 && f.value <= 1e12,
    };
    if !ok {
        return Err(ApiError::bad_request(
            "`value` must be a percent in (0, 100] for `percentage`, or whole cents from 1 for `fixed`",
        ));
    }
    if f.max_uses.is_some_and(|m| m < 1) || f.min_order_cents.is_some_and(|m| m < 0) {
        return Err(ApiError::bad_request(
            "`max_uses` must be 1 or more and `min_order_cents` 0 or more (or null)",
        ));
    }
    Ok(())
}

fn expiry(raw: Option<&str>) -> ApiResult<Option<DateTime<Utc>>> {
    raw.map(|t| crate::domain::records::timestamp("expires_at", t))
        .transpose()
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DiscountCreate {
    code: String,
    /// Percent off for `percentage`, cents off for `fixed`.
    value: f64,
    /// `percentage` or `fixed`.
    r#type: String,
    /// RFC 3339; the code no longer applies after it.
    expires_at: Option<String>,
    /// Checkouts that may use it (exact under concurrency at checkout).
    max_uses: Option<i64>,
    /// The smallest order (cents, before the discount) it applies to.
    min_order_cents: Option<i64>,
}

/// `POST /api/marketplace/discounts/create` (OrgAdmin): 409 when the organization has
/// the code already.
pub async fn discount_create(
    State(app): State<AppState>,
    g: OrgAdmin<DiscountCreate>,
) -> ApiResult {
    let b = &g.body;
    let code = code(&b.code)?;
    let t = b.r#type.trim().to_lowercase();
    let f = DiscountFields {
        code: &code,
        r#type: &t,
        value: b.value,
        expires_at: expiry(b.expires_at.as_deref())?,
        max_uses: b.max_uses,
        min_order_cents: b.min_order_cents,
    };
    check(&f)?;
    let d = store::create_discount(&app.db, &g.org.id, &f).await?;
    Ok(Reply::ok(json!({"success": true, "data": d})))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DiscountUpdate {
    id: String,
    code: Option<String>,
    value: Option<f64>,
    r#type: Option<String>,
    /// `null` removes the expiry.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schemars(with = "Option<String>")]
    expires_at: Option<Option<String>>,
    /// `null` removes the limit.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schemars(with = "Option<i64>")]
    max_uses: Option<Option<i64>>,
    /// `null` removes the minimum.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schemars(with = "Option<i64>")]
    min_order_cents: Option<Option<i64>>,
}

/// `POST /api/marketplace/discounts/update` (OrgAdmin): the given fields; `uses` is the
/// server's.
pub async fn discount_update(
    State(app): State<AppState>,
    g: OrgAdmin<DiscountUpdate>,
) -> ApiResult {
    let b = &g.body;
    let d = discount_of(&app, &g.org.id, &b.id).await?;
    let code = match &b.code {
        Some(c) => code(c)?,
        None => d.code.clone(),
    };
    let t = b
        .r#type
        .as_deref()
        .map(|t| t.trim().to_lowercase())
        .unwrap_or(d.r#type.clone());
    let f = DiscountFields {
        code: &code,
        r#type: &t,
        value: b.value.unwrap_or(d.value),
        expires_at: match &b.expires_at {
            Some(e) => expiry(e.as_deref())?,
            None => d.expires_at,
        },
        max_uses: b.max_uses.unwrap_or(d.max_uses),
        min_order_cents: b.min_order_cents.unwrap_or(d.min_order_cents),
    };
    check(&f)?;
    let d = store::update_discount(&app.db, &d.id, &f)
        .await?
        .ok_or_else(discount_not_found)?;
    Ok(Reply::ok(json!({"success": true, "data": d})))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DiscountDelete {
    id: String,
}

/// `POST /api/marketplace/discounts/delete` (OrgAdmin).
pub async fn discount_delete(
    State(app): State<AppState>,
    g: OrgAdmin<DiscountDelete>,
) -> ApiResult {
    let d = discount_of(&app, &g.org.id, &g.body.id).await?;
    store::delete_discount(&app.db, &d.id).await?;
    Ok(Reply::ok(
        json!({"success": true, "id": d.id, "deleted": true}),
    ))
}
