//! Licenses: `/api/licenses*` (docs/api.md). Keys are minted here and shown in plain
//! text only at mint and on the owner's or the organization admins' detail; everyone
//! else gets a uniform 404. Validation answers unknown, revoked and refunded keys with
//! exactly `{valid: false}`. Purchases go through `domain::checkout` and mint one key per
//! unit once the order is paid.

use crate::http::request::{Limit, Offset};
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::json;

use crate::db::licenses::{self as store, Activation, Grant, LicenseRow, NewLicense, Of};
use crate::domain::checkout::run_to_end;
use crate::domain::licenses::{new_key, normalize, status, terms, Terms};
use crate::domain::Invalid;
use crate::http::auth::{Caller, OrgAdmin, Purchaser, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdempotencyKey, JsonBody};
use crate::http::reply::{Answer, PrivateAnswer, Recorded};
use crate::state::AppState;
use crate::states::LicenseStatus;
use crate::wire::licenses::{
    License, LicensesPurchased, Minted, Regenerated, Revoked, Validated, Validation, ValidationCode,
};
use crate::wire::marketplace::PurchaseBody;
use crate::wire::{Data, Page, True};

/// Most keys one `create` mints (the spec's bulk limit).
const MAX_GRANT: i64 = 100;

/// `n` fresh keys and their stored forms.
fn mint(app: &AppState, n: i64) -> (Vec<String>, Vec<NewLicense>) {
    let prefix = app.opts.accounts.license_prefix.to_ascii_uppercase();
    (0..n)
        .map(|_| {
            let key = new_key(&prefix, crate::crypto::random_bytes::<12>());
            let new = NewLicense {
                id: uuid::Uuid::new_v4().to_string(),
                key_hash: crate::crypto::sha256_hex(key.as_bytes()),
                key_cipher: app.key.encrypt(key.as_bytes()),
            };
            (key, new)
        })
        .unzip()
}

/// The licenses of an order as their minting answer shows them: with the plaintext keys
/// just made (`keys` by license id; rows minted earlier for the order have none).
async fn minted(
    app: &AppState,
    order_id: &str,
    keys: &std::collections::HashMap<String, String>,
) -> ApiResult<Vec<License>> {
    Ok(store::by_order(&app.db, order_id)
        .await?
        .iter()
        .filter_map(|l| {
            keys.get(&l.id)
                .map(|k| License::of(l, Some(Vec::new()), Some(k.clone())))
        })
        .collect())
}

fn not_found() -> ApiError {
    ApiError::not_found("license not found")
}

/// A license the caller may manage: they administer its organization now. Having issued
/// it gives no rights of its own (security round 2, M7: a removed admin could still
/// regenerate the keys they had issued); only organization admins issue licenses.
async fn managed(app: &AppState, caller: &Caller, id: &str) -> ApiResult<LicenseRow> {
    let l = store::get(&app.db, id).await?.ok_or_else(not_found)?;
    if app
        .domain
        .orgs
        .org_admin(caller, &l.organization_id)
        .await?
    {
        return Ok(l);
    }
    Err(not_found())
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// How many keys, 1 to 100 (default 1).
    count: Option<i64>,
    /// Who owns them (a user id); without it `user_id` is null.
    recipient_user_id: Option<String>,
    /// The licensed item (its `data.license_product_id`, `license_activations_allowed`
    /// and `license_duration_seconds` apply); without it, no limits.
    sku: Option<String>,
}

