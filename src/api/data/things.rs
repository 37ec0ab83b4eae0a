//! Things: `/api/data/things*`. Titled, categorized records with a unique slug, public
//! to read, listed newest first (by offset or cursor) and searched by keyword through the
//! database's full-text index. Changed by their creator, a platform admin, or a member
//! of the organization the thing was created under (naming it as `domain`); anyone else
//! gets a 404.

use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::things::{self as store, ThingFields, ThingRow};
use crate::domain::records;
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::Answer;
use crate::http::request::{Cursor, Limit, NonBlank, Offset};
use crate::state::AppState;
use crate::wire::things::{Thing, ThingMatches, ThingPage};
use crate::wire::{Data, Deleted, Page, Saved};

fn not_found() -> ApiError {
    ApiError::not_found("thing not found")
}

fn text(field: &str, raw: &str, max: usize) -> ApiResult<String> {
    let v = raw.trim();
    if v.is_empty() || v.chars().count() > max {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be a string of 1 to {max} characters"
        )));
    }
    Ok(v.to_owned())
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ThingQuery {
    id: String,
}

/// `GET /api/data/things?id=` (Public).
pub async fn thing_get(
    State(app): State<AppState>,
    Query(q): Query<ThingQuery>,
) -> ApiResult<Answer<Data<Thing>>> {
    let t = store::get(&app.db, &q.id).await?.ok_or_else(not_found)?;
    Ok(Answer(Data {
        data: Thing::from(&t),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ThingCreate {
    /// 1 to 300 characters; searchable.
    title: NonBlank<300>,
    /// 1 to 100 characters; searchable.
    category: NonBlank<100>,
    /// Unique: lower-cased, 1 to 200 of a-z, 0-9, `-`, `_`, `.`.
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9][A-Za-z0-9._-]{0,199}\s*$"))]
    slug: String,
    /// An organization the caller belongs to; its members may then change the thing.
    domain: Option<String>,
    data: Option<Map<String, Value>>,
}

/// `POST /api/data/things/create` (V10): 409 when the slug is taken.
pub async fn thing_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<ThingCreate>,
) -> ApiResult<Answer<Saved<Thing>>> {
    let title = text("title", &body.title, 300)?;
    let category = text("category", &body.category, 100)?;
    let slug = crate::domain::posts::slug(&body.slug)?;
    let data = Value::Object(body.data.unwrap_or_default());
    records::check_data(&data)?;
    let org_id = app
        .domain
        .orgs
        .member_org(&caller, body.domain.as_deref())
        .await?;
    let fields = ThingFields {
        title: &title,
        category: &category,
        slug: &slug,
        data: &data,
    };
    let id = store::create(&app.db, &fields, org_id.as_deref(), &caller.id).await?;
    let t = store::get(&app.db, &id).await?.ok_or_else(not_found)?;
    Ok(Answer(Saved::new(Thing::from(&t))))
}

/// The thing if the caller may change it: its creator, a platform admin, or a member of
/// its organization when `domain` names that organization.
async fn changeable(
    app: &AppState,
    caller: &Caller,
    id: &str,
    domain: Option<&str>,
) -> ApiResult<ThingRow> {
    let t = store::get(&app.db, id).await?.ok_or_else(not_found)?;
    if t.user_id.as_deref() == Some(caller.id.as_str()) || caller.is_admin() {
        return Ok(t);
    }
    let names_its_org = match (domain, &t.domain) {
        (Some(d), Some(own)) => d.trim().eq_ignore_ascii_case(own),
        _ => false,
    };
    match &t.organization_id {
        Some(org) if names_its_org && app.domain.orgs.in_org(caller, org).await? => Ok(t),
        _ => Err(not_found()),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ThingUpdate {
    id: String,
    /// The thing's organization, for its members.
    domain: Option<String>,
    /// `title`, `category`, `slug` and `data` (merged: top-level keys replace, `null`
    /// removes); other keys are dropped.
    updates: Map<String, Value>,
}

/// `POST /api/data/things/update` (Key; see `changeable`).
pub async fn thing_update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<ThingUpdate>,
) -> ApiResult<Answer<Saved<Thing>>> {
    let mut t = changeable(&app, &caller, &body.id, body.domain.as_deref()).await?;
    let u = &body.updates;
    let string = |k: &str| -> ApiResult<Option<&str>> {
        match u.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::bad_request(format!(
                "`updates.{k}` must be a string"
            ))),
        }
    };
    let title = string("title")?
        .map(|v| text("title", v, 300))
        .transpose()?;
    let category = string("category")?
        .map(|v| text("category", v, 100))
        .transpose()?;
    let slug = string("slug")?
        .map(crate::domain::posts::slug)
        .transpose()?;
    let changes = match u.get("data") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err(ApiError::bad_request("`updates.data` must be an object")),
    };
    for _ in 0..records::WRITE_TRIES {
        let data = match changes {
            Some(c) => records::merge(&t.data.0, c)?,
            None => t.data.0.clone(),
        };
        let fields = ThingFields {
            title: title.as_deref().unwrap_or(&t.title),
            category: category.as_deref().unwrap_or(&t.category),
            slug: slug.as_deref().unwrap_or(&t.slug),
            data: &data,
        };
        let written = store::write(&app.db, &t.id, t.updated_at, &fields).await?;
        t = store::get(&app.db, &t.id).await?.ok_or_else(not_found)?;
        if written {
            return Ok(Answer(Saved::new(Thing::from(&t))));
        }
    }
    Err(records::RecordError::Busy.into())
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ThingDelete {
    id: String,
    /// The thing's organization, for its members.
    domain: Option<String>,
}

/// `POST /api/data/things/delete` (Key; see `changeable`).
pub async fn thing_delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<ThingDelete>,
) -> ApiResult<Answer<Deleted>> {
    let t = changeable(&app, &caller, &body.id, body.domain.as_deref()).await?;
    store::delete(&app.db, &t.id).await?;
    Ok(Answer(Deleted::new(t.id)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// Skip this many (ignored with `cursor`).
    #[serde(default)]
    offset: Offset,
    /// `next_cursor` of the previous page: the page after it (stable while things are added).
    cursor: Option<Cursor>,
}

fn cursor_of(t: &ThingRow) -> String {
    Cursor::after(t.created_at, &t.id)
}

/// `GET /api/data/things/list` (Public): newest first, by `offset` or `cursor`.
pub async fn things_list(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Answer<ThingPage>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let after = q.cursor.map(|c| (c.at, c.id));
    let offset = if after.is_some() { 0 } else { offset };
    let rows = store::list(
        &app.db,
        limit,
        offset,
        after.as_ref().map(|(at, id)| (*at, id.as_str())),
    )
    .await?;
    let total = store::count(&app.db).await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(cursor_of))
        .flatten();
    let data = rows.iter().map(Thing::from).collect();
    Ok(Answer(ThingPage {
        page: Page::new(data, total, limit, offset),
        next_cursor: next,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchQuery {
    /// Keywords: things whose title or category has every word (also as a prefix).
    #[schemars(regex(pattern = r"[^\W_]"))]
    search: String,
    /// 1 to 100, default 20.
    #[serde(default)]
    limit: Limit<20, 100>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/data/things/list/search?search=` (Public): best match first.
pub async fn things_search(
    State(app): State<AppState>,
    Query(q): Query<SearchQuery>,
) -> ApiResult<Answer<ThingMatches>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let words = crate::domain::validate::keywords(&q.search);
    if words.is_empty() {
        return Err(ApiError::bad_request(
            "`search` must contain at least one word",
        ));
    }
    let rows = store::search(&app.db, &words, limit, offset).await?;
    let data: Vec<Thing> = rows.iter().map(Thing::from).collect();
    Ok(Answer(ThingMatches {
        count: data.len(),
        data,
        limit,
        offset,
        search: words.join(" "),
    }))
}
