//! Downloads: `/api/downloads*` (docs/api.md). Every link has its own storage clone of a
//! seller's source object (which is never shared or deleted), a token shown once (kept as
//! its sha256), an expiry and a download counter. Redeeming is one conditional update
//! and a redirect to a short-lived URL of the clone; the periodic expiry work deletes the
//! clones of revoked, expired and used-up links. Purchases go through
//! `domain::checkout` and mint one link per unit once the order is paid.

use crate::http::request::{Limit, Offset};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use crate::db::downloads::{self as store, LinkRow, NewLink};
use crate::domain::checkout::run_to_end;
use crate::domain::uploads::UploadError;
use crate::domain::Invalid;
use crate::http::auth::{Caller, OrgAdmin, Purchaser, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdempotencyKey, JsonBody};
use crate::http::reply::{Answer, PrivateAnswer, Recorded, SignedRedirect};
use crate::state::AppState;
use crate::wire::downloads::{Issued, Link, LinksPurchased, Revoked};
use crate::wire::marketplace::PurchaseBody;
use crate::wire::{Data, Page, Saved, True};

use crate::domain::downloads::{
    bounded, own_source, DownloadAsset, SourceError, DEFAULT_EXPIRES_IN, DEFAULT_MAX_DOWNLOADS,
    MAX_EXPIRES_IN, URL_TTL,
};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// The source object, one of the organization's own: under `catalog/<organization
    /// id>/` or `orgs/<organization id>/uploads/` (403 otherwise). Defaults to the asset
    /// of `sku`.
    source_s3_key: Option<String>,
    /// An item of the organization with a `data.download_asset`: its file name, type,
    /// limits and key apply unless given here.
    sku: Option<String>,
    /// Rejected: links only read from the configured store.
    #[schemars(with = "Option<String>")]
    bucket: Option<Value>,
    /// 1 to 1,000 (default: the asset's, else 5).
    max_downloads: Option<i64>,
    /// 60 s to a year (default: the asset's, else 7 days).
    expires_in_seconds: Option<i64>,
    file_name: Option<String>,
    mime_type: Option<String>,
    /// Who the link is for (a user id), if anyone.
    recipient_user_id: Option<String>,
}

/// `POST /api/downloads/create` (OrgAdmin): a link without payment, with its own clone
/// of the source; the token is in this answer only.
pub async fn create(
    State(app): State<AppState>,
    g: OrgAdmin<CreateBody>,
) -> ApiResult<Answer<Saved<Issued>>> {
    let b = &g.body;
    if b.bucket.is_some() {
        return Err(ApiError::bad_request(
            "`bucket` cannot be chosen: links read from the configured object store",
        ));
    }
    let item = match &b.sku {
        Some(sku) => Some(
            crate::db::inventory::by_sku(&app.db, &g.org.id, sku.trim())
                .await?
                .ok_or_else(|| ApiError::not_found("the organization has no item with this sku"))?,
        ),
        None => None,
    };
    let asset = match &item {
        Some(i) => DownloadAsset::of(&g.org.id, &i.data.0)?.unwrap_or_default(),
        None => DownloadAsset::default(),
    };
    let source = match (&b.source_s3_key, &asset.key) {
        (Some(raw), _) => own_source(&g.org.id, "source_s3_key", raw)?,
        (None, Some(key)) => key.clone(),
        (None, None) => {
            return Err(ApiError::bad_request(
                "send `source_s3_key`, or the `sku` of an item with a `download_asset`",
            ))
        }
    };
    let max_downloads = bounded(
        "max_downloads",
        b.max_downloads.or(asset.max_downloads),
        1..=1000,
    )?
    .unwrap_or(DEFAULT_MAX_DOWNLOADS);
    let expires_in = bounded(
        "expires_in_seconds",
        b.expires_in_seconds.or(asset.expires_in_seconds),
        60..=MAX_EXPIRES_IN,
    )?
    .unwrap_or(DEFAULT_EXPIRES_IN);
    let file_name = b
        .file_name
        .clone()
        .or(asset.file_name)
        .unwrap_or_else(|| source.rsplit('/').next().unwrap_or("download").to_owned());
    let mime_type = b
        .mime_type
        .clone()
        .or(asset.mime_type)
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    if file_name.is_empty() || file_name.len() > 255 || mime_type.len() > 255 {
        return Err(ApiError::bad_request(
            "`file_name` must be 1 to 255 characters and `mime_type` at most 255",
        ));
    }
    if let Some(r) = &b.recipient_user_id {
        crate::db::users::by_id(&app.db, r)
            .await?
            .ok_or_else(|| ApiError::not_found("no user with `recipient_user_id`"))?;
    }
    let issued = issue(
        &app,
        Issue {
            org_id: &g.org.id,
            item_id: item.as_ref().map(|i| i.id.as_str()),
            order_id: None,
            issuer_id: Some(&g.caller.id),
            user_id: b.recipient_user_id.as_deref(),
            source: &source,
            file_name: &file_name,
            mime_type: &mime_type,
            max_downloads,
            expires_in,
        },
    )
    .await?;
    Ok(Answer(Saved::new(issued_view(&app, issued, &g.org.domain))))
}

