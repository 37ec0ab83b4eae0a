//! Likes: `/api/likes*`. One like per user and entity; the entity is any id (a post, a
//! thing, an item) and is not checked. A like is its owner's: only they (or a platform
//! administrator) move or remove it; anyone else gets a 404.

use axum::extract::{Path, State};
use serde::Deserialize;

use crate::db::likes::{self as store, LikeRow};
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::Answer;
use crate::http::request::NonBlank;
use crate::state::AppState;
use crate::wire::likes::{Like, Liker, LikesOf};
use crate::wire::{Deleted, Saved};

/// Likers listed by `GET /api/likes/{id}` (the count covers all).
const LIKERS_SHOWN: i64 = 100;

fn not_found() -> ApiError {
    ApiError::not_found("like not found")
}

fn entity_id(raw: &str) -> ApiResult<String> {
    let e = raw.trim();
    if e.is_empty() || e.chars().count() > 200 {
        return Err(ApiError::bad_request(
            "`entity_id` must be a string of 1 to 200 characters",
        ));
    }
    Ok(e.to_owned())
}

fn already_liked(existing: &LikeRow) -> ApiError {
    ApiError::conflict("you already like this entity").with("id", existing.id.clone())
}

/// `GET /api/likes/{id}` (Public; `id` is the liked entity's): the count and who liked.
pub async fn get(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Answer<LikesOf>> {
    let (count, users) = store::of_entity(&app.db, &id, LIKERS_SHOWN).await?;
    Ok(Answer(LikesOf {
        entity_id: id,
        count,
        users: users
            .into_iter()
            .map(|(id, username, liked_at)| Liker {
                id,
                username,
                liked_at,
            })
            .collect(),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// The liked entity's id (1 to 200 characters).
    entity_id: NonBlank<200>,
}

/// `POST /api/likes/create` (V10): 409, naming the existing like's `id`, when the
/// caller already likes the entity.
pub async fn create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<CreateBody>,
) -> ApiResult<Answer<Saved<Like>>> {
    let entity = entity_id(&body.entity_id)?;
    if let Some(existing) = store::of(&app.db, &caller.id, &entity).await? {
        return Err(already_liked(&existing));
    }
    let like = store::create(&app.db, &caller.id, &entity).await?;
    Ok(Answer(Saved::new(Like::from(&like))))
}

/// The like, if the caller owns it (or is a platform admin).
async fn owned(app: &AppState, caller: &Caller, id: &str) -> ApiResult<LikeRow> {
    store::get(&app.db, id)
        .await?
        .filter(|l| l.user_id == caller.id || caller.is_admin())
        .ok_or_else(not_found)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    /// The entity the like moves to.
    entity_id: String,
}

/// `POST /api/likes/update` (Key, the like's owner): moves the like to `entity_id`.
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Answer<Saved<Like>>> {
    let like = owned(&app, &caller, &body.id).await?;
    let entity = entity_id(&body.entity_id)?;
    if let Some(existing) = store::of(&app.db, &like.user_id, &entity).await? {
        if existing.id != like.id {
            return Err(already_liked(&existing));
        }
    }
    let like = store::set_entity(&app.db, &like.id, &entity)
        .await?
        .ok_or_else(not_found)?;
    Ok(Answer(Saved::new(Like::from(&like))))
}

/// `POST /api/likes/delete` (Key, the like's owner).
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Deleted>> {
    let like = owned(&app, &caller, &body.id).await?;
    store::delete(&app.db, &like.id).await?;
    Ok(Answer(Deleted::new(like.id)))
}
