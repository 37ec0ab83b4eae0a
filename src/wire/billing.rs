//! `/api/users/subscriptions*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::True;
use crate::db::payments as rows;

/// A plan and the tier it grants (`fixtures/plans.json`).
#[derive(Serialize, JsonSchema)]
pub struct Plan {
    pub product_id: String,
    pub name: String,
    /// The account level the plan grants.
    pub level: i64,
    pub tier: String,
    pub price_cents: i64,
    pub currency: String,
    pub interval: String,
    pub monthly_credits: i64,
}

impl From<&crate::adapters::payments::Plan> for Plan {
    fn from(p: &crate::adapters::payments::Plan) -> Plan {
        Plan {
            product_id: p.product_id.clone(),
            name: p.name.clone(),
            level: p.level,
            tier: p.tier.clone(),
            price_cents: p.price_cents,
            currency: p.currency.clone(),
            interval: p.interval.clone(),
            monthly_credits: p.monthly_credits,
        }
    }
}

/// `subscribe`: where to send the person to pay.
#[derive(Serialize, JsonSchema)]
pub struct CheckoutSession {
    pub id: String,
    pub url: String,
    /// The same as `id`.
    #[serde(rename = "sessionId")]
    pub session_id: String,
    /// `simulated` or `stripe`.
    pub provider: String,
}

/// A subscription.
#[derive(Serialize, JsonSchema)]
pub struct Subscription {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    pub provider: String,
    pub provider_subscription_id: String,
    pub product_id: String,
    pub level: i64,
    /// The provider's status; `active` and `trialing` grant the plan's level.
    pub status: crate::states::SubscriptionStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<rows::Subscription> for Subscription {
    fn from(s: rows::Subscription) -> Subscription {
        Subscription {
            id: s.id,
            user_id: s.user_id,
            provider: s.provider,
            provider_subscription_id: s.provider_subscription_id,
            product_id: s.product_id,
            level: s.level,
            status: s.status,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// `check`: the active subscription, if any.
#[derive(Serialize, JsonSchema)]
pub struct SubscriptionCheck {
    pub active: bool,
    pub data: Option<Subscription>,
}

/// A payment on record.
#[derive(Serialize, JsonSchema)]
pub struct Invoice {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    pub provider_payment_id: String,
    pub amount_cents: i64,
    pub status: crate::states::PaymentStatus,
    pub created_at: DateTime<Utc>,
}

impl From<rows::Payment> for Invoice {
    fn from(p: rows::Payment) -> Invoice {
        Invoice {
            id: p.id,
            user_id: p.user_id,
            provider_payment_id: p.provider_payment_id,
            amount_cents: p.amount_cents,
            status: p.status,
            created_at: p.created_at,
        }
    }
}

/// `unsubscribe`.
#[derive(Serialize, JsonSchema)]
pub struct Unsubscribed {
    pub success: True,
    /// Subscriptions canceled.
    pub canceled: usize,
    /// The account's level now.
    pub level: i64,
}

/// `users/viewer/generate-add-payment-method-url`: where the person adds or replaces the
/// saved card.
#[derive(Serialize, JsonSchema)]
pub struct PaymentMethodUrl {
    pub url: String,
}

/// `users/viewer/get-current-payment-method`: the saved card as the provider described it
/// (`id`, `brand`, `last4`, `exp_month`, `exp_year` for cards saved through plinth), or
/// `null`.
#[derive(Serialize, JsonSchema)]
pub struct CurrentPaymentMethod {
    pub data: Option<serde_json::Value>,
}

/// `users/viewer/pay-provider-amount-cents`: the payment made.
#[derive(Serialize, JsonSchema)]
pub struct Charged {
    pub success: True,
    pub data: Invoice,
}

/// The subscription an agent account starts with.
#[derive(Serialize, JsonSchema)]
pub struct AgentSubscription {
    /// The provider's subscription id.
    pub id: String,
    pub product_id: String,
    pub level: i64,
}

/// `users/authenticate-agent`: the new account, its key and its subscription.
#[derive(Serialize, JsonSchema)]
pub struct AgentAccount {
    #[serde(rename = "apiKey")]
    pub api_key: String,
    pub user: super::users::User,
    pub subscription: AgentSubscription,
}

/// `webhooks/stripe`: the event was received (and, unless it was a duplicate, handled).
#[derive(Serialize, JsonSchema)]
pub struct WebhookReceived {
    pub received: True,
    /// The event id was seen before; nothing was done again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<True>,
    /// Whether plinth acts on this event type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handled: Option<bool>,
    /// The event's type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}
