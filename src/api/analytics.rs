//! Analytics: `/api/analytics/*` (docs/api.md "Analytics"). Sites have an owner and
//! direct members (viewer 10, admin 100); `site_for` is the one access check. Hits go
//! through the ingest actor (`plinth_actors::batch`) like telemetry; visitors are
//! derived, never stored client ids (`domain::analytics::visitor_id`).

use crate::http::request::{Cursor, Limit};
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::HeaderMap;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::db::analytics::{self as store, Grain, HitRow, SiteRow};
use crate::domain::analytics::{
    normalize_label, tally, visitor_id, Counted, LabelPattern, Need, Standing, Visitor, MAX_LABEL,
};
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::{Answer, PrivateAnswer};
use crate::state::AppState;
use crate::wire::analytics::{
    All, AttachmentUpload, Bucket, Counts, Event, Events, Granularity, LabelCount, Member,
    MemberRemoved, Membership, Site, Stats, Tracked,
};
use crate::wire::data::UploadMethod;
use crate::wire::{Data, Deleted, Saved, True};

/// Largest caller `data` kept as sent (serialized UTF-8 bytes).
const MAX_DATA: usize = 4096;
/// How long a track's attachment token is accepted.
const ATTACHMENT_TOKEN_MINUTES: i64 = 15;

fn not_found() -> ApiError {
    ApiError::not_found("site not found")
}

/// The active site and the caller's standing, if it meets `need`: 404 for callers with
/// no standing at all (existence does not leak), 403 for those below the need.
async fn site_for(
    app: &AppState,
    caller: &Caller,
    id: &str,
    need: Need,
) -> ApiResult<(SiteRow, Standing)> {
    let found = store::site_for_user(&app.db, id, &caller.id)
        .await?
        .ok_or_else(not_found)?;
    let (site, level) = (found.site, found.member_level);
    if site.owner_id == caller.id {
        let s = Standing {
            access_level: 100,
            is_owner: true,
        };
        return Ok((site, s));
    }
    if level.is_none() && !caller.is_admin() {
        return Err(not_found());
    }
    let level = level.unwrap_or(0);
    let allowed = match need {
        Need::View => level >= 10 || caller.is_admin(),
        Need::Admin => level >= 100 || caller.is_admin(),
        Need::Owner => false,
    };
    if !allowed {
        return Err(ApiError::forbidden(match need {
            Need::Owner => "only the site's owner may do this",
            _ => "this needs the site's admin access level (100)",
        }));
    }
    Ok((
        site,
        Standing {
            access_level: level,
            is_owner: false,
        },
    ))
}

fn name(raw: &str) -> ApiResult<String> {
    let n = raw.trim();
    if n.is_empty() || n.chars().count() > 200 {
        return Err(ApiError::bad_request("`name` must be 1 to 200 characters"));
    }
    Ok(n.to_owned())
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// 1 to 200 characters.
    #[schemars(length(min = 1, max = 200), pattern(r"\S"))]
    name: String,
}

/// `POST /api/analytics/sites/create` (V10): the caller owns the new site.
pub async fn create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<CreateBody>,
) -> ApiResult<Answer<Saved<Site>>> {
    let name = name(&b.name)?;
    let id = uuid::Uuid::new_v4().to_string();
    let salt = hex::encode(crate::crypto::random_bytes::<32>());
    let site = store::create_site(&app.db, &id, &caller.id, &name, &salt).await?;
    let owner = Standing {
        access_level: 100,
        is_owner: true,
    };
    Ok(Answer(Saved::new(Site::of(&site, &owner))))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    /// 1 to 200 characters.
    #[schemars(length(min = 1, max = 200), pattern(r"\S"))]
    name: String,
}

