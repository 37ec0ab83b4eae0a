//! Inventory: `/api/inventory*`. Items of an organization with units; `available_count`
//! on every item view, `units` on the detail. Private items are for members of the
//! organization (anyone else gets a 404). Items and units are removed softly, each
//! removal written to the inventory ledger. `claim` gives one free unit (docs/api.md).

use crate::http::request::{Limit, Offset};
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::db::inventory::{self as store, Claim, ItemChange, ItemRow, NewItem, UnitRow};
use crate::db::organizations::OrgRow;
use crate::domain::downloads::DownloadAsset;
use crate::domain::records;
use crate::http::auth::{Caller, MaybeCaller, OrgAdmin, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::states::UnitStatus;
use crate::wire::inventory::{Claimed, Item, ItemDetail, Unit, UnitsAdded};
use crate::wire::{Data, Deleted, Page, Saved, True};

/// Units one request may add.
const MAX_UNITS: usize = 10_000;
/// Matches a search filters in memory at most (the JSON-field filters apply to these).
const SEARCH_CAP: i64 = 2_000;

fn not_found() -> ApiError {
    ApiError::not_found("inventory item not found")
}

/// Whether the caller holds the unit (sees it whole).
fn holds(caller: Option<&Caller>, u: &UnitRow) -> bool {
    caller.is_some_and(|c| u.holder_id.as_deref() == Some(c.id.as_str()))
}

/// Whether the caller sees the organization's private items.
async fn member(app: &AppState, caller: Option<&Caller>, org_id: &str) -> ApiResult<bool> {
    match caller {
        Some(c) => Ok(app.domain.orgs.in_org(c, org_id).await?),
        None => Ok(false),
    }
}

async fn org(app: &AppState, domain: &str) -> ApiResult<OrgRow> {
    crate::db::organizations::by_domain(&app.db, domain)
        .await?
        .ok_or_else(|| ApiError::not_found("organization not found"))
}

/// The item if the caller may see it (and, when `domain` is given, it is that
/// organization's).
async fn visible(
    app: &AppState,
    caller: Option<&Caller>,
    id: &str,
    domain: Option<&str>,
) -> ApiResult<ItemRow> {
    let item = store::get(&app.db, id).await?.ok_or_else(not_found)?;
    if domain.is_some_and(|d| !d.trim().eq_ignore_ascii_case(&item.domain)) {
        return Err(not_found());
    }
    if item.private && !member(app, caller, &item.organization_id).await? {
        return Err(not_found());
    }
    Ok(item)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// The organization's domain.
    domain: String,
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/inventory?domain=` (Public; private items for members).
pub async fn list(
    State(app): State<AppState>,
    caller: MaybeCaller,
    Query(q): Query<ListQuery>,
) -> ApiResult<Answer<Page<Item>>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let org = org(&app, &q.domain).await?;
    let with_private = member(&app, caller.0.as_deref(), &org.id).await?;
    let (rows, total) = store::list(&app.db, &org.id, with_private, limit, offset).await?;
    let data = rows.iter().map(|i| Item::of(i, with_private)).collect();
    Ok(Answer(Page::new(data, total, limit, offset)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ItemQuery {
    /// The organization's domain (optional; an item of another organization is a 404).
    domain: Option<String>,
}

/// `GET /api/inventory/{id}` (Public; private items for members): the item with its
/// live units.
pub async fn get(
    State(app): State<AppState>,
    caller: MaybeCaller,
    Path(id): Path<String>,
    Query(q): Query<ItemQuery>,
) -> ApiResult<Answer<Data<ItemDetail>>> {
    let caller = caller.0.as_deref();
    let item = visible(&app, caller, &id, q.domain.as_deref()).await?;
    let in_org = member(&app, caller, &item.organization_id).await?;
    let units = store::units(&app.db, &item.id)
        .await?
        .iter()
        .map(|u| Unit::of(u, in_org || holds(caller, u)))
        .collect();
    Ok(Answer(Data {
        data: ItemDetail {
            item: Item::of(&item, in_org),
            units,
        },
    }))
}

#[derive(Deserialize, schemars::JsonSchema, Default)]
pub struct SearchText {
    /// Every word must match the sku, slug, or `data.title`/`name`/`description` (each
    /// word also as a prefix).
    keywords: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema, Default)]
pub struct PriceRange {
    /// Lowest `price_cents`, inclusive.
    min: Option<i64>,
    /// Highest `price_cents`, inclusive.
    max: Option<i64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchBody {
    domain: String,
    #[serde(default)]
    search: SearchText,
    /// `data` fields that must equal these values (`{"condition": "new", "color": "red"}`).
    #[serde(default)]
    filters: Map<String, Value>,
    #[serde(default, rename = "priceRange")]
    price_range: PriceRange,
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `POST /api/inventory/search` (Public; private items for members): keywords through
/// the full-text index, a price range, and `data` field filters; best match first (newest
/// first without keywords).
pub async fn search(
    State(app): State<AppState>,
    caller: MaybeCaller,
    JsonBody(body): JsonBody<SearchBody>,
) -> ApiResult<Answer<Page<Item>>> {
    let (limit, offset) = (body.limit.get(), body.offset.get());
    let org = org(&app, &body.domain).await?;
    let with_private = member(&app, caller.0.as_deref(), &org.id).await?;
    let words = body
        .search
        .keywords
        .as_deref()
        .map(crate::domain::validate::keywords)
        .unwrap_or_default();
    let (min, max) = (body.price_range.min, body.price_range.max);
    if min.is_some_and(|m| m < 0) || matches!((min, max), (Some(a), Some(b)) if a > b) {
        return Err(ApiError::bad_request(
            "`priceRange` needs 0 <= min <= max (cents)",
        ));
    }
    let rows = store::search(&app.db, &org.id, with_private, &words, min, max, SEARCH_CAP).await?;
    let matching: Vec<&ItemRow> = rows
        .iter()
        .filter(|i| body.filters.iter().all(|(k, v)| i.data.0.get(k) == Some(v)))
        .collect();
    let total = matching.len() as i64;
    let data = matching
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .map(|i| Item::of(i, with_private))
        .collect();
    Ok(Answer(Page::new(data, total, limit, offset)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ClaimBody {
    sku: String,
    /// The item's organization.
    domain: String,
}

/// `POST /api/inventory/claim` (V10, tier >= the item's `min_tier`): one free unit per
/// account and item. 403 names `required_tier`; 409 when none is left or the caller
/// already has one.
pub async fn claim(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<ClaimBody>,
) -> ApiResult<Answer<Claimed>> {
    let org = org(&app, &body.domain).await?;
    let item = store::by_sku(&app.db, &org.id, body.sku.trim())
        .await?
        .ok_or_else(not_found)?;
    if item.private && !member(&app, Some(&caller), &item.organization_id).await? {
        return Err(not_found());
    }
    if item.min_tier.is_none() && (item.price_cents > 0 || item.price_tokens.is_some_and(|p| p > 0))
    {
        return Err(ApiError::forbidden(
            "this item is for sale: `claim` gives units only of free items (no positive \
             `price_cents` or `price_tokens`) or of items that set `min_tier`",
        ));
    }
    if let Some(tier) = item.min_tier {
        if caller.user.level < tier {
            return Err(ApiError::forbidden(format!(
                "this item needs tier {tier}; yours is {}",
                caller.user.level
            ))
            .with("required_tier", tier)
            .with("tier", caller.user.level));
        }
    }
    if store::has_claimed(&app.db, &item.id, &caller.id).await? {
        return Err(already_claimed());
    }
    let unit = match store::claim(&app.db, &item.id, &caller.id).await? {
        Claim::Taken(unit) => unit,
        Claim::NoneLeft => {
            return Err(
                ApiError::conflict("no unit of this item is left").with("available_count", 0)
            )
        }
        Claim::AlreadyHeld => return Err(already_claimed()),
    };
    let item = store::get(&app.db, &item.id).await?.ok_or_else(not_found)?;
    let in_org = member(&app, Some(&caller), &item.organization_id).await?;
    Ok(Answer(Claimed {
        success: True,
        unit: Unit::of(&unit, true),
        data: Item::of(&item, in_org),
    }))
}

fn already_claimed() -> ApiError {
    ApiError::conflict("you already claimed a unit of this item")
}

/// Units of a create or `units/add`: `count` empty units or `units` of `{data}`.
fn unit_datas(
    count: Option<i64>,
    units: Option<Vec<UnitIn>>,
    field: &str,
) -> ApiResult<Vec<Value>> {
    let datas: Vec<Value> = match (count, units) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(format!(
                "send `{field}` or `units`, not both"
            )))
        }
        (Some(n), None) if (0..=MAX_UNITS as i64).contains(&n) => {
            vec![json!({}); n as usize]
        }
        (Some(_), None) => {
            return Err(ApiError::bad_request(format!(
                "`{field}` must be 0 to {MAX_UNITS}"
            )))
        }
        (None, Some(u)) if u.len() <= MAX_UNITS => u
            .into_iter()
            .map(|u| Value::Object(u.data.unwrap_or_default()))
            .collect(),
        (None, Some(_)) => {
            return Err(ApiError::bad_request(format!(
                "at most {MAX_UNITS} `units` per request"
            )))
        }
        (None, None) => Vec::new(),
    };
    for d in &datas {
        records::check_data(d)?;
    }
    Ok(datas)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UnitIn {
    /// Serial, rarity, coordinates, a license key or any metadata.
    data: Option<Map<String, Value>>,
}

fn price(field: &str, v: i64) -> ApiResult<i64> {
    if !(0..=1_000_000_000_000).contains(&v) {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be an integer from 0"
        )));
    }
    Ok(v)
}

fn tier(v: i64) -> ApiResult<i64> {
    if !(0..=100).contains(&v) {
        return Err(ApiError::bad_request("`min_tier` must be 0 to 100 or null"));
    }
    Ok(v)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// Unique in the organization: 1 to 100 characters.
    sku: String,
    /// Unique in the organization (the post slug rule).
    slug: String,
    price_cents: i64,
    /// `null`: USD only.
    price_tokens: Option<i64>,
    /// `null`: no tier gate on `claim`.
    min_tier: Option<i64>,
    #[serde(default)]
    private: bool,
    data: Option<Map<String, Value>>,
    /// That many units with empty `data`...
    unit_count: Option<i64>,
    /// ...or these units.
    units: Option<Vec<UnitIn>>,
}

/// `POST /api/inventory/create` (OrgAdmin): 409 when the sku or slug is taken.
pub async fn create(
    State(app): State<AppState>,
    g: OrgAdmin<CreateBody>,
) -> ApiResult<Answer<Saved<Item>>> {
    let b = g.body;
    let sku = b.sku.trim();
    if sku.is_empty() || sku.chars().count() > 100 {
        return Err(ApiError::bad_request("`sku` must be 1 to 100 characters"));
    }
    let slug = crate::domain::posts::slug(&b.slug)?;
    let data = Value::Object(b.data.unwrap_or_default());
    records::check_data(&data)?;
    DownloadAsset::of(&g.org.id, &data)?;
    let units = unit_datas(b.unit_count, b.units, "unit_count")?;
    let id = store::create(
        &app.db,
        &NewItem {
            org_id: &g.org.id,
            sku,
            slug: &slug,
            price_cents: price("price_cents", b.price_cents)?,
            price_tokens: b
                .price_tokens
                .map(|p| price("price_tokens", p))
                .transpose()?,
            min_tier: b.min_tier.map(tier).transpose()?,
            private: b.private,
            data: &data,
        },
        &units,
    )
    .await?;
    let item = store::get(&app.db, &id).await?.ok_or_else(not_found)?;
    Ok(Answer(Saved::new(Item::of(&item, true))))
}

/// The item if the caller administers its organization (or the platform); 404 otherwise.
async fn administered(app: &AppState, caller: &Caller, id: &str) -> ApiResult<ItemRow> {
    let item = store::get(&app.db, id).await?.ok_or_else(not_found)?;
    if caller.is_admin()
        || crate::db::organizations::role_of(&app.db, &item.organization_id, &caller.id).await?
            == Some(crate::states::OrgRole::Admin)
    {
        Ok(item)
    } else {
        Err(not_found())
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    price_cents: Option<i64>,
    /// `null` makes the item USD only; omitted, no change.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schemars(with = "Option<i64>")]
    price_tokens: Option<Option<i64>>,
    /// `null` removes the tier gate; omitted, no change.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schemars(with = "Option<i64>")]
    min_tier: Option<Option<i64>>,
    private: Option<bool>,
    /// Merged: top-level keys replace, `null` removes.
    data: Option<Map<String, Value>>,
}

/// `POST /api/inventory/update` (OrgAdmin of the item's organization): the mutable
/// fields only; anything else in the body is ignored.
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<UpdateBody>,
) -> ApiResult<Answer<Saved<Item>>> {
    let mut item = administered(&app, &caller, &b.id).await?;
    let price_cents = b.price_cents.map(|p| price("price_cents", p)).transpose()?;
    let price_tokens = match b.price_tokens {
        Some(Some(p)) => Some(Some(price("price_tokens", p)?)),
        other => other,
    };
    let min_tier = match b.min_tier {
        Some(Some(t)) => Some(Some(tier(t)?)),
        other => other,
    };
    for _ in 0..records::WRITE_TRIES {
        let data = match &b.data {
            Some(changes) => records::merge(&item.data.0, changes)?,
            None => item.data.0.clone(),
        };
        DownloadAsset::of(&item.organization_id, &data)?;
        let change = ItemChange {
            price_cents: price_cents.unwrap_or(item.price_cents),
            price_tokens: price_tokens.unwrap_or(item.price_tokens),
            min_tier: min_tier.unwrap_or(item.min_tier),
            private: b.private.unwrap_or(item.private),
            data: &data,
        };
        let written = store::update(&app.db, &item.id, item.version, &change).await?;
        item = store::get(&app.db, &item.id).await?.ok_or_else(not_found)?;
        if written {
            return Ok(Answer(Saved::new(Item::of(&item, true))));
        }
    }
    Err(records::RecordError::Busy.into())
}

/// `POST /api/inventory/delete` (OrgAdmin of the item's organization): the item and its
/// units, softly, each removal in the ledger.
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Deleted>> {
    let item = administered(&app, &caller, &body.id).await?;
    if !store::remove(&app.db, &item.id, &caller.id).await? {
        return Err(not_found());
    }
    Ok(Answer(Deleted::new(item.id)))
}

/// The organization's item `id` (404 for another organization's).
async fn item_of(app: &AppState, org: &OrgRow, id: &str) -> ApiResult<ItemRow> {
    store::get(&app.db, id)
        .await?
        .filter(|i| i.organization_id == org.id)
        .ok_or_else(not_found)
}

/// The organization's unit `id`.
async fn unit_of(app: &AppState, org: &OrgRow, id: &str) -> ApiResult<UnitRow> {
    let unit = store::unit(&app.db, id)
        .await?
        .ok_or_else(|| ApiError::not_found("unit not found"))?;
    item_of(app, org, &unit.item_id)
        .await
        .map_err(|_| ApiError::not_found("unit not found"))?;
    Ok(unit)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UnitsAdd {
    inventory_item_id: String,
    /// That many units with empty `data`...
    count: Option<i64>,
    /// ...or these units.
    units: Option<Vec<UnitIn>>,
}

/// `POST /api/inventory/units/add` (OrgAdmin).
pub async fn units_add(
    State(app): State<AppState>,
    g: OrgAdmin<UnitsAdd>,
) -> ApiResult<Answer<UnitsAdded>> {
    let item = item_of(&app, &g.org, &g.body.inventory_item_id).await?;
    let datas = unit_datas(g.body.count, g.body.units, "count")?;
    if datas.is_empty() {
        return Err(ApiError::bad_request("send `count` (1 or more) or `units`"));
    }
    let ids = store::add_units(&app.db, &item.id, &datas).await?;
    let item = store::get(&app.db, &item.id).await?.ok_or_else(not_found)?;
    Ok(Answer(UnitsAdded {
        success: True,
        added: ids.len(),
        unit_ids: ids,
        data: Item::of(&item, true),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UnitUpdate {
    id: String,
    /// Merged into the unit's data.
    data: Option<Map<String, Value>>,
    /// Only these two are set by hand; `claimed`, `sold` and `reserved` come from claims
    /// and orders.
    status: Option<ManualStatus>,
}

/// The statuses a unit may be given by hand.
#[derive(Deserialize, schemars::JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum ManualStatus {
    Available,
    Unavailable,
}

/// `POST /api/inventory/units/update` (OrgAdmin): merges `data` and/or sets `status`.
pub async fn units_update(
    State(app): State<AppState>,
    g: OrgAdmin<UnitUpdate>,
) -> ApiResult<Answer<Saved<Unit>>> {
    let unit = unit_of(&app, &g.org, &g.body.id).await?;
    let status = match g.body.status {
        None => unit.status,
        Some(_) if matches!(unit.status, UnitStatus::Claimed | UnitStatus::Sold) => {
            return Err(ApiError::conflict(format!(
                "the unit is {}; its status no longer changes by hand",
                unit.status
            )));
        }
        Some(ManualStatus::Available) => UnitStatus::Available,
        Some(ManualStatus::Unavailable) => UnitStatus::Unavailable,
    };
    let data = match &g.body.data {
        Some(changes) => records::merge(&unit.data.0, changes)?,
        None => unit.data.0.clone(),
    };
    let unit = store::update_unit(&app.db, &unit.id, &data, status)
        .await?
        .ok_or_else(|| ApiError::not_found("unit not found"))?;
    Ok(Answer(Saved::new(Unit::of(&unit, true))))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UnitRemove {
    id: String,
}

/// `POST /api/inventory/units/remove` (OrgAdmin): a soft delete, in the ledger.
pub async fn units_remove(
    State(app): State<AppState>,
    g: OrgAdmin<UnitRemove>,
) -> ApiResult<Answer<Deleted>> {
    let unit = unit_of(&app, &g.org, &g.body.id).await?;
    if !store::remove_unit(&app.db, &unit, &g.caller.id).await? {
        return Err(ApiError::not_found("unit not found"));
    }
    Ok(Answer(Deleted::new(unit.id)))
}
