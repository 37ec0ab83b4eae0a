//! Localizations: `/api/data/localizations*`. One translated `value` per entity,
//! language tag and name; readable by anyone, changed by their creator (or a platform
//! admin; anyone else gets a 404).

use axum::extract::{Path, State};
use serde::Deserialize;

use crate::db::localizations::{self as store, LocalizationRow};
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::Answer;
use crate::http::request::NonBlank;
use crate::state::AppState;
use crate::wire::localizations::{Localization, Translations};
use crate::wire::{Data, Deleted, Saved};

/// Longest translated value.
const MAX_VALUE_CHARS: usize = 64 * 1024;

fn not_found() -> ApiError {
    ApiError::not_found("localization not found")
}

fn short(field: &str, raw: &str, max: usize) -> ApiResult<String> {
    let v = raw.trim();
    if v.is_empty() || v.chars().count() > max {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be a string of 1 to {max} characters"
        )));
    }
    Ok(v.to_owned())
}

/// A BCP 47 language tag of the usual shape (`en`, `pt-BR`, `zh-Hant-TW`), kept as sent.
fn language_tag(raw: &str) -> ApiResult<String> {
    let t = raw.trim();
    let mut parts = t.split('-');
    let primary_ok = parts
        .next()
        .is_some_and(|p| (2..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphabetic()));
    let rest_ok =
        parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if !(primary_ok && rest_ok) || t.len() > 35 {
        return Err(ApiError::bad_request(
            "`language_tag` must be a BCP 47 language tag such as en, pt-BR or zh-Hant-TW",
        ));
    }
    Ok(t.to_owned())
}

fn value(raw: &str) -> ApiResult<&str> {
    if raw.chars().count() > MAX_VALUE_CHARS {
        return Err(ApiError::bad_request(format!(
            "`value` may have at most {MAX_VALUE_CHARS} characters"
        )));
    }
    Ok(raw)
}

/// `GET /api/data/localizations/{id}` (Public).
pub async fn localization_get(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Answer<Data<Localization>>> {
    let row = store::get(&app.db, &id).await?.ok_or_else(not_found)?;
    Ok(Answer(Data { data: row.into() }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct LocalizationCreate {
    /// The translated entity's id (1 to 200 characters; not checked against other tables).
    entity_id: NonBlank<200>,
    /// BCP 47, e.g. `en`, `pt-BR`.
    #[schemars(
        regex(pattern = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"),
        length(max = 35)
    )]
    language_tag: String,
    /// What is translated (`title`, `description`, ...): 1 to 200 characters.
    name: NonBlank<200>,
    /// The translation (at most 65,536 characters; empty allowed).
    #[schemars(length(max = 65536))]
    value: String,
}

/// `POST /api/data/localizations/create` (V10): 409 when the entity already has this
/// name in this language.
pub async fn localization_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<LocalizationCreate>,
) -> ApiResult<Answer<Saved<Localization>>> {
    let entity = short("entity_id", &body.entity_id, 200)?;
    let tag = language_tag(&body.language_tag)?;
    let name = short("name", &body.name, 200)?;
    let row = store::create(
        &app.db,
        &entity,
        &tag,
        &name,
        value(&body.value)?,
        &caller.id,
    )
    .await?;
    Ok(Answer(Saved::new(row.into())))
}

/// The localization if the caller created it (or is a platform admin).
async fn owned(app: &AppState, caller: &Caller, id: &str) -> ApiResult<LocalizationRow> {
    store::get(&app.db, id)
        .await?
        .filter(|l| l.user_id.as_deref() == Some(caller.id.as_str()) || caller.is_admin())
        .ok_or_else(not_found)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct LocalizationUpdate {
    id: String,
    value: String,
}

/// `POST /api/data/localizations/update` (Key, the creator): sets `value`.
pub async fn localization_update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<LocalizationUpdate>,
) -> ApiResult<Answer<Saved<Localization>>> {
    let l = owned(&app, &caller, &body.id).await?;
    let row = store::set_value(&app.db, &l.id, value(&body.value)?)
        .await?
        .ok_or_else(not_found)?;
    Ok(Answer(Saved::new(row.into())))
}

/// `POST /api/data/localizations/delete` (Key, the creator).
pub async fn localization_delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Deleted>> {
    let l = owned(&app, &caller, &body.id).await?;
    store::delete(&app.db, &l.id).await?;
    Ok(Answer(Deleted::new(l.id)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EntityBody {
    entity_id: String,
}

/// `POST /api/data/localizations/get-by-entity-id` (Public): every translation of the
/// entity, by language tag then name.
pub async fn localizations_of_entity(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<EntityBody>,
) -> ApiResult<Answer<Translations>> {
    let data: Vec<Localization> = store::of_entity(&app.db, body.entity_id.trim())
        .await?
        .into_iter()
        .map(Localization::from)
        .collect();
    Ok(Answer(Translations {
        entity_id: body.entity_id.trim().to_owned(),
        count: data.len(),
        data,
    }))
}
