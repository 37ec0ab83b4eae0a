//! Calendar events: `/api/events*`. Organization-scoped time ranges with a `status`
//! and a `visibility`. Members see every event of their organization; everybody else
//! sees the events that are `approved` and `public` (docs/api.md).

use crate::http::request::{Limit, Offset};
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::events::{self as store, EventFields, EventRow};
use crate::domain::records;
use crate::http::auth::{Caller, MaybeCaller, OrgMember, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::states::Visibility;
use crate::wire::events::{Conflicts, Event};
use crate::wire::{Data, Deleted, Page, Saved};

/// The keys `updates` may change; any other is dropped (spec).
const UPDATABLE: [&str; 5] = ["begins_at", "ends_at", "status", "visibility", "data"];
fn not_found() -> ApiError {
    ApiError::not_found("event not found")
}

fn visible_to_all(e: &EventRow) -> bool {
    e.status == "approved" && e.visibility == Visibility::Public
}

fn status(raw: &str) -> ApiResult<String> {
    let s = raw.trim().to_ascii_lowercase();
    if s.is_empty() || s.len() > 40 {
        return Err(ApiError::bad_request(
            "`status` must be a string of 1 to 40 characters",
        ));
    }
    Ok(s)
}

/// Any case and surrounding spaces are accepted, as before the type existed.
fn visibility(raw: &str) -> ApiResult<Visibility> {
    Visibility::parse(&raw.trim().to_ascii_lowercase())
        .ok_or_else(|| ApiError::bad_request("`visibility` must be `public` or `private`"))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// The organization's domain.
    domain: String,
    /// 1 to 500, default 100.
    #[serde(default)]
    limit: Limit<100, 500>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/events?domain=` (Public): in start order, paged; members of the
/// organization (and platform admins) see all of its events, others the approved public
/// ones.
pub async fn list(
    State(app): State<AppState>,
    caller: MaybeCaller,
    Query(q): Query<ListQuery>,
) -> ApiResult<Answer<Page<Event>>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let org = crate::db::organizations::by_domain(&app.db, &q.domain)
        .await?
        .ok_or_else(|| ApiError::not_found("organization not found"))?;
    let member = match &caller.0 {
        Some(c) => app.domain.orgs.in_org(c, &org.id).await?,
        None => false,
    };
    let (rows, total) = store::list(&app.db, &org.id, !member, limit, offset).await?;
    let data = rows.iter().map(Event::from).collect();
    Ok(Answer(Page::new(data, total, limit, offset)))
}

/// The event if the caller may see it (404 otherwise).
async fn visible(app: &AppState, caller: &Caller, id: &str) -> ApiResult<EventRow> {
    let e = store::get(&app.db, id).await?.ok_or_else(not_found)?;
    if visible_to_all(&e) || app.domain.orgs.in_org(caller, &e.organization_id).await? {
        Ok(e)
    } else {
        Err(not_found())
    }
}

/// `GET /api/events/{id}` (V10).
pub async fn get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult<Answer<Data<Event>>> {
    let e = visible(&app, &caller, &id).await?;
    Ok(Answer(Data {
        data: Event::from(&e),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// RFC 3339, before `ends_at`.
    begins_at: String,
    /// RFC 3339.
    ends_at: String,
    /// Default `pending`; `approved` (with `visibility: public`) shows the event to
    /// everybody.
    status: Option<String>,
    /// `public` or `private` (default).
    visibility: Option<String>,
    data: Option<Map<String, Value>>,
}

/// `POST /api/events/create` (OrgMember).
pub async fn create(
    State(app): State<AppState>,
    g: OrgMember<CreateBody>,
) -> ApiResult<Answer<Saved<Event>>> {
    let (begins_at, ends_at) = records::range(&g.body.begins_at, &g.body.ends_at)?;
    let status = status(g.body.status.as_deref().unwrap_or("pending"))?;
    let visibility = visibility(g.body.visibility.as_deref().unwrap_or("private"))?;
    let data = Value::Object(g.body.data.unwrap_or_default());
    records::check_data(&data)?;
    let fields = EventFields {
        begins_at,
        ends_at,
        status: &status,
        visibility,
        data: &data,
    };
    let id = store::create(&app.db, &g.org.id, &fields, &g.caller.id).await?;
    let e = store::get(&app.db, &id).await?.ok_or_else(not_found)?;
    Ok(Answer(Saved::new(Event::from(&e))))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    /// `begins_at`, `ends_at`, `status`, `visibility` and `data` (merged: top-level keys
    /// replace, `null` removes); other keys are dropped.
    updates: Map<String, Value>,
}

/// The event after `updates` (the allowed keys only), checked.
fn apply(e: &EventRow, updates: &Map<String, Value>) -> ApiResult<(EventRow, Value)> {
    let text = |k: &str| -> ApiResult<Option<&str>> {
        match updates.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::bad_request(format!(
                "`updates.{k}` must be a string"
            ))),
        }
    };
    let mut next = e.clone();
    if let Some(b) = text("begins_at")? {
        next.begins_at = records::timestamp("begins_at", b)?;
    }
    if let Some(t) = text("ends_at")? {
        next.ends_at = records::timestamp("ends_at", t)?;
    }
    records::check_range(next.begins_at, next.ends_at)?;
    if let Some(s) = text("status")? {
        next.status = status(s)?;
    }
    if let Some(v) = text("visibility")? {
        next.visibility = visibility(v)?;
    }
    let data = match updates.get("data") {
        None | Some(Value::Null) => e.data.0.clone(),
        Some(Value::Object(changes)) => records::merge(&e.data.0, changes)?,
        Some(_) => return Err(ApiError::bad_request("`updates.data` must be an object")),
    };
    Ok((next, data))
}

/// `POST /api/events/update` (OrgMember): only the five allowed keys of `updates`
/// count; an event of another organization is a 404.
pub async fn update(
    State(app): State<AppState>,
    g: OrgMember<UpdateBody>,
) -> ApiResult<Answer<Saved<Event>>> {
    let updates: Map<String, Value> = g
        .body
        .updates
        .into_iter()
        .filter(|(k, _)| UPDATABLE.contains(&k.as_str()))
        .collect();
    let mut e = store::get(&app.db, &g.body.id)
        .await?
        .filter(|e| e.organization_id == g.org.id)
        .ok_or_else(not_found)?;
    for _ in 0..records::WRITE_TRIES {
        let (next, data) = apply(&e, &updates)?;
        let fields = EventFields {
            begins_at: next.begins_at,
            ends_at: next.ends_at,
            status: &next.status,
            visibility: next.visibility,
            data: &data,
        };
        let written = store::write(&app.db, &e.id, e.version, &fields).await?;
        e = store::get(&app.db, &e.id).await?.ok_or_else(not_found)?;
        if written {
            return Ok(Answer(Saved::new(Event::from(&e))));
        }
    }
    Err(records::RecordError::Busy.into())
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DeleteBody {
    id: String,
}

/// `POST /api/events/delete` (OrgMember).
pub async fn delete(
    State(app): State<AppState>,
    g: OrgMember<DeleteBody>,
) -> ApiResult<Answer<Deleted>> {
    let e = store::get(&app.db, &g.body.id)
        .await?
        .filter(|e| e.organization_id == g.org.id)
        .ok_or_else(not_found)?;
    store::delete(&app.db, &e.id).await?;
    Ok(Answer(Deleted::new(e.id)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RangeBody {
    /// RFC 3339, before `ends_at`.
    begins_at: String,
    /// RFC 3339.
    ends_at: String,
}

/// `POST /api/events/conflicts` (OrgMember): the organization's events that overlap
/// `[begins_at, ends_at)`; ranges that only touch do not overlap.
pub async fn conflicts(
    State(app): State<AppState>,
    g: OrgMember<RangeBody>,
) -> ApiResult<Answer<Conflicts>> {
    let (begins_at, ends_at) = records::range(&g.body.begins_at, &g.body.ends_at)?;
    let rows = store::overlapping(&app.db, &g.org.id, begins_at, ends_at).await?;
    let data: Vec<Event> = rows.iter().map(Event::from).collect();
    Ok(Answer(Conflicts {
        conflict: !data.is_empty(),
        count: data.len(),
        data,
    }))
}
