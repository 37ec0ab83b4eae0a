//! `/api/marketplace*` answers: carts, guest sessions, discount codes, orders and
//! checkouts (the purchases of licenses and download links answer a checkout too).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::db::marketplace::{CartLine, Discount as DiscountRow};
use crate::db::orders::{LineRow, OrderRow};
use crate::domain::checkout::{ItemLine, Purchase};
use crate::states::{DiscountKind, OrderStatus, PaymentType};

/// A line of a cart, with today's price and availability.
#[derive(Serialize, JsonSchema)]
pub struct Line {
    pub sku: String,
    pub domain: String,
    #[schemars(extend("format" = "uuid"))]
    pub inventory_item_id: String,
    pub quantity: i64,
    pub price_cents: i64,
    pub price_tokens: Option<i64>,
    pub available_count: i64,
    pub added_at: DateTime<Utc>,
}

impl From<&CartLine> for Line {
    fn from(l: &CartLine) -> Line {
        Line {
            sku: l.sku.clone(),
            domain: l.domain.clone(),
            inventory_item_id: l.item_id.clone(),
            quantity: l.quantity,
            price_cents: l.price_cents,
            price_tokens: l.price_tokens,
            available_count: l.available_count,
            added_at: l.added_at,
        }
    }
}

/// A cart, as every cart endpoint answers.
#[derive(Serialize, JsonSchema)]
pub struct Cart {
    pub data: Vec<Line>,
    pub count: usize,
    pub subtotal_cents: i64,
    /// `null` when a line has no token price.
    pub subtotal_tokens: Option<i64>,
}

/// `cart/clear`.
#[derive(Serialize, JsonSchema)]
pub struct Cleared {
    pub success: super::True,
    /// Lines removed.
    pub removed: u64,
    /// Always empty.
    pub data: Vec<Line>,
    pub count: usize,
}

/// `guest/session`: a token valid 24 hours, bound to the organization.
#[derive(Serialize, JsonSchema)]
pub struct GuestSession {
    /// Send as `Authorization: Bearer <token>`.
    pub token: String,
    pub expires_at: DateTime<Utc>,
    pub domain: String,
}

