//! Marketplace: `/api/marketplace/*` (docs/api.md). This file: the cart of each verified
//! user, guest sessions and their carts, and the discount codes of an organization;
//! `checkout.rs` turns carts into orders, `orders.rs` reads and moves them.

mod checkout;
mod orders;

pub use checkout::{checkout, guest_checkout};
pub use orders::{
    guest_order, guest_order_status, order, order_update, orders, resend_receipt, send_receipt,
};

use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::db::marketplace::{
    self as store, CartLine, Discount as DiscountRow, DiscountFields, Owner,
};
use crate::domain::checkout::{quantity, MAX_QUANTITY};
use crate::http::auth::{takes_guests, Guest, OrgAdmin, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, NoFields};
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::states::DiscountKind;
use crate::wire::analytics::All;
use crate::wire::marketplace::{Cart, Cleared, Discount, GuestSession, Line};
use crate::wire::{Data, Deleted, Saved, True};

/// `GET /api/marketplace/cart` (V10): the lines with today's prices and availability;
/// `subtotal_tokens` is null when a line has no token price.
pub async fn cart(State(app): State<AppState>, Viewer(caller): Viewer) -> ApiResult<Answer<Cart>> {
    cart_of(&app, Owner::User(&caller.id)).await
}

/// A cart as every cart endpoint answers it.
async fn cart_of(app: &AppState, owner: Owner<'_>) -> ApiResult<Answer<Cart>> {
    let lines = store::cart(&app.db, owner).await?;
    let subtotal_cents: i64 = lines.iter().map(|l| l.price_cents * l.quantity).sum();
    let subtotal_tokens: Option<i64> = lines
        .iter()
        .map(|l| l.price_tokens.map(|t| t * l.quantity))
        .sum();
    let data: Vec<Line> = lines.iter().map(Line::from).collect();
    Ok(Answer(Cart {
        count: data.len(),
        data,
        subtotal_cents,
        subtotal_tokens,
    }))
}

/// The caller's cart line for a sku (and domain).
async fn line_for(
    app: &AppState,
    owner: Owner<'_>,
    sku: &str,
    domain: Option<&str>,
) -> ApiResult<CartLine> {
    let mut lines: Vec<CartLine> = store::cart(&app.db, owner)
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

/// Adds to a line (checked: 1 to 1,000 per request and per line).
async fn add_line(app: &AppState, owner: Owner<'_>, item: &str, q: i64) -> ApiResult<()> {
    let q = quantity(q)?;
    let total = store::add(&app.db, owner, item, q).await?;
    if total > MAX_QUANTITY {
        store::set(&app.db, owner, item, total - q).await?;
        return Err(ApiError::bad_request(format!(
            "a line holds at most {MAX_QUANTITY}"
        )));
    }
    Ok(())
}

/// Sets a line's quantity (0 removes it).
async fn set_line(app: &AppState, owner: Owner<'_>, body: &LineBody) -> ApiResult<()> {
    let line = line_for(app, owner, &body.sku, body.domain.as_deref()).await?;
    if body.quantity == 0 {
        store::remove(&app.db, owner, &line.item_id).await?;
    } else {
        store::set(&app.db, owner, &line.item_id, quantity(body.quantity)?).await?;
    }
    Ok(())
}

async fn remove_line(app: &AppState, owner: Owner<'_>, body: &SkuBody) -> ApiResult<()> {
    let line = line_for(app, owner, &body.sku, body.domain.as_deref()).await?;
    store::remove(&app.db, owner, &line.item_id).await?;
    Ok(())
}

async fn clear_cart(app: &AppState, owner: Owner<'_>) -> ApiResult<Answer<Cleared>> {
    let removed = store::clear(&app.db, owner).await?;
    Ok(Answer(Cleared {
        success: True,
        removed,
        data: Vec::new(),
        count: 0,
    }))
}

/// `POST /api/marketplace/cart/add` (V10): adds to the line's quantity. Availability is
/// checked at checkout, not here.
pub async fn cart_add(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<LineBody>,
) -> ApiResult<Answer<Cart>> {
    let item = app
        .domain
        .checkout
        .item_for(Some(&caller), &body.sku, body.domain.as_deref())
        .await?;
    let owner = Owner::User(&caller.id);
    add_line(&app, owner, &item.id, body.quantity).await?;
    cart_of(&app, owner).await
}

/// `POST /api/marketplace/cart/update` (V10): sets the line's quantity (0 removes it).
pub async fn cart_update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<LineBody>,
) -> ApiResult<Answer<Cart>> {
    let owner = Owner::User(&caller.id);
    set_line(&app, owner, &body).await?;
    cart_of(&app, owner).await
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
) -> ApiResult<Answer<Cart>> {
    let owner = Owner::User(&caller.id);
    remove_line(&app, owner, &body).await?;
    cart_of(&app, owner).await
}

