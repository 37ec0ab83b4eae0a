//! `/api/inventory*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::inventory::{ItemRow, UnitRow};
use crate::states::UnitStatus;

/// An item. Outside its organization `data` comes without `download_asset` (where the
/// seller's file lives).
#[derive(Serialize, JsonSchema)]
pub struct Item {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub organization_id: String,
    pub domain: String,
    pub sku: String,
    pub slug: String,
    pub price_cents: i64,
    /// `null`: USD only.
    pub price_tokens: Option<i64>,
    /// `null`: no tier gate on `claim`.
    pub min_tier: Option<i64>,
    /// Hidden from non-members.
    pub private: bool,
    pub data: Value,
    /// Units that can be sold or claimed now.
    pub available_count: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Item {
    /// `member`: the caller belongs to the item's organization.
    pub fn of(i: &ItemRow, member: bool) -> Item {
        let mut data = i.data.0.clone();
        if !member {
            if let Some(d) = data.as_object_mut() {
                d.remove("download_asset");
            }
        }
        Item {
            id: i.id.clone(),
            organization_id: i.organization_id.clone(),
            domain: i.domain.clone(),
            sku: i.sku.clone(),
            slug: i.slug.clone(),
            price_cents: i.price_cents,
            price_tokens: i.price_tokens,
            min_tier: i.min_tier,
            private: i.private,
            data,
            available_count: i.available_count,
            created_at: i.created_at,
            updated_at: i.updated_at,
        }
    }
}

/// A unit. Its `data` (serials, keys) and `holder_id` are shown only to the
/// organization's members and to the unit's holder.
#[derive(Serialize, JsonSchema)]
pub struct Unit {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub item_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    pub status: UnitStatus,
    /// Who claimed or bought it (absent for outsiders; `null` when nobody holds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder_id: Option<Option<String>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Unit {
    /// `whole`: the caller is a member or the unit's holder.
    pub fn of(u: &UnitRow, whole: bool) -> Unit {
        Unit {
            id: u.id.clone(),
            item_id: u.item_id.clone(),
            data: whole.then(|| u.data.0.clone()),
            status: u.status,
            holder_id: whole.then(|| u.holder_id.clone()),
            created_at: u.created_at,
            updated_at: u.updated_at,
        }
    }
}

/// The detail: the item with its live units.
#[derive(Serialize, JsonSchema)]
pub struct ItemDetail {
    #[serde(flatten)]
    pub item: Item,
    pub units: Vec<Unit>,
}

/// `claim`.
#[derive(Serialize, JsonSchema)]
pub struct Claimed {
    pub success: True,
    /// The caller's unit, whole.
    pub unit: Unit,
    pub data: Item,
}

/// `units/add`.
#[derive(Serialize, JsonSchema)]
pub struct UnitsAdded {
    pub success: True,
    pub added: usize,
    pub unit_ids: Vec<String>,
    pub data: Item,
}