/// A discount code of an organization.
#[derive(Serialize, JsonSchema)]
pub struct Discount {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub organization_id: String,
    pub code: String,
    pub r#type: DiscountKind,
    /// Percent off for `percentage`, cents off for `fixed`.
    pub value: f64,
    pub expires_at: Option<DateTime<Utc>>,
    pub max_uses: Option<i64>,
    pub uses: i64,
    pub min_order_cents: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<DiscountRow> for Discount {
    fn from(d: DiscountRow) -> Discount {
        Discount {
            id: d.id,
            organization_id: d.organization_id,
            code: d.code,
            r#type: d.r#type,
            value: d.value,
            expires_at: d.expires_at,
            max_uses: d.max_uses,
            uses: d.uses,
            min_order_cents: d.min_order_cents,
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}

/// A line of an order, at the price it was bought for.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "OrderItem")]
pub struct OrderItem {
    #[schemars(extend("format" = "uuid"))]
    pub item_id: String,
    pub sku: String,
    pub quantity: i64,
    pub price_cents: i64,
    /// `null` for an item without a token price.
    pub price_tokens: Option<i64>,
}

impl From<&LineRow> for OrderItem {
    fn from(l: &LineRow) -> OrderItem {
        OrderItem {
            item_id: l.item_id.clone(),
            sku: l.sku.clone(),
            quantity: l.quantity,
            price_cents: l.price_cents,
            price_tokens: l.price_tokens,
        }
    }
}

/// An order without anything personal: what the public lookup of a guest order shows.
#[derive(Serialize, JsonSchema)]
pub struct PublicOrder {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    /// The selling organization's domain.
    pub domain: String,
    pub status: OrderStatus,
    pub payment_type: PaymentType,
    pub items: Vec<OrderItem>,
    pub subtotal_cents: i64,
    pub discount_cents: i64,
    pub total_cents: i64,
    /// Token figures: `null` for an order paid in USD.
    pub subtotal_tokens: Option<i64>,
    pub discount_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    /// The total in the order's currency: tokens for `tokens`, else cents.
    pub total: i64,
    /// The same as `payment_type`.
    pub currency: PaymentType,
    pub discount_code: Option<String>,
    /// A pending order holds its units until then.
    pub reserved_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl PublicOrder {
    pub fn of(o: &OrderRow, lines: &[LineRow]) -> PublicOrder {
        PublicOrder {
            id: o.id.clone(),
            domain: o.domain.clone(),
            status: o.status,
            payment_type: o.payment_type,
            items: lines.iter().map(OrderItem::from).collect(),
            subtotal_cents: o.subtotal_cents,
            discount_cents: o.discount_cents,
            total_cents: o.total_cents,
            subtotal_tokens: o.subtotal_tokens,
            discount_tokens: o.discount_tokens,
            total_tokens: o.total_tokens,
            total: match o.payment_type {
                PaymentType::Tokens => o.total_tokens.unwrap_or(0),
                _ => o.total_cents,
            },
            currency: o.payment_type,
            discount_code: o.discount_code.clone(),
            reserved_until: o.reserved_until,
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}

/// Where an order's payment is, at the provider.
#[derive(Serialize, JsonSchema)]
pub struct OrderPayment {
    pub provider: Option<String>,
    pub id: Option<String>,
}

/// An order as its buyer and the selling organization's admins see it.
#[derive(Serialize, JsonSchema)]
pub struct Order {
    #[serde(flatten)]
    pub public: PublicOrder,
    #[schemars(extend("format" = "uuid"))]
    pub organization_id: String,
    /// The buyer's account; `null` for a guest.
    pub user_id: Option<String>,
    pub guest: bool,
    /// Free-form details the buyer gave at checkout.
    pub customer_info: Value,
    pub shipping_address: Option<Value>,
    /// Where receipts go.
    pub email: Option<String>,
    pub payment: OrderPayment,
    pub receipts_sent: i64,
    pub receipt_sent_at: Option<DateTime<Utc>>,
}

impl Order {
    pub fn of(o: &OrderRow, lines: &[LineRow]) -> Order {
        Order {
            public: PublicOrder::of(o, lines),
            organization_id: o.organization_id.clone(),
            user_id: o.user_id.clone(),
            guest: o.guest_session_id.is_some(),
            customer_info: o.customer_info.0.clone(),
            shipping_address: o.shipping_address.as_ref().map(|a| a.0.clone()),
            email: o.email.clone(),
            payment: OrderPayment {
                provider: o.provider.clone(),
                id: o.payment_id.clone(),
            },
            receipts_sent: o.receipts_sent,
            receipt_sent_at: o.receipt_sent_at,
        }
    }
}

/// `orders/update`: the order after the call; `changed: false` when it already had the
/// status asked for.
#[derive(Serialize, JsonSchema)]
pub struct OrderUpdated {
    pub success: super::True,
    pub changed: bool,
    pub data: Order,
}

/// `orders/send-receipt` and `orders/resend-receipt`.
#[derive(Serialize, JsonSchema)]
pub struct ReceiptSent {
    pub success: super::True,
    pub sent: bool,
    /// `send-receipt` only: the receipt had been sent before, so it was not sent again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_sent: Option<bool>,
    #[schemars(extend("format" = "uuid"))]
    pub order_id: String,
}

/// `guest/orders/{id}/status`.
#[derive(Serialize, JsonSchema)]
pub struct OrderState {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub status: OrderStatus,
    pub updated_at: DateTime<Utc>,
}

/// A provider payment still to be made for a pending order.
#[derive(Serialize, JsonSchema)]
pub struct PendingPayment {
    pub provider: String,
    pub id: String,
    /// For the provider's client library (Stripe.js) to confirm the payment.
    pub client_secret: Option<String>,
    /// A page where the buyer pays, when plinth hosts it (simulated payments).
    pub url: Option<String>,
}

/// A checkout's answer: the order as written.
#[derive(Serialize, JsonSchema)]
pub struct Placed {
    pub success: super::True,
    #[schemars(extend("format" = "uuid"))]
    pub order_id: String,
    pub status: OrderStatus,
    pub data: Order,
    /// After a token payment: the buyer's balance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balance: Option<i64>,
    /// A USD order not paid yet: where to pay it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment: Option<PendingPayment>,
}

impl From<&crate::domain::checkout::PendingPayment> for PendingPayment {
    fn from(p: &crate::domain::checkout::PendingPayment) -> Self {
        PendingPayment {
            provider: p.provider.clone(),
            id: p.id.clone(),
            client_secret: p.client_secret.clone(),
            url: p.url.clone(),
        }
    }
}

impl From<&crate::domain::checkout::Placed> for Placed {
    fn from(p: &crate::domain::checkout::Placed) -> Self {
        Self {
            success: super::True,
            order_id: p.row.id.clone(),
            status: p.row.status,
            data: Order::of(&p.row, &p.lines),
            balance: p.balance,
            payment: p.payment.as_ref().map(PendingPayment::from),
        }
    }
}

/// A purchase of licenses or download links (both routes take this body), paid at
/// once: a payment method, or tokens.
/// `payment_type` as the document states it: every spelling of `Pay::SPELLINGS`, or
/// absent (the provider).
pub fn payment_type_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names = crate::domain::checkout::Pay::SPELLINGS
        .iter()
        .map(|(name, _)| *name);
    crate::wire::names_schema(names, true)
}

#[derive(serde::Deserialize, Serialize, JsonSchema)]
#[schemars(extend("anyOf" = [{"required": ["payment_method_id"], "properties": {"payment_method_id": {"type": "string"}}}, {"required": ["payment_type"], "properties": {"payment_type": {"enum": ["tokens"]}}}]))]
pub struct PurchaseBody {
    /// What to buy: one key or link per unit.
    #[schemars(length(min = 1))]
    pub items: Vec<ItemLine>,
    /// `tokens` (with an API key) or `usd` (the default).
    #[serde(default)]
    #[schemars(schema_with = "payment_type_schema")]
    pub payment_type: Option<String>,
    /// USD: the payment method (`pm_...`), charged at once.
    #[schemars(regex(pattern = r"^pm_[A-Za-z0-9_]+$"), length(max = 255))]
    pub payment_method_id: Option<String>,
    /// The selling organization, when a sku is sold by several.
    pub domain: Option<String>,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    pub discount_code: Option<String>,
    /// A guest's email for receipts.
    pub email: Option<String>,
    pub customer_info: Option<Value>,
}

impl PurchaseBody {
    /// The fields as the checkout's rules take them.
    pub fn purchase(&self) -> Purchase<'_> {
        Purchase {
            items: &self.items,
            payment_type: self.payment_type.as_deref(),
            payment_method_id: self.payment_method_id.as_deref(),
            domain: self.domain.as_deref(),
            discount_code: self.discount_code.as_deref(),
            email: self.email.as_deref(),
            customer_info: self.customer_info.clone(),
        }
    }
}