/// What a new link is made of.
struct Issue<'a> {
    org_id: &'a str,
    item_id: Option<&'a str>,
    order_id: Option<&'a str>,
    issuer_id: Option<&'a str>,
    user_id: Option<&'a str>,
    source: &'a str,
    file_name: &'a str,
    mime_type: &'a str,
    max_downloads: i64,
    expires_in: i64,
}

/// Copies the source to a clone of its own and writes the link: `(row, token)`; 404
/// when the source does not exist. A link that cannot be written takes its clone away.
async fn issue(app: &AppState, i: Issue<'_>) -> ApiResult<(LinkRow, String)> {
    let ext: String = i
        .source
        .rsplit_once('.')
        .map(|(_, e)| e)
        .filter(|e| {
            !e.contains('/')
                && (1..=10).contains(&e.len())
                && e.chars().all(|c| c.is_ascii_alphanumeric())
        })
        .unwrap_or("bin")
        .to_ascii_lowercase();
    let clone_key = format!("clones/{}.{ext}", uuid::Uuid::new_v4());
    if !app
        .objects
        .copy(i.source, &clone_key)
        .await
        .map_err(ApiError::internal)?
    {
        return Err(ApiError::not_found("the source object does not exist"));
    }
    let token = format!("dl_{}", hex::encode(crate::crypto::random_bytes::<32>()));
    let link = NewLink {
        id: &uuid::Uuid::new_v4().to_string(),
        org_id: i.org_id,
        item_id: i.item_id,
        order_id: i.order_id,
        issuer_id: i.issuer_id,
        user_id: i.user_id,
        token_hash: &crate::crypto::sha256_hex(token.as_bytes()),
        source_key: i.source,
        clone_key: &clone_key,
        file_name: i.file_name,
        mime_type: i.mime_type,
        max_downloads: i.max_downloads,
        expires_at: chrono::Utc::now() + chrono::TimeDelta::seconds(i.expires_in),
    };
    match store::create(&app.db, &link).await {
        Ok(row) => Ok((row, token)),
        Err(e) => {
            // Nothing points at the clone: take it away again.
            let _ = app.objects.delete(&clone_key).await;
            Err(e.into())
        }
    }
}

/// A link as its minting answer shows it: with its token and URL (the only time).
fn issued_view(app: &AppState, (row, token): (LinkRow, String), domain: &str) -> Issued {
    Issued {
        link: Link::of(&row, domain),
        url: format!("{}/api/downloads/{token}", app.public_url),
        token,
    }
}

/// `GET /api/downloads/{token}` (Public): counts one download and answers 302 to a
/// 5-minute URL of the link's clone (`Referrer-Policy: no-referrer`, `Cache-Control:
/// no-store`); 410, the same for every reason, when the link is unknown, revoked,
/// expired or used up.
pub async fn redeem(
    State(app): State<AppState>,
    Path(token): Path<String>,
) -> Result<SignedRedirect, Response> {
    let gone = || {
        let mut r =
            ApiError::new(StatusCode::GONE, "this download link is not available").into_response();
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    };
    let hash = crate::crypto::sha256_hex(token.as_bytes());
    let clone = match store::redeem(&app.db, &hash).await {
        Ok(Some(found)) => found,
        Ok(None) => return Err(gone()),
        Err(e) => return Err(ApiError::from(e).into_response()),
    };
    match app.objects.presign_get(&clone, URL_TTL).await {
        Ok(url) => Ok(SignedRedirect::to(&url)),
        Err(e) => Err(ApiError::from(UploadError::Storage(e)).into_response()),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("anyOf" = [{"required": ["id"], "properties": {"id": {"type": "string"}}}, {"required": ["token"], "properties": {"token": {"type": "string"}}}]))]
