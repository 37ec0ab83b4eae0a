//! `/api/marketplace*` answers: carts, guest sessions, discount codes (orders and
//! checkouts are answered by `domain::orders` and `domain::checkout` for now).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use crate::db::marketplace::{CartLine, Discount as DiscountRow};
use crate::states::DiscountKind;

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
