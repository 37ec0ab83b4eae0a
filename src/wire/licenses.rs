//! `/api/licenses*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::licenses::LicenseRow;
use crate::states::LicenseStatus;

/// A license as its owner and its organization's admins see it.
#[derive(Serialize, JsonSchema)]
pub struct License {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    /// The issuing organization's domain.
    pub domain: String,
    #[schemars(extend("format" = "uuid"))]
    pub organization_id: String,
    /// The licensed item, if it was minted for one.
    pub inventory_item_id: Option<String>,
    /// The order it was minted by (a zero-cost `admin_grant` order for `create`).
    pub order_id: Option<String>,
    /// Its owner; `null` for a guest's purchase or a grant without a recipient.
    pub user_id: Option<String>,
    pub status: LicenseStatus,
    /// The item's `data.license_product_id`.
    pub product_id: Option<String>,
    /// How many machines may activate it; `null`: no limit.
    pub activations_allowed: Option<i64>,
    pub activations_current: i64,
    pub expires_at: Option<DateTime<Utc>>,
    /// `revoked_by`, `revoke_reason`, `replaced_by_id`.
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The activated machines (on the detail and at mint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_ids: Option<Vec<String>>,
    /// The plaintext key (on the detail and at mint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl License {
    pub fn of(l: &LicenseRow, machine_ids: Option<Vec<String>>, key: Option<String>) -> License {
        License {
            id: l.id.clone(),
            domain: l.domain.clone(),
            organization_id: l.organization_id.clone(),
            inventory_item_id: l.item_id.clone(),
            order_id: l.order_id.clone(),
            user_id: l.user_id.clone(),
            status: crate::domain::licenses::status(l.status, l.expires_at),
            product_id: l.product_id.clone(),
            activations_allowed: l.activations_allowed,
            activations_current: l.activations_current,
            expires_at: l.expires_at,
            data: l.data.0.clone(),
            created_at: l.created_at,
            updated_at: l.updated_at,
            machine_ids,
            key,
        }
    }
}

/// `create`: the minted keys, in this answer only.
#[derive(Serialize, JsonSchema)]
pub struct Minted {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub order_id: String,
    pub count: usize,
    pub data: Vec<License>,
}

/// `validate`: `{valid: false}` alone for an unknown, revoked or refunded key.
#[derive(Serialize, JsonSchema)]
pub struct Validation {
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<ValidationCode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<Validated>,
}

crate::text_enum! {
    /// What a validation found.
    pub enum ValidationCode {
        /// This machine just took an activation.
        Activated = "valid_activated",
        KnownMachine = "valid_known_machine",
        ActivationLimit = "activation_limit",
        Expired = "expired",
    }
}

/// The license a validation found.
#[derive(Serialize, JsonSchema)]
pub struct Validated {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub product_id: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub activations_allowed: Option<i64>,
    pub activations_current: i64,
}

/// `revoke`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "LicenseRevoked")]
pub struct Revoked {
    pub success: True,
    /// A second revoke changes nothing.
    pub already_revoked: bool,
    pub data: License,
}

/// `regenerate`: the new license with its key.
#[derive(Serialize, JsonSchema)]
pub struct Regenerated {
    pub success: True,
    /// The license it replaces (now revoked, `data.replaced_by_id` naming the new one).
    #[schemars(extend("format" = "uuid"))]
    pub replaced_id: String,
    pub data: License,
}

/// `licenses/purchase`: the checkout's answer and one key per unit bought, in plaintext
/// this once.
#[derive(Serialize, JsonSchema)]
pub struct LicensesPurchased {
    #[serde(flatten)]
    pub checkout: super::marketplace::Placed,
    pub licenses: Vec<License>,
}