/// `POST /api/analytics/sites/update` (site admin, owner or platform admin).
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<UpdateBody>,
) -> ApiResult<Answer<Saved<Site>>> {
    let name = name(&b.name)?;
    let (_, standing) = site_for(&app, &caller, &b.id, Need::Admin).await?;
    let site = store::rename_site(&app.db, &b.id, &name)
        .await?
        .ok_or_else(not_found)?;
    app.analytics_sites.forget(&b.id);
    Ok(Answer(Saved::new(Site::of(&site, &standing))))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct IdBody {
    id: String,
}

/// `POST /api/analytics/sites/delete` (owner): soft delete; hits stop being accepted.
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<IdBody>,
) -> ApiResult<Answer<Deleted>> {
    site_for(&app, &caller, &b.id, Need::Owner).await?;
    if !store::delete_site(&app.db, &b.id).await? {
        return Err(not_found());
    }
    app.analytics_sites.forget(&b.id);
    Ok(Answer(Deleted::new(b.id)))
}

/// `GET /api/analytics/sites` (V10): active sites the caller owns or is a member of.
pub async fn list(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<PrivateAnswer<All<Site>>> {
    let data = store::sites_of(&app.db, &caller.id)
        .await?
        .iter()
        .map(|l| {
            let standing = Standing {
                access_level: l.access_level,
                is_owner: l.is_owner,
            };
            Site::of(&l.site, &standing)
        })
        .collect();
    Ok(PrivateAnswer(All::new(data)))
}

/// `GET /api/analytics/sites/{id}` (viewer, owner or platform admin).
pub async fn get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult<PrivateAnswer<Data<Site>>> {
    let (site, standing) = site_for(&app, &caller, &id, Need::View).await?;
    Ok(PrivateAnswer(Data {
        data: Site::of(&site, &standing),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct MembersQuery {
    site_id: String,
}

/// `GET /api/analytics/sites/members?site_id=` (site admin, owner or platform admin):
/// the direct members (the owner is not one).
pub async fn members(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<MembersQuery>,
) -> ApiResult<PrivateAnswer<All<Member>>> {
    site_for(&app, &caller, &q.site_id, Need::Admin).await?;
    let data = store::members(&app.db, &q.site_id)
        .await?
        .into_iter()
        .map(Member::from)
        .collect();
    Ok(PrivateAnswer(All::new(data)))
}

/// A site member's levels: 10 (viewer) and 100 (admin); the document lists these too.
const MEMBER_LEVELS: [i64; 2] = [10, 100];

fn member_level(level: i64) -> ApiResult<i64> {
    if !MEMBER_LEVELS.contains(&level) {
        return Err(ApiError::bad_request(
            "`level` must be 10 (viewer) or 100 (admin)",
        ));
    }
    Ok(level)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddMemberBody {
    site_id: String,
    /// An existing verified account.
    #[schemars(email)]
    email: String,
    /// 10 (viewer) or 100 (admin).
    #[schemars(extend("enum" = MEMBER_LEVELS))]
    level: i64,
}

/// `POST /api/analytics/sites/members/add` (owner).
pub async fn member_add(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<AddMemberBody>,
) -> ApiResult<Answer<Saved<Membership>>> {
    let level = member_level(b.level)?;
    let (site, _) = site_for(&app, &caller, &b.site_id, Need::Owner).await?;
    let user = crate::db::users::by_email(&app.db, &b.email.trim().to_lowercase())
        .await?
        .filter(|u| u.verified && u.deleted_at.is_none())
        .ok_or_else(|| ApiError::not_found("no verified account has this email"))?;
    if user.id == site.owner_id {
        return Err(ApiError::bad_request("the owner is not added as a member"));
    }
    store::add_member(&app.db, &site.id, &user.id, level).await?;
    Ok(Answer(Saved::new(Membership {
        site_id: site.id,
        user_id: user.id,
        email: Some(user.email),
        level,
    })))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct MemberBody {
    site_id: String,
    user_id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct MemberLevelBody {
    site_id: String,
    user_id: String,
    /// 10 (viewer) or 100 (admin).
    #[schemars(extend("enum" = MEMBER_LEVELS))]
    level: i64,
}

/// `POST /api/analytics/sites/members/update` (owner).
pub async fn member_update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<MemberLevelBody>,
) -> ApiResult<Answer<Saved<Membership>>> {
    let level = member_level(b.level)?;
    site_for(&app, &caller, &b.site_id, Need::Owner).await?;
    if !store::set_member_level(&app.db, &b.site_id, &b.user_id, level).await? {
        return Err(ApiError::not_found("not a member of this site"));
    }
    Ok(Answer(Saved::new(Membership {
        site_id: b.site_id,
        user_id: b.user_id,
        email: None,
        level,
    })))
}

/// `POST /api/analytics/sites/members/remove` (owner).
pub async fn member_remove(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<MemberBody>,
) -> ApiResult<Answer<MemberRemoved>> {
    site_for(&app, &caller, &b.site_id, Need::Owner).await?;
    if !store::remove_member(&app.db, &b.site_id, &b.user_id).await? {
        return Err(ApiError::not_found("not a member of this site"));
    }
    Ok(Answer(MemberRemoved {
        success: True,
        site_id: b.site_id,
        user_id: b.user_id,
        removed: True,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TrackBody {
    /// Any active site.
    site_id: String,
    /// A page path (starting with `/`; query and hash are dropped) or a custom event name.
    label: Option<String>,
    /// The browser's UUID; never stored (a site-scoped visitor id is derived from it).
    #[schemars(extend("format" = "uuid"))]
    client_id: Option<String>,
    /// Any JSON; kept when its serialized size is at most 4096 bytes.
    data: Option<Value>,
    /// Ask for an `attachment_token` (valid 15 minutes) for this event.
    #[serde(default)]
    attachment: bool,
}

/// `POST /api/analytics/track` (Public, `beacon` category): records a hit once it is
/// written (group commit).
pub async fn track(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    JsonBody(b): JsonBody<TrackBody>,
) -> ApiResult<Answer<Tracked>> {
    let label = match b.label.as_deref().map(normalize_label) {
        Some(l) if l.chars().count() > MAX_LABEL => {
            return Err(ApiError::bad_request(format!(
                "`label` must be at most {MAX_LABEL} characters"
            )))
        }
        Some("") | None => None,
        Some(l) => Some(l.to_owned()),
    };
    let client = match b.client_id.as_deref() {
        None | Some("") => None,
        Some(c) => Some(
            uuid::Uuid::parse_str(c)
                .map_err(|_| ApiError::bad_request("`client_id` must be a UUID"))?,
        ),
    };
    let site = app
        .analytics_sites
        .get(&app.db, &b.site_id)
        .await?
        .ok_or_else(not_found)?;
    let now = Utc::now();
    let day = now.format("%Y-%m-%d").to_string();
    let agent = headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let visitor = match &client {
        Some(c) => visitor_id(&site.salt, Visitor::Client(c)),
        None => visitor_id(
            &site.salt,
            Visitor::Anonymous {
                day: &day,
                // The client's address behind trusted proxies (security round 2, L2: the
                // proxy's own address made every visitor one).
                ip: &crate::http::client_ip::client_ip(
                    peer.ip(),
                    &headers,
                    &app.opts.server.trusted_proxies,
                )
                .to_string(),
                agent,
            },
        ),
    };
    let data = b
        .data
        .filter(|d| !d.is_null())
        .map(|d| match serde_json::to_vec(&d) {
            Ok(bytes) if bytes.len() <= MAX_DATA => d,
            _ => json!({"error": "DATA_SIZE_LIMIT_EXCEEDED"}),
        });
    // Time-ordered (v7): new rows land at the end of the primary-key index instead of at
    // random places in it (3x the insert rate on SQLite, docs/benchmarks.md).
    let id = uuid::Uuid::now_v7().to_string();
    let token = b
        .attachment
        .then(|| format!("at_{}", hex::encode(crate::crypto::random_bytes::<24>())));
    let hit = HitRow {
        id: id.clone(),
        site_id: site.id.clone(),
        label,
        visitor_id: visitor,
        data,
        created_at: now,
        attachment: token.as_ref().map(|t| {
            (
                crate::crypto::sha256_hex(t.as_bytes()),
                now + Duration::minutes(ATTACHMENT_TOKEN_MINUTES),
            )
        }),
    };
    app.analytics
        .write(&site.id, vec![hit])
        .await
        .map_err(|e| ApiError::unavailable(crate::db::Outage::NotApplied, e))?;
    let expires_at = now + Duration::minutes(ATTACHMENT_TOKEN_MINUTES);
    Ok(Answer(match token {
        Some(t) => Tracked {
            success: True,
            event_id: Some(id),
            attachment_token: Some(t),
            attachment_token_expires_at: Some(expires_at),
        },
        None => Tracked {
            success: True,
            event_id: None,
            attachment_token: None,
            attachment_token_expires_at: None,
        },
    }))
}

/// The hosted tracking script (`assets/analytics/v1.js`, docs/api.md "Analytics").
const SCRIPT: &str = include_str!("../../assets/analytics/v1.js");

/// `GET /analytics/v1.js`: outside the JSON API; cached by browsers and proxies for an
/// hour.
pub async fn script() -> impl axum::response::IntoResponse {
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/javascript; charset=utf-8",
            ),
            (axum::http::header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        SCRIPT,
    )
}

/// The dashboard (`assets/analytics/dashboard.html`): one static page that signs in with
/// an API key kept in the tab's session storage and draws from `stats` and `events`.
static DASHBOARD: std::sync::LazyLock<crate::http::pages::Page> = std::sync::LazyLock::new(|| {
    crate::http::pages::Page::new(include_str!("../../assets/analytics/dashboard.html"))
});

/// `GET /analytics/dashboard`: outside the JSON API. Not framed, no referrer, its own
/// script only and requests to this origin only (the key must not leak to another one).
pub async fn dashboard() -> axum::response::Response {
    DASHBOARD.response()
}

/// `from`/`to` as ISO 8601: a date-time (RFC 3339) or a date (`to` then means the end
/// of that day); defaults are the last 30 days. Any range is answered: one that ends
/// before it starts holds nothing, and a long one costs what its events cost (`stats`
/// draws buckets only near the site's lifetime).
fn window(from: Option<&str>, to: Option<&str>) -> ApiResult<(DateTime<Utc>, DateTime<Utc>)> {
    let parse = |field: &str, v: &str, end: bool| -> ApiResult<DateTime<Utc>> {
        if let Ok(t) = DateTime::parse_from_rfc3339(v) {
            return Ok(t.with_timezone(&Utc));
        }
        let d = NaiveDate::parse_from_str(v, "%Y-%m-%d").map_err(|_| {
            ApiError::bad_request(format!(
                "`{field}` must be an ISO 8601 date (YYYY-MM-DD) or date-time"
            ))
        })?;
        let t = d.and_hms_opt(0, 0, 0).expect("midnight").and_utc();
        Ok(if end {
            t + Duration::days(1) - Duration::nanoseconds(1)
        } else {
            t
        })
    };
    let now = Utc::now();
    let to = to.map_or(Ok(now), |v| parse("to", v, true))?;
    let from = from.map_or(Ok(to - Duration::days(30)), |v| parse("from", v, false))?;
    // Hourly rollups are keyed by nanosecond timestamps (years 1678 to 2261): a range
    // beyond them holds no event, so it is clipped to them rather than refused.
    let (first, last) = (
        DateTime::from_timestamp_nanos(i64::MIN / 2),
        DateTime::from_timestamp_nanos(i64::MAX / 2),
    );
    Ok((from.clamp(first, last), to.clamp(first, last)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EventsBody {
    site_id: String,
    /// ISO 8601 date or date-time; 30 days before `to` by default.
    #[schemars(extend("format" = "date"))]
    from: Option<String>,
    /// ISO 8601 date or date-time; now by default.
    #[schemars(extend("format" = "date"))]
    to: Option<String>,
    /// Only events with exactly this (normalized) label.
    label: Option<String>,
    /// `next_cursor` of the previous page.
    cursor: Option<Cursor>,
    /// 1 to 100; 50 by default.
    #[serde(default)]
    limit: Limit<50, 100>,
}

/// `POST /api/analytics/events` (viewer, owner or platform admin): newest first, by an
/// opaque cursor.
pub async fn events(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<EventsBody>,
) -> ApiResult<PrivateAnswer<Events>> {
    let range = window(b.from.as_deref(), b.to.as_deref())?;
    let limit = b.limit.get();
    let after = b.cursor.map(|c| (c.at, c.id));
    site_for(&app, &caller, &b.site_id, Need::View).await?;
    let label = b.label.as_deref().map(normalize_label);
    let rows = store::events(
        &app.db,
        &b.site_id,
        range,
        label,
        after.as_ref().map(|(t, i)| (*t, i.as_str())),
        limit + 1,
    )
    .await?;
    let more = rows.len() as i64 > limit;
    let page = &rows[..rows.len().min(limit as usize)];
    let next_cursor = more
        .then(|| page.last().map(|r| Cursor::after(r.created_at, &r.id)))
        .flatten();
    let data: Vec<Event> = page
        .iter()
        .map(|r| Event {
            event_id: r.id.clone(),
            label: r.label.clone(),
            visitor_id: r.visitor_id.clone(),
            data: r.data.as_ref().map(|d| d.0.clone()),
            created_at: r.created_at,
            attachment: r.attachment_key.is_some(),
        })
        .collect();
    Ok(PrivateAnswer(Events {
        count: data.len(),
        data,
        next_cursor,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StatsBody {
    site_id: String,
    /// ISO 8601 date or date-time; 30 days before `to` by default.
    #[schemars(extend("format" = "date"))]
    from: Option<String>,
    /// ISO 8601 date or date-time; now by default.
    #[schemars(extend("format" = "date"))]
    to: Option<String>,
    /// Up to 20 label patterns, `*` matching anything; only matching events count.
    #[schemars(
        length(max = 20),
        inner(length(min = 1, max = 200), regex(pattern = r"^[^*]*(\*[^*]*){0,8}$"))
    )]
    labels: Option<Vec<String>>,
    /// Also rank up to 100 observed labels by hits.
    #[serde(default)]
    include_labels: bool,
}

/// `POST /api/analytics/stats` (viewer, owner or platform admin): hits and unique
/// visitors per hour (ranges up to 48 hours) or per UTC day, with totals.
pub async fn stats(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(b): JsonBody<StatsBody>,
) -> ApiResult<PrivateAnswer<Stats>> {
    let (from, to) = window(b.from.as_deref(), b.to.as_deref())?;
    let patterns = LabelPattern::parse_all(&b.labels.unwrap_or_default())?;
    let (site, _) = site_for(&app, &caller, &b.site_id, Need::View).await?;
    let hourly = to - from <= Duration::hours(48);
    let grain = if hourly { Grain::Hour } else { Grain::Day };
    let tally = tally(
        &app.db,
        &b.site_id,
        (from, to),
        grain,
        &patterns,
        b.include_labels,
    )
    .await?;
    // Every bucket of the range, empty ones included, but none more than a year before
    // the site was made or a day after now: the answer grows with the site's life, never
    // with the range asked for (a range of ten thousand years is a few hundred buckets).
    let (step, fmt) = if hourly {
        (Duration::hours(1), "%Y-%m-%dT%H")
    } else {
        (Duration::days(1), "%Y-%m-%d")
    };
    let mut buckets = Vec::new();
    let mut t = from.max(site.created_at - Duration::days(366));
    let end = to.min(Utc::now() + Duration::days(1));
    let last = end.format(fmt).to_string();
    while t <= end {
        let key = t.format(fmt).to_string();
        let c = tally.bucket(&key).unwrap_or(Counted {
            hits: 0,
            visitors: 0,
        });
        let time = if hourly {
            format!("{key}:00:00Z")
        } else {
            key.clone()
        };
        buckets.push(Bucket {
            time,
            hits: c.hits,
            visitors: c.visitors,
        });
        if key >= last {
            break;
        }
        t += step;
    }
    let totals = tally.total();
    let labels = b.include_labels.then(|| {
        tally
            .top_labels(100)
            .into_iter()
            .map(|(label, c)| LabelCount {
                label,
                hits: c.hits,
                visitors: c.visitors,
            })
            .collect()
    });
    Ok(PrivateAnswer(Stats {
        site_id: b.site_id,
        from,
        to,
        granularity: if hourly {
            Granularity::Hour
        } else {
            Granularity::Day
        },
        buckets,
        totals: Counts {
            hits: totals.hits,
            visitors: totals.visitors,
        },
        labels,
    }))
}

/// How long an attachment's upload URL stays valid.
const UPLOAD_TTL: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// How long an attachment's download URL stays valid.
const DOWNLOAD_TTL: std::time::Duration = std::time::Duration::from_secs(5 * 60);

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AttachmentBody {
    /// From the `track` answer; valid 15 minutes.
    attachment_token: String,
    /// A file name (other characters become `-`).
    #[schemars(regex(pattern = r"[A-Za-z0-9_]"))]
    file: String,
    /// The file's MIME type (types a browser runs are refused).
    #[schemars(
        regex(
            pattern = r"^\s*((audio|video|font)/[a-z0-9!#$&^_.+-]+|image/(png|jpeg|gif|webp|avif|bmp|tiff|heic|heif|x-icon)|text/(plain|csv|markdown|tab-separated-values)|application/(pdf|json|zip|gzip|x-tar|x-7z-compressed|octet-stream|msword|rtf|epub\+zip|x-ndjson)) *(;[^\u0000-\u001f\u007f-\u009f]*)?\s*$"
        ),
        length(max = 128)
    )]
    r#type: String,
    /// The exact size in bytes, at most 15 MB (required on S3 storage, where the URL
    /// signs it).
    #[schemars(range(min = 1, max = 15728640))]
    size: Option<u64>,
}

/// `POST /api/analytics/events/{id}/attachment/create` (the event's attachment token,
/// `upload` category): a private PUT URL valid 15 minutes; one attachment per event.
pub async fn attachment_create(
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<AttachmentBody>,
) -> ApiResult<Answer<AttachmentUpload>> {
    use crate::domain::uploads::{content_type, upload_bound};
    let file = crate::domain::validate::clean_filename(&b.file, "file")?;
    let ct = content_type(&b.r#type, "type")?;
    let (max, exact) = upload_bound(app.objects.backend() == "s3", b.size)?;
    let hash = crate::crypto::sha256_hex(b.attachment_token.as_bytes());
    let event = store::event_attachment(&app.db, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("event not found"))?;
    if event.attachment_token_hash.as_deref() != Some(hash.as_str()) {
        return Err(ApiError::unauthorized(
            "`attachment_token` is not this event's",
        ));
    }
    if event.attachment_key.is_some() {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "this event already has its attachment",
        ));
    }
    if event
        .attachment_token_expires_at
        .is_none_or(|t| t <= Utc::now())
    {
        return Err(ApiError::unauthorized("`attachment_token` has expired"));
    }
    let key = format!(
        "analytics/{}/{id}/{}/{file}",
        event.site_id,
        uuid::Uuid::new_v4().simple()
    );
    let url = app
        .objects
        .presign_put(&key, &ct, max, exact, UPLOAD_TTL)
        .await?;
    // Conditional: of two racing creates, one gets the event.
    if !store::claim_attachment(&app.db, &id, &hash, &key).await? {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "this event already has its attachment",
        ));
    }
    Ok(Answer(AttachmentUpload {
        success: True,
        event_id: id,
        url,
        method: UploadMethod::Put,
        headers: [("Content-Type".to_owned(), ct)].into(),
        max_bytes: max,
        expires_in: UPLOAD_TTL.as_secs(),
    }))
}

/// `POST /api/analytics/events/{id}/attachment` (viewer, owner or platform admin): 302
/// to a 5-minute private URL of the attachment.
pub async fn attachment(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult<crate::http::reply::SignedRedirect> {
    let event = store::event_attachment(&app.db, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("event not found"))?;
    site_for(&app, &caller, &event.site_id, Need::View)
        .await
        .map_err(|e| match e.status {
            // The event of a site the caller cannot see does not exist for them.
            axum::http::StatusCode::NOT_FOUND => ApiError::not_found("event not found"),
            _ => e,
        })?;
    let key = event
        .attachment_key
        .ok_or_else(|| ApiError::not_found("this event has no attachment"))?;
    let url = app
        .objects
        .presign_get(&key, DOWNLOAD_TTL)
        .await
        .map_err(crate::domain::uploads::UploadError::Storage)?;
    Ok(crate::http::reply::SignedRedirect::to(&url))
}
