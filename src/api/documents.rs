//! Documents: `/api/documents*`. Organization-scoped records of a `type` with a JSON
//! `data` object. Members of the organization list, create, update and delete them;
//! `GET /api/documents/{id}` is public, as the spec's access column says: whoever holds
//! a document's id (a random UUID) can read it (docs/api.md).

use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::documents as store;
use crate::domain::records;
use crate::http::auth::{OrgMember, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::Answer;
use crate::http::request::{Limit, NonBlank, Offset};
use crate::state::AppState;
use crate::wire::documents::Document;
use crate::wire::{Data, Deleted, Page, Saved};

fn not_found() -> ApiError {
    ApiError::not_found("document not found")
}

/// A document `type`: 1 to 100 characters.
fn doc_type(raw: &str) -> ApiResult<String> {
    let t = raw.trim();
    if t.is_empty() || t.chars().count() > 100 {
        return Err(ApiError::bad_request(
            "`type` must be a string of 1 to 100 characters",
        ));
    }
    Ok(t.to_owned())
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListBody {
    /// Only documents of this type.
    r#type: Option<NonBlank<100>>,
    /// 1 to 200, default 50.
    #[serde(default, deserialize_with = "crate::http::extract::lenient")]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default, deserialize_with = "crate::http::extract::lenient")]
    offset: Offset,
}

/// `POST /api/documents` (OrgMember; GET with a query string too): the organization's
/// documents, newest first, paged.
pub async fn list(
    State(app): State<AppState>,
    g: OrgMember<ListBody>,
) -> ApiResult<Answer<Page<Document>>> {
    let (limit, offset) = (g.body.limit.get(), g.body.offset.get());
    let doc_type = g.body.r#type.as_deref().map(doc_type).transpose()?;
    let (rows, total) = store::list(&app.db, &g.org.id, doc_type.as_deref(), limit, offset).await?;
    let data = rows.iter().map(Document::from).collect();
    Ok(Answer(Page::new(data, total, limit, offset)))
}

/// `GET /api/documents/{id}` (Public).
pub async fn get(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Answer<Data<Document>>> {
    let doc = store::get(&app.db, &id).await?.ok_or_else(not_found)?;
    Ok(Answer(Data {
        data: Document::from(&doc),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// 1 to 100 characters.
    r#type: NonBlank<100>,
    /// The document's content; at most 256 KiB of JSON.
    data: Option<Map<String, Value>>,
}

/// `POST /api/documents/create` (OrgMember).
pub async fn create(
    State(app): State<AppState>,
    g: OrgMember<CreateBody>,
) -> ApiResult<Answer<Saved<Document>>> {
    let doc_type = doc_type(&g.body.r#type)?;
    let data = Value::Object(g.body.data.unwrap_or_default());
    records::check_data(&data)?;
    let id = store::create(&app.db, &g.org.id, &doc_type, &data, &g.caller.id).await?;
    let doc = store::get(&app.db, &id).await?.ok_or_else(not_found)?;
    Ok(Answer(Saved::new(Document::from(&doc))))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    /// Merged into the stored `data`: top-level keys replace, `null` removes.
    data: Map<String, Value>,
}

/// `POST /api/documents/update` (OrgMember): merges `data`; a document of another
/// organization is a 404.
pub async fn update(
    State(app): State<AppState>,
    g: OrgMember<UpdateBody>,
) -> ApiResult<Answer<Saved<Document>>> {
    let doc = store::get(&app.db, &g.body.id)
        .await?
        .filter(|d| d.organization_id == g.org.id)
        .ok_or_else(not_found)?;
    let changes = g.body.data;
    let mut doc = doc;
    for _ in 0..records::WRITE_TRIES {
        let data = records::merge(&doc.data.0, &changes)?;
        let written = store::write_data(&app.db, &doc.id, doc.version, &data).await?;
        doc = store::get(&app.db, &doc.id).await?.ok_or_else(not_found)?;
        if written {
            return Ok(Answer(Saved::new(Document::from(&doc))));
        }
    }
    Err(records::RecordError::Busy.into())
}

/// `POST /api/documents/delete` (OrgMember of the document's organization; the body
/// names only the document).
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Deleted>> {
    let doc = store::get(&app.db, &body.id).await?.ok_or_else(not_found)?;
    if !app
        .domain
        .orgs
        .in_org(&caller, &doc.organization_id)
        .await?
    {
        return Err(not_found());
    }
    store::delete(&app.db, &doc.id).await?;
    Ok(Answer(Deleted::new(doc.id)))
}
