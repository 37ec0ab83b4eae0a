//! What a checkout or purchase asks for, checked: lines, quantities, the payment type,
//! addresses and the request's other fields, and what a placed order answers.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{CheckoutError, Result, MAX_QUANTITY};
use crate::caller::Caller;
use crate::db::orders::{LineRow, NotPlaced, OrderRow};
use crate::domain::Invalid;

pub fn quantity(q: i64) -> Result<i64, Invalid> {
    if !(1..=MAX_QUANTITY).contains(&q) {
        return Err(Invalid(format!("`quantity` must be 1 to {MAX_QUANTITY}")));
    }
    Ok(q)
}

/// Most lines one checkout may have.
pub(super) const MAX_LINES: usize = 100;

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
pub struct ItemLine {
    pub sku: String,
    /// 1 to 1,000.
    #[schemars(range(min = 1, max = 1000))]
    pub quantity: i64,
}

#[derive(Deserialize, Serialize, schemars::JsonSchema, Clone)]
pub struct Address {
    name: Option<String>,
    street: Option<String>,
    city: Option<String>,
    state: Option<String>,
    zip: Option<String>,
    country: Option<String>,
}

/// The provider-paid path, or tokens.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Pay {
    Tokens,
    Usd,
}

impl Pay {
    /// Every spelling of `payment_type` a client may send, any case (`usd` has three
    /// older names for the payment provider).
    pub const SPELLINGS: &'static [(&'static str, Pay)] = &[
        ("tokens", Pay::Tokens),
        ("usd", Pay::Usd),
        ("provider", Pay::Usd),
        ("stripe", Pay::Usd),
        ("card", Pay::Usd),
    ];
}

pub fn pay(raw: Option<&str>) -> Result<Pay, Invalid> {
    let Some(raw) = raw else { return Ok(Pay::Usd) };
    plinth_vocab::spelled(Pay::SPELLINGS, raw).ok_or_else(|| {
        Invalid::new("`payment_type` must be `tokens` or `usd` (the default: the payment provider)")
    })
}

/// What a checkout asks for, checked and priced.
pub struct Basket {
    pub org_id: String,
    pub domain: String,
    pub lines: Vec<LineRow>,
    /// Whether the lines came from the cart (removed from it on success).
    pub from_cart: bool,
}

pub(super) fn sum(mut values: impl Iterator<Item = Option<i64>>) -> Result<i64, Invalid> {
    values
        .try_fold(0i64, |acc, v| acc.checked_add(v?))
        .ok_or_else(|| Invalid::new("the order total is too large"))
}

/// A JSON object of at most 16 KiB, or nothing.
pub fn object(field: &str, v: Option<Value>) -> Result<Value, Invalid> {
    match v {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::Object(m)) => {
            let v = Value::Object(m);
            if v.to_string().len() > 16 * 1024 {
                return Err(Invalid(format!("`{field}` must be at most 16 KiB")));
            }
            Ok(v)
        }
        Some(_) => Err(Invalid(format!("`{field}` must be an object"))),
    }
}

pub fn address(a: Option<Address>) -> Result<Option<Value>> {
    let Some(a) = a else { return Ok(None) };
    let fields = [&a.name, &a.street, &a.city, &a.state, &a.zip, &a.country];
    if fields
        .iter()
        .any(|f| f.as_ref().is_some_and(|s| s.len() > 200))
    {
        return Err(
            Invalid::new("`shipping_address` fields must be at most 200 characters").into(),
        );
    }
    Ok(Some(
        serde_json::to_value(a).map_err(|e| CheckoutError::Internal(e.to_string()))?,
    ))
}

/// Everything a checkout needs besides the basket.
pub struct Request {
    pub buyer_email: Option<String>,
    pub customer_info: Value,
    pub shipping_address: Option<Value>,
    pub discount_code: Option<String>,
    pub payment_method_id: Option<String>,
}

/// A basket's totals, and the discount (id, code) that gave its share.
pub(super) struct Priced {
    pub(super) subtotal_cents: i64,
    pub(super) discount_cents: i64,
    pub(super) total_cents: i64,
    pub(super) subtotal_tokens: Option<i64>,
    pub(super) discount_tokens: Option<i64>,
    pub(super) total_tokens: Option<i64>,
    pub(super) discount: Option<(String, String)>,
}

/// A placed order: as written, its lines, the balance after a token payment and where
/// to pay a pending one.
pub struct Placed {
    pub row: OrderRow,
    pub lines: Vec<LineRow>,
    pub balance: Option<i64>,
    pub payment: Option<PendingPayment>,
}

/// A provider payment still to be made for a pending order.
#[derive(Clone, Debug)]
pub struct PendingPayment {
    pub provider: String,
    pub id: String,
    /// For the provider's client library (Stripe.js) to confirm the payment.
    pub client_secret: Option<String>,
    /// A page where the buyer pays, when plinth hosts it (simulated payments).
    pub url: Option<String>,
}

pub(super) fn out_of_stock(sku: &str, available: i64) -> CheckoutError {
    CheckoutError::OutOfStock {
        sku: sku.to_owned(),
        available,
    }
}

pub(super) fn not_placed(r: Result<(), NotPlaced>) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(NotPlaced::OutOfStock { sku, available }) => Err(out_of_stock(&sku, available)),
        Err(NotPlaced::DiscountUsedUp) => Err(CheckoutError::DiscountGone),
    }
}

/// Most units (license keys, download links) one purchase mints.
pub const MAX_PURCHASE_UNITS: i64 = 100;

/// Who pays for a purchase: an account, or a guest session of the selling
/// organization (its id and the organization's domain).
pub enum Shopper<'a> {
    User(&'a Caller),
    Guest { id: &'a str, domain: &'a str },
}

/// What a purchase asks for (the request's fields, as sent).
pub struct Purchase<'a> {
    pub items: &'a [ItemLine],
    pub payment_type: Option<&'a str>,
    pub payment_method_id: Option<&'a str>,
    pub domain: Option<&'a str>,
    pub discount_code: Option<&'a str>,
    pub email: Option<&'a str>,
    pub customer_info: Option<Value>,
}
