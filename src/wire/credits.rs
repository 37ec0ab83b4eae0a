//! `/api/credits*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::credits as rows;

/// A ledger entry of the caller's account.
#[derive(Serialize, JsonSchema)]
pub struct Transaction {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub account_id: String,
    /// What moved the tokens.
    pub kind: crate::states::LedgerKind,
    /// Tokens, negative when they left the account.
    pub amount: i64,
    pub balance_after: i64,
    /// A JSON object: what the entry is about.
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

impl From<rows::TransactionRow> for Transaction {
    fn from(t: rows::TransactionRow) -> Transaction {
        Transaction {
            id: t.id,
            account_id: t.account_id,
            kind: t.kind,
            amount: t.amount,
            balance_after: t.balance_after,
            data: t.data.0,
            created_at: t.created_at,
        }
    }
}

/// `GET /api/credits`: the caller's ledger, newest first.
#[derive(Serialize, JsonSchema)]
pub struct History {
    pub data: Vec<Transaction>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// `check`.
#[derive(Serialize, JsonSchema)]
pub struct AccountCheck {
    /// The account exists and is the caller's (any account, for an administrator).
    pub valid: bool,
    pub account_id: String,
    /// The owner, when valid.
    pub user_id: Option<String>,
}

/// A credit account.
#[derive(Serialize, JsonSchema)]
pub struct Account {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    pub balance: i64,
    pub created_at: DateTime<Utc>,
}

/// `create-account-by-user-id`.
#[derive(Serialize, JsonSchema)]
pub struct AccountCreated {
    pub success: True,
    /// False when the account already existed.
    pub created: bool,
    pub data: Account,
}

/// `deduct`.
#[derive(Serialize, JsonSchema)]
pub struct Deducted {
    pub success: True,
    pub deducted: i64,
    pub balance: Option<i64>,
    pub transaction_id: Option<String>,
}

/// `distribute-bonus`.
#[derive(Serialize, JsonSchema)]
pub struct BonusDistributed {
    pub success: True,
    pub bonus: String,
    /// Tokens credited by this call (0 on a repeat).
    pub amount: i64,
    pub already_distributed: bool,
    pub balance: i64,
}

/// `distribute-to-user-id`.
#[derive(Serialize, JsonSchema)]
pub struct MonthlyDistributed {
    pub success: True,
    /// Tokens credited by this call (0 on a repeat within the month).
    pub amount: i64,
    pub already_distributed: bool,
    /// `YYYY-MM`.
    pub month: String,
    pub balance: i64,
}

/// `get-balance-by-email`.
#[derive(Serialize, JsonSchema)]
pub struct BalanceByEmail {
    pub balance: i64,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    #[schemars(extend("format" = "email"))]
    pub email: String,
}

/// `get-balance-by-user-id`.
#[derive(Serialize, JsonSchema)]
pub struct BalanceByUser {
    pub balance: i64,
    pub user_id: String,
}

/// `send`.
#[derive(Serialize, JsonSchema)]
pub struct Sent {
    pub success: True,
    pub amount: i64,
    #[schemars(extend("format" = "uuid"))]
    pub recipient_id: String,
    /// The sender's balance after.
    pub balance: Option<i64>,
    pub transaction_id: Option<String>,
}

/// `vendor-distribution-to-email`.
#[derive(Serialize, JsonSchema)]
pub struct VendorDistributed {
    pub success: True,
    /// Tokens credited by this call (0 when the reference was already paid).
    pub tokens: i64,
    pub already_distributed: bool,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    pub balance: i64,
}

/// `verify-apple-transaction-distritbution`.
#[derive(Serialize, JsonSchema)]
pub struct StoreCredited {
    pub success: True,
    /// True when this account was already credited for the transaction.
    pub already_distributed: bool,
    /// The product bought (absent on a repeat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_id: Option<String>,
    /// Tokens credited by this call.
    pub tokens: i64,
    pub balance: i64,
}

/// A route's price and rate window, as `credits/pricing` lists it.
#[derive(Serialize, JsonSchema)]
pub struct RoutePrice {
    pub method: &'static str,
    pub path: &'static str,
    /// Tokens a call costs (after the operator's overrides).
    pub cost: u64,
    /// The rate category whose window the route counts in.
    pub category: &'static str,
    /// Calls per window at level 0 before the tier's multiplier; `null`: no limit.
    pub limit: Option<u64>,
    pub interval_ms: u64,
    pub access: &'static str,
    pub implemented: bool,
}

/// A rate category's window.
#[derive(Serialize, JsonSchema)]
pub struct Window {
    pub limit: Option<u64>,
    pub interval_ms: u64,
}

/// An account level's monthly credits and rate multiplier.
#[derive(Serialize, JsonSchema)]
pub struct Tier {
    pub level: i64,
    pub name: &'static str,
    pub monthly_credits: i64,
    /// `null`: no rate limit.
    pub rate_multiplier: Option<u64>,
}

/// `credits/pricing`.
#[derive(Serialize, JsonSchema)]
pub struct Pricing {
    pub data: Vec<RoutePrice>,
    /// Each category's window, by name.
    pub categories: std::collections::BTreeMap<&'static str, Window>,
    pub tiers: Vec<Tier>,
    /// The operator's multiplier on every limit (`PLINTH_RATE_LIMIT_MULTIPLIER`).
    pub rate_limit_multiplier: f64,
}
