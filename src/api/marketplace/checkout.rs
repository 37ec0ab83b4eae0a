//! Checkout: `POST /api/marketplace/checkout` (a verified user; tokens or USD) and
//! `POST /api/marketplace/guest/checkout` (a guest session; USD by payment method). The
//! rules are `domain::checkout`'s.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::db::marketplace::Owner;
use crate::db::orders::Buyer;
use crate::domain::checkout::{address, object, pay, run_to_end, Address, ItemLine, Pay, Request};
use crate::http::auth::{Guest, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdempotencyKey, JsonBody};
use crate::http::reply::Recorded;
use crate::http::request::NonBlank;
use crate::state::AppState;
use crate::wire::marketplace::Placed;

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct CheckoutBody {
    /// The lines to buy. Omitted (or null), the caller's cart, its lines removed on
    /// success; an empty cart is then a 400 like an empty `items`, so the document
    /// states `items` as required.
    #[schemars(with = "Vec<ItemLine>", length(min = 1))]
    items: Option<Vec<ItemLine>>,
    /// `tokens` (the items' `price_tokens`, from the balance at once), or `usd` (the
    /// default: `price_cents` through the payment provider).
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::marketplace::payment_type_schema")]
    payment_type: Option<String>,
    /// The selling organization, when a sku is sold by several.
    domain: Option<String>,
    /// Free-form details of the buyer (an object; `email` gets receipts).
    customer_info: Option<Value>,
    shipping_address: Option<Address>,
    discount_code: Option<NonBlank>,
    /// USD: pay now with this payment method (`pm_...`); without it the answer says
    /// where to pay, and the units are held until `reserved_until`.
    #[schemars(regex(pattern = r"^pm_[A-Za-z0-9_]+$"), length(max = 255))]
    payment_method_id: Option<String>,
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct GuestCheckoutBody {
    /// The lines to buy; omitted, the session's cart (its lines are removed on success).
    items: Option<Vec<ItemLine>>,
    /// The payment method (`pm_...`); the payment is confirmed at once.
    payment_method_id: String,
    shipping_address: Option<Address>,
    /// Optional details (an `email` here, or `email` below, may ask for receipts).
    customer_info: Option<Value>,
    email: Option<String>,
    discount_code: Option<String>,
}

/// `POST /api/marketplace/checkout` (V10; rate category auth): an order from `items` or
/// the cart, paid in tokens at once or in USD through the payment provider. The checkout
/// runs in its own task: a client that hangs up mid-way does not stop it between taking
/// the tokens and writing the order.
pub async fn checkout(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<CheckoutBody>,
) -> ApiResult<Recorded<Placed>> {
    run_to_end(async move {
        let scope = format!("checkout:{}", caller.id);
        crate::http::idempotency::checkout(&app, key.0.clone(), scope, &body, async {
            let pay = pay(body.payment_type.as_deref())?;
            if let Some(pm) = &body.payment_method_id {
                crate::adapters::payments::valid_payment_method_id(pm)?;
            }
            let basket = app
                .domain
                .checkout
                .basket(
                    Some(&caller),
                    Owner::User(&caller.id),
                    body.items.as_deref(),
                    body.domain.as_deref(),
                )
                .await?;
            let req = Request {
                buyer_email: Some(caller.user.email.clone()),
                customer_info: object("customer_info", body.customer_info.clone())?,
                shipping_address: address(body.shipping_address.clone())?,
                discount_code: body.discount_code.clone().map(NonBlank::into_string),
                payment_method_id: body.payment_method_id.clone(),
            };
            let placed = app
                .domain
                .checkout
                .place(Buyer::User(caller.id.clone()), basket, pay, req)
                .await?;
            Ok(Placed::from(&placed))
        })
        .await
    })
    .await
}

/// `POST /api/marketplace/guest/checkout` (guest session): an order of the session's
/// organization, paid at once with `payment_method_id` (a decline is a 402 and holds
/// nothing). No account, name or email needed; an email (in `email` or
/// `customer_info.email`) may later ask for the receipt.
pub async fn guest_checkout(
    State(app): State<AppState>,
    guest: Guest,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<GuestCheckoutBody>,
) -> ApiResult<Recorded<Placed>> {
    run_to_end(async move {
        let scope = format!("guest-checkout:{}", guest.id);
        crate::http::idempotency::checkout(&app, key.0.clone(), scope, &body, async {
            crate::adapters::payments::valid_payment_method_id(&body.payment_method_id)?;
            let basket = app
                .domain
                .checkout
                .basket(
                    None,
                    Owner::Guest(&guest.id),
                    body.items.as_deref(),
                    Some(&guest.domain),
                )
                .await?;
            if basket.org_id != guest.org_id {
                return Err(ApiError::forbidden(
                    "a guest session buys from its own organization only",
                ));
            }
            let customer_info = object("customer_info", body.customer_info.clone())?;
            let email = body
                .email
                .as_deref()
                .or_else(|| customer_info.get("email").and_then(Value::as_str))
                .map(crate::domain::accounts::parse_email)
                .transpose()?;
            let req = Request {
                buyer_email: email,
                customer_info,
                shipping_address: address(body.shipping_address.clone())?,
                discount_code: body.discount_code.clone(),
                payment_method_id: Some(body.payment_method_id.clone()),
            };
            let placed = app
                .domain
                .checkout
                .place(Buyer::Guest(guest.id.clone()), basket, Pay::Usd, req)
                .await?;
            Ok(Placed::from(&placed))
        })
        .await
    })
    .await
}