/// `POST /api/licenses/create` (OrgAdmin): mints keys without payment, recorded against
/// a zero-cost `admin_grant` order; the plaintext keys are in this answer only.
pub async fn create(
    State(app): State<AppState>,
    g: OrgAdmin<CreateBody>,
) -> ApiResult<Answer<Minted>> {
    let count = g.body.count.unwrap_or(1);
    if !(1..=MAX_GRANT).contains(&count) {
        return Err(ApiError::bad_request(format!(
            "`count` must be 1 to {MAX_GRANT}"
        )));
    }
    if let Some(r) = &g.body.recipient_user_id {
        crate::db::users::by_id(&app.db, r)
            .await?
            .ok_or_else(|| ApiError::not_found("no user with `recipient_user_id`"))?;
    }
    let item = match &g.body.sku {
        Some(sku) => Some(
            crate::db::inventory::by_sku(&app.db, &g.org.id, sku.trim())
                .await?
                .ok_or_else(|| ApiError::not_found("the organization has no item with this sku"))?,
        ),
        None => None,
    };
    let terms = item.as_ref().map(|i| terms(&i.data.0)).transpose()?;
    let Terms {
        product_id,
        activations_allowed: allowed,
        duration_seconds: duration,
    } = terms.unwrap_or_default();
    let (keys, news) = mint(&app, count);
    let grant = Grant {
        org_id: &g.org.id,
        item_id: item.as_ref().map(|i| i.id.as_str()),
        user_id: g.body.recipient_user_id.as_deref(),
        issuer_id: Some(&g.caller.id),
        product_id: product_id.as_deref(),
        activations_allowed: allowed,
        expires_at: duration.map(|s| chrono::Utc::now() + chrono::TimeDelta::seconds(s)),
    };
    let order_id = store::grant(&app.db, &grant, &news).await?;
    let by_id = news.iter().map(|n| n.id.clone()).zip(keys).collect();
    let data = minted(&app, &order_id, &by_id).await?;
    Ok(Answer(Minted {
        success: True,
        order_id,
        count: data.len(),
        data,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ValidateBody {
    /// The license key (case-insensitive).
    key: String,
    /// The machine's identifier (1 to 255 characters), activated on first use.
    #[serde(alias = "machine_id", alias = "fingerprint")]
    #[schemars(length(min = 1, max = 255))]
    machine: String,
}

/// `POST /api/licenses/validate` (Public): `{valid: false}` and nothing else for an
/// unknown, revoked or refunded key; otherwise `{valid, code, license}` with `code`
/// `valid_activated` (this machine just took an activation), `valid_known_machine`,
/// `activation_limit` or `expired`.
pub async fn validate(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<ValidateBody>,
) -> ApiResult<Answer<Validation>> {
    let machine = body.machine.trim();
    if machine.is_empty() || machine.len() > 255 {
        return Err(ApiError::bad_request(
            "`machine` must be 1 to 255 characters",
        ));
    }
    let hash = crate::crypto::sha256_hex(normalize(&body.key).as_bytes());
    let invalid = Validation {
        valid: false,
        code: None,
        license: None,
    };
    let Some(l) = store::lookup(&app.db, &hash, machine).await? else {
        return Ok(Answer(invalid));
    };
    if l.status != LicenseStatus::Active || l.refunded {
        return Ok(Answer(invalid));
    }
    let mut current = l.activations_current;
    let code = if status(l.status, l.expires_at) == LicenseStatus::Expired {
        ValidationCode::Expired
    } else if l.known {
        ValidationCode::KnownMachine
    } else {
        match store::activate(&app.db, &l.id, machine).await? {
            Activation::Activated(n) => {
                current = n;
                ValidationCode::Activated
            }
            Activation::Known => ValidationCode::KnownMachine,
            Activation::Limit => ValidationCode::ActivationLimit,
        }
    };
    Ok(Answer(Validation {
        valid: matches!(
            code,
            ValidationCode::Activated | ValidationCode::KnownMachine
        ),
        code: Some(code),
        license: Some(Validated {
            id: l.id,
            product_id: l.product_id,
            expires_at: l.expires_at,
            activations_allowed: l.activations_allowed,
            activations_current: current,
        }),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RevokeBody {
    /// The license id.
    id: String,
    reason: Option<String>,
}

/// `POST /api/licenses/revoke` (OrgAdmin of its organization):
/// idempotent; a second revoke answers the row unchanged with `already_revoked: true`.
pub async fn revoke(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<RevokeBody>,
) -> ApiResult<Answer<Revoked>> {
    let l = managed(&app, &caller, &body.id).await?;
    if l.status == LicenseStatus::Revoked {
        return Ok(Answer(Revoked {
            success: True,
            already_revoked: true,
            data: License::of(&l, None, None),
        }));
    }
    let mut data = l.data.0.clone();
    if let Some(m) = data.as_object_mut() {
        m.insert("revoked_by".into(), json!(caller.id));
        if let Some(r) = body
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            m.insert(
                "revoke_reason".into(),
                json!(r.chars().take(500).collect::<String>()),
            );
        }
    }
    let revoked = store::revoke(&app.db, &l.id, &data).await?;
    let l = store::get(&app.db, &l.id).await?.ok_or_else(not_found)?;
    Ok(Answer(Revoked {
        success: True,
        already_revoked: !revoked,
        data: License::of(&l, None, None),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct IdBody {
    /// The license id.
    id: String,
}

/// `POST /api/licenses/regenerate` (OrgAdmin of its organization): a new
/// key for an `active` or `expired` license, in one transaction: the old row is revoked
/// with `data.replaced_by_id`, the new one (same owner, product, limits and expiry) has
/// no machines. 409 for a revoked license.
pub async fn regenerate(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Regenerated>> {
    let l = managed(&app, &caller, &body.id).await?;
    if l.status != LicenseStatus::Active {
        return Err(ApiError::conflict(format!(
            "only active or expired licenses are regenerated; this one is `{}`",
            l.status
        )));
    }
    let (mut keys, mut news) = mint(&app, 1);
    let (key, new) = (keys.remove(0), news.remove(0));
    let mut data = l.data.0.clone();
    if let Some(m) = data.as_object_mut() {
        m.insert("replaced_by_id".into(), json!(new.id));
    }
    if !store::regenerate(&app.db, &l, &data, &new).await? {
        return Err(ApiError::conflict(
            "the license changed meanwhile; read it and retry",
        ));
    }
    let fresh = store::get(&app.db, &new.id).await?.ok_or_else(not_found)?;
    Ok(Answer(Regenerated {
        success: True,
        replaced_id: l.id,
        data: License::of(&fresh, Some(Vec::new()), Some(key)),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// An organization whose issued licenses to list (its admins only); without it, the
    /// caller's own.
    domain: Option<String>,
    /// 1 to 100 (default 50).
    #[serde(default)]
    limit: Limit<50, 100>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/licenses` (Key): the caller's licenses, or with `domain` every license the
/// organization issued (its admins). Keys are not listed.
pub async fn list(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<ListQuery>,
) -> ApiResult<PrivateAnswer<Page<License>>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let org;
    let of = match q.domain.as_deref() {
        None => Of::User(&caller.id),
        Some(d) => {
            org = app.domain.orgs.administered(&caller, d, "licenses").await?;
            Of::Organization(&org.id)
        }
    };
    let (rows, total) = store::list(&app.db, of, limit, offset).await?;
    let data = rows.iter().map(|l| License::of(l, None, None)).collect();
    Ok(PrivateAnswer(Page::new(data, total, limit, offset)))
}

/// `GET /api/licenses/{id}` (Key: its owner, or an admin of its organization): the
/// license with its plaintext key and machines; 404 for anyone else.
pub async fn get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult<PrivateAnswer<Data<License>>> {
    let l = store::get(&app.db, &id).await?.ok_or_else(not_found)?;
    let owner = l.user_id.as_deref() == Some(caller.id.as_str());
    if !owner
        && !app
            .domain
            .orgs
            .org_admin(&caller, &l.organization_id)
            .await?
    {
        return Err(not_found());
    }
    let key = app
        .key
        .decrypt(&l.key_cipher)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| ApiError::internal("a license key does not decrypt with the master key"))?;
    let machines = store::machines(&app.db, &l.id).await?;
    Ok(PrivateAnswer(Data {
        data: License::of(&l, Some(machines), Some(key)),
    }))
}

/// `POST /api/licenses/purchase` (API key or guest session): checks out `items` like the
/// marketplace (tokens, or USD paid at once by `payment_method_id`; `Idempotency-Key`
/// honoured) and mints one key per unit; the plaintext keys are in this answer only. A
/// guest's keys have no owner (`user_id` null). If the keys cannot be written after the
/// payment, the order is refunded.
pub async fn purchase(
    State(app): State<AppState>,
    who: Purchaser,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<PurchaseBody>,
) -> ApiResult<Recorded<LicensesPurchased>> {
    run_to_end(async move {
        let scope = who.scope("license-purchase");
        crate::http::idempotency::checkout(&app, key.0.clone(), scope, &body, async {
            let placed = app
                .domain
                .checkout
                .purchase(who.shopper(), body.purchase(), |item| {
                    match terms(&item.data.0)?.product_id {
                        Some(_) => Ok(()),
                        None => Err(Invalid(format!(
                            "`{}` is not a licensed item (no `data.license_product_id`)",
                            item.sku
                        ))
                        .into()),
                    }
                })
                .await?;
            let keys_by_id = mint_for(&app, &who, &placed).await;
            let keys_by_id = match keys_by_id {
                Ok(m) => m,
                Err(e) => {
                    app.domain
                        .checkout
                        .undo_purchase(&placed.row, "license keys not minted")
                        .await?;
                    return Err(e);
                }
            };
            Ok(LicensesPurchased {
                checkout: (&placed).into(),
                licenses: minted(&app, &placed.row.id, &keys_by_id).await?,
            })
        })
        .await
    })
    .await
}

/// One key per unit of a paid order's lines: the plaintext keys by license id.
async fn mint_for(
    app: &AppState,
    who: &Purchaser,
    placed: &crate::domain::checkout::Placed,
) -> ApiResult<std::collections::HashMap<String, String>> {
    let user_id = match who {
        Purchaser::User(c) => Some(c.id.as_str()),
        Purchaser::Guest(_) => None,
    };
    let mut out = std::collections::HashMap::new();
    for line in &placed.lines {
        let item = crate::db::inventory::get(&app.db, &line.item_id)
            .await?
            .ok_or_else(|| ApiError::not_found("item not found"))?;
        let Terms {
            product_id,
            activations_allowed: allowed,
            duration_seconds: duration,
        } = terms(&item.data.0)?;
        let (keys, news) = mint(app, line.quantity);
        let grant = Grant {
            org_id: &placed.row.organization_id,
            item_id: Some(&line.item_id),
            user_id,
            issuer_id: None,
            product_id: product_id.as_deref(),
            activations_allowed: allowed,
            expires_at: duration.map(|s| chrono::Utc::now() + chrono::TimeDelta::seconds(s)),
        };
        store::mint(&app.db, &placed.row.id, &grant, &news).await?;
        out.extend(news.into_iter().map(|n| n.id).zip(keys));
    }
    Ok(out)
}