/// `POST /api/marketplace/cart/clear` (V10).
pub async fn cart_clear(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<Cleared>> {
    clear_cart(&app, Owner::User(&caller.id)).await
}

// ---- guest sessions and carts ----

/// How long a guest session lasts (spec: 24 hours).
const GUEST_TTL: chrono::TimeDelta = chrono::TimeDelta::hours(24);

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SessionBody {
    /// The organization (its `data.guest_checkout_enabled` must be true).
    domain: String,
}

/// `POST /api/marketplace/guest/session` (Public): a token valid 24 hours, bound to the
/// organization; 403 when the organization does not take guest checkouts.
pub async fn guest_session(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<SessionBody>,
) -> ApiResult<Answer<GuestSession>> {
    let org = crate::db::organizations::by_domain(&app.db, &body.domain)
        .await?
        .ok_or_else(|| ApiError::not_found("organization not found"))?;
    if !takes_guests(&org) {
        return Err(ApiError::forbidden(
            "this organization does not take guest checkouts",
        ));
    }
    let token = format!("gs_{}", hex::encode(crate::crypto::random_bytes::<32>()));
    let expires_at = Utc::now() + GUEST_TTL;
    store::create_guest_session(
        &app.db,
        &crate::crypto::sha256_hex(token.as_bytes()),
        &org.id,
        expires_at,
    )
    .await?;
    Ok(Answer(GuestSession {
        token,
        expires_at,
        domain: org.domain,
    }))
}

/// `GET /api/marketplace/guest/cart` (guest session).
pub async fn guest_cart(State(app): State<AppState>, guest: Guest) -> ApiResult<Answer<Cart>> {
    cart_of(&app, Owner::Guest(&guest.id)).await
}

/// `POST /api/marketplace/guest/cart/add` (guest session): items of the session's
/// organization only (public ones).
pub async fn guest_cart_add(
    State(app): State<AppState>,
    guest: Guest,
    JsonBody(body): JsonBody<LineBody>,
) -> ApiResult<Answer<Cart>> {
    let item = app
        .domain
        .checkout
        .item_for(None, &body.sku, Some(&guest.domain))
        .await?;
    let owner = Owner::Guest(&guest.id);
    add_line(&app, owner, &item.id, body.quantity).await?;
    cart_of(&app, owner).await
}

/// `POST /api/marketplace/guest/cart/update` (guest session; 0 removes the line).
pub async fn guest_cart_update(
    State(app): State<AppState>,
    guest: Guest,
    JsonBody(body): JsonBody<LineBody>,
) -> ApiResult<Answer<Cart>> {
    let owner = Owner::Guest(&guest.id);
    set_line(&app, owner, &body).await?;
    cart_of(&app, owner).await
}

/// `POST /api/marketplace/guest/cart/remove` (guest session).
pub async fn guest_cart_remove(
    State(app): State<AppState>,
    guest: Guest,
    JsonBody(body): JsonBody<SkuBody>,
) -> ApiResult<Answer<Cart>> {
    let owner = Owner::Guest(&guest.id);
    remove_line(&app, owner, &body).await?;
    cart_of(&app, owner).await
}

/// `POST /api/marketplace/guest/cart/clear` (guest session).
pub async fn guest_cart_clear(
    State(app): State<AppState>,
    guest: Guest,
) -> ApiResult<Answer<Cleared>> {
    clear_cart(&app, Owner::Guest(&guest.id)).await
}

// ---- discounts ----

fn discount_not_found() -> ApiError {
    ApiError::not_found("discount not found")
}

/// The organization's discount `id`.
async fn discount_of(app: &AppState, org_id: &str, id: &str) -> ApiResult<DiscountRow> {
    store::discount(&app.db, id)
        .await?
        .filter(|d| d.organization_id == org_id)
        .ok_or_else(discount_not_found)
}

/// `GET /api/marketplace/discounts?domain=` (OrgAdmin).
pub async fn discounts(
    State(app): State<AppState>,
    g: OrgAdmin<NoFields>,
) -> ApiResult<Answer<All<Discount>>> {
    let data = store::discounts(&app.db, &g.org.id)
        .await?
        .into_iter()
        .map(Discount::from)
        .collect();
    Ok(Answer(All::new(data)))
}

/// `GET /api/marketplace/discounts/{id}?domain=` (OrgAdmin).
pub async fn discount(
    State(app): State<AppState>,
    Path(id): Path<String>,
    g: OrgAdmin<NoFields>,
) -> ApiResult<Answer<Data<Discount>>> {
    let d = discount_of(&app, &g.org.id, &id).await?;
    Ok(Answer(Data { data: d.into() }))
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

/// A discount's kind, as sent (any case).
fn kind(raw: &str) -> ApiResult<DiscountKind> {
    DiscountKind::parse(&raw.trim().to_lowercase())
        .ok_or_else(|| ApiError::bad_request("`type` must be `percentage` or `fixed`"))
}

/// Checks a discount's fields together.
fn check(f: &DiscountFields<'_>) -> ApiResult<()> {
    let ok = match f.r#type {
        DiscountKind::Percentage => f.value > 0.0 && f.value <= 100.0,
        DiscountKind::Fixed => f.value >= 1.0 && f.value.fract() == 0.0 && f.value <= 1e12,
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
    Ok(raw
        .map(|t| crate::domain::records::timestamp("expires_at", t))
        .transpose()?)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DiscountCreate {
    code: String,
    /// Percent off for `percentage`, cents off for `fixed`.
    value: f64,
    /// `percentage` or `fixed` (any case).
    #[schemars(with = "DiscountKind")]
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
) -> ApiResult<Answer<Saved<Discount>>> {
    let b = &g.body;
    let code = code(&b.code)?;
    let f = DiscountFields {
        code: &code,
        r#type: kind(&b.r#type)?,
        value: b.value,
        expires_at: expiry(b.expires_at.as_deref())?,
        max_uses: b.max_uses,
        min_order_cents: b.min_order_cents,
    };
    check(&f)?;
    let d = store::create_discount(&app.db, &g.org.id, &f).await?;
    Ok(Answer(Saved::new(d.into())))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DiscountUpdate {
    id: String,
    code: Option<String>,
    value: Option<f64>,
    /// `percentage` or `fixed` (any case).
    #[schemars(with = "Option<DiscountKind>")]
    r#type: Option<String>,
    /// `null` removes the expiry.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schemars(with = "Option<String>")]
    expires_at: Option<Option<String>>,
    /// `null` removes the limit.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schemars(with = "Option<i64>")]
    max_uses: Option<Option<i64>>,
    /// `null` removes the minimum.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schemars(with = "Option<i64>")]
    min_order_cents: Option<Option<i64>>,
}

/// `POST /api/marketplace/discounts/update` (OrgAdmin): the given fields; `uses` is the
/// server's.
pub async fn discount_update(
    State(app): State<AppState>,
    g: OrgAdmin<DiscountUpdate>,
) -> ApiResult<Answer<Saved<Discount>>> {
    let b = &g.body;
    let d = discount_of(&app, &g.org.id, &b.id).await?;
    let code = match &b.code {
        Some(c) => code(c)?,
        None => d.code.clone(),
    };
    let f = DiscountFields {
        code: &code,
        r#type: b
            .r#type
            .as_deref()
            .map(kind)
            .transpose()?
            .unwrap_or(d.r#type),
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
    Ok(Answer(Saved::new(d.into())))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DiscountDelete {
    id: String,
}

/// `POST /api/marketplace/discounts/delete` (OrgAdmin).
pub async fn discount_delete(
    State(app): State<AppState>,
    g: OrgAdmin<DiscountDelete>,
) -> ApiResult<Answer<Deleted>> {
    let d = discount_of(&app, &g.org.id, &g.body.id).await?;
    store::delete_discount(&app.db, &d.id).await?;
    Ok(Answer(Deleted::new(d.id)))
}