pub struct RevokeBody {
    /// The link's id (or send `token`).
    id: Option<String>,
    token: Option<String>,
    /// Optional: the link names its organization (a link of another one is a 404).
    domain: Option<String>,
}

/// The organization's link named by `id` or `token` (404 otherwise).
async fn link_of(app: &AppState, id: Option<&str>, token: Option<&str>) -> ApiResult<LinkRow> {
    let found = match (id, token) {
        (Some(id), _) => store::get(&app.db, id).await?,
        (None, Some(t)) => {
            store::by_token(&app.db, &crate::crypto::sha256_hex(t.trim().as_bytes())).await?
        }
        // Neither names a link: none is found (a 404, not a 400: OpenAPI cannot say that
        // one of two optional parameters is needed, so the document allows this request).
        (None, None) => {
            return Err(ApiError::not_found(
                "no download link named: send its `id` or `token`",
            ))
        }
    };
    found.ok_or_else(|| ApiError::not_found("download link not found"))
}

/// `POST /api/downloads/revoke` (OrgAdmin of the link's organization, which the link
/// names: the spec's body is `id` or `token`): the link stops working at once; its clone
/// is deleted by the next expiry run. Idempotent (`already_revoked`).
pub async fn revoke(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<RevokeBody>,
) -> ApiResult<Answer<Revoked>> {
    let l = link_of(&app, b.id.as_deref(), b.token.as_deref()).await?;
    let org = crate::db::organizations::by_id(&app.db, &l.organization_id)
        .await?
        .filter(|o| {
            b.domain
                .as_deref()
                .is_none_or(|d| d.trim().eq_ignore_ascii_case(&o.domain))
        })
        .ok_or_else(|| ApiError::not_found("download link not found"))?;
    if !may_see(&app, &caller, &l).await? {
        return Err(ApiError::not_found("download link not found"));
    }
    let revoked = store::revoke(&app.db, &l.id).await?;
    let l = store::get(&app.db, &l.id)
        .await?
        .ok_or_else(|| ApiError::not_found("download link not found"))?;
    Ok(Answer(Revoked {
        success: True,
        already_revoked: !revoked,
        data: Link::of(&l, &org.domain),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// 1 to 100 (default 50).
    #[serde(default)]
    limit: Limit<50, 100>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/downloads?domain=` (OrgAdmin): the organization's links, newest first.
pub async fn list(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
    g: OrgAdmin<crate::http::extract::NoFields>,
) -> ApiResult<PrivateAnswer<Page<Link>>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let (rows, total) = store::list(&app.db, &g.org.id, limit, offset).await?;
    let data = rows.iter().map(|l| Link::of(l, &g.org.domain)).collect();
    Ok(PrivateAnswer(Page::new(data, total, limit, offset)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StatusQuery {
    id: Option<String>,
    token: Option<String>,
}

/// `GET /api/downloads/status?id=|token=` (Key: an admin of the link's organization, or
/// who issued it): its status and counters.
pub async fn link_status(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<StatusQuery>,
) -> ApiResult<PrivateAnswer<Data<Link>>> {
    let l = link_of(&app, q.id.as_deref(), q.token.as_deref()).await?;
    if !may_see(&app, &caller, &l).await? {
        return Err(ApiError::not_found("download link not found"));
    }
    let org = crate::db::organizations::by_id(&app.db, &l.organization_id)
        .await?
        .ok_or_else(|| ApiError::not_found("download link not found"))?;
    Ok(PrivateAnswer(Data {
        data: Link::of(&l, &org.domain),
    }))
}

/// Whether the caller administers the link's organization now (having issued it gives no
/// rights of its own: security round 2, M7).
async fn may_see(app: &AppState, caller: &Caller, l: &LinkRow) -> ApiResult<bool> {
    Ok(app
        .domain
        .orgs
        .org_admin(caller, &l.organization_id)
        .await?)
}

/// An item's `download_asset` as a purchase uses it: `(key, file name, mime type, max
/// downloads, expires in seconds)`; 400 when the item has none or it is malformed, 403
/// when its key is not the organization's own (checked again here, not only when the
/// item was written).
fn asset_of(
    item: &crate::db::inventory::ItemRow,
) -> Result<(String, String, String, i64, i64), SourceError> {
    let asset = DownloadAsset::of(&item.organization_id, &item.data.0)?.unwrap_or_default();
    let key = asset.key.ok_or_else(|| {
        Invalid(format!(
            "`{}` is not a downloadable item (no `data.download_asset.key`)",
            item.sku
        ))
    })?;
    let file_name = asset
        .file_name
        .unwrap_or_else(|| key.rsplit('/').next().unwrap_or("download").to_owned());
    let mime = asset
        .mime_type
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    Ok((
        key,
        file_name,
        mime,
        asset.max_downloads.unwrap_or(DEFAULT_MAX_DOWNLOADS),
        asset.expires_in_seconds.unwrap_or(DEFAULT_EXPIRES_IN),
    ))
}

/// `POST /api/downloads/purchase` (API key or guest session): checks out `items` like the
/// marketplace (tokens, or USD paid at once by `payment_method_id`; `Idempotency-Key`
/// honoured), then gives one link per unit, each with its own clone of the item's
/// `download_asset`; the tokens are in this answer only. If the links cannot be made
/// after the payment (a missing source object, say), the order is refunded and the clones
/// made so far are removed.
pub async fn purchase(
    State(app): State<AppState>,
    who: Purchaser,
    key: IdempotencyKey,
    JsonBody(body): JsonBody<PurchaseBody>,
) -> ApiResult<Recorded<LinksPurchased>> {
    run_to_end(async move {
        let scope = who.scope("download-purchase");
        crate::http::idempotency::checkout(&app, key.0.clone(), scope, &body, async {
            let placed = app
                .domain
                .checkout
                .purchase(who.shopper(), body.purchase(), |item| {
                    Ok(asset_of(item).map(|_| ())?)
                })
                .await?;
            let user_id = match &who {
                Purchaser::User(c) => Some(c.id.clone()),
                Purchaser::Guest(_) => None,
            };
            let mut links: Vec<(LinkRow, String)> = Vec::new();
            let mut failed = None;
            'lines: for line in &placed.lines {
                let item = match crate::db::inventory::get(&app.db, &line.item_id).await {
                    Ok(Some(i)) => i,
                    Ok(None) => {
                        failed = Some(ApiError::not_found("item not found"));
                        break;
                    }
                    Err(e) => {
                        failed = Some(e.into());
                        break;
                    }
                };
                let (key, file_name, mime, max, expires) = match asset_of(&item) {
                    Ok(a) => a,
                    Err(e) => {
                        failed = Some(e.into());
                        break;
                    }
                };
                for _ in 0..line.quantity {
                    let issued = issue(
                        &app,
                        Issue {
                            org_id: &placed.row.organization_id,
                            item_id: Some(&line.item_id),
                            order_id: Some(&placed.row.id),
                            issuer_id: None,
                            user_id: user_id.as_deref(),
                            source: &key,
                            file_name: &file_name,
                            mime_type: &mime,
                            max_downloads: max,
                            expires_in: expires,
                        },
                    )
                    .await;
                    match issued {
                        Ok(l) => links.push(l),
                        Err(e) => {
                            failed = Some(e);
                            break 'lines;
                        }
                    }
                }
            }
            if let Some(e) = failed {
                for (l, _) in &links {
                    let _ = store::revoke(&app.db, &l.id).await;
                    let _ = app.objects.delete(&l.clone_key).await;
                }
                app.domain
                    .checkout
                    .undo_purchase(&placed.row, "download links not made")
                    .await?;
                return Err(e);
            }
            let data: Vec<Issued> = links
                .into_iter()
                .map(|l| issued_view(&app, l, &placed.row.domain))
                .collect();
            Ok(LinksPurchased {
                checkout: (&placed).into(),
                links: data,
            })
        })
        .await
    })
    .await
}
