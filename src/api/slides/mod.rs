//! Slide decks: `/api/slides*`.
//!
//! Roles (spec): an *editor* is the owner of a personal deck or a member of the deck's
//! organization; a *manager* is the owner of a personal deck, an admin of its
//! organization or a platform admin. A deck the caller cannot see answers 404.
//!
//! Every mutation runs through the deck actors ([`plinth_actors::decks`]): one at a time
//! per deck, behind the idempotency check of its `idempotency_key`. Exports and image
//! validation are queued; clients poll `jobs/{id}` and `assets/{id}`.
//!
//! This file holds what every slide handler shares (opening a deck with the caller's
//! role, running a change in the deck actor behind its idempotency key, reading deck
//! content from a body); the handlers are in one file per resource.

mod assets;
mod decks;
mod exports;
mod publish;
mod revisions;

pub use assets::*;
pub use decks::*;
pub use exports::*;
pub use publish::*;
pub use revisions::*;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use futures::FutureExt;
use plinth_slides::{Deck, Operation};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::auth::{Caller, Viewer};
use crate::db::slides::{
    self as store, DeckRow, JobRow, NewAsset, NewRevision, Published, Unpublished,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{from_object, JsonBody};
use crate::reply::Reply;
use crate::state::AppState;

use crate::domain::decks::MAX_ASSET_BYTES;
/// Image types accepted for upload (the declared `type` must match the file).
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/svg+xml"];
pub const FORMATS: [&str; 3] = ["html", "pdf", "png"];
/// Upload URLs for assets.
const UPLOAD_TTL: Duration = Duration::from_secs(15 * 60);
/// Artifact and asset download URLs (spec: five minutes).
const DOWNLOAD_TTL: Duration = Duration::from_secs(5 * 60);

// ---- access ----

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Owner,
    OrgAdmin,
    OrgMember,
    PlatformAdmin,
}

impl Role {
    fn manager(self) -> bool {
        self != Role::OrgMember
    }
    fn name(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::OrgAdmin => "org_admin",
            Role::OrgMember => "org_member",
            Role::PlatformAdmin => "platform_admin",
        }
    }
}

fn deck_not_found() -> ApiError {
    ApiError::not_found("deck not found")
}

/// The deck and the caller's role on it; 404 when it does not exist or the caller may
/// not see it (so existence cannot be probed).
async fn open(app: &AppState, caller: &Caller, deck_id: &str) -> ApiResult<(DeckRow, Role)> {
    if uuid::Uuid::parse_str(deck_id).is_err() {
        return Err(deck_not_found());
    }
    let deck = store::deck(&app.db, deck_id)
        .await?
        .ok_or_else(deck_not_found)?;
    let role = match &deck.organization_id {
        None if deck.owner_id == caller.id => Some(Role::Owner),
        None => None,
        Some(org) => match crate::db::organizations::role_of(&app.db, org, &caller.id)
            .await?
            .as_deref()
        {
            Some("admin") => Some(Role::OrgAdmin),
            Some(_) => Some(Role::OrgMember),
            None => None,
        },
    };
    let role = match role {
        Some(Role::OrgMember) | None if caller.is_admin() => Role::PlatformAdmin,
        Some(r) => r,
        None => return Err(deck_not_found()),
    };
    Ok((deck, role))
}

fn require_manager(role: Role) -> ApiResult<()> {
    if role.manager() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "this needs the deck's owner, an admin of its organization or a platform admin",
        ))
    }
}

fn stale(current: i64) -> ApiError {
    ApiError::conflict(format!(
        "the deck is at version {current}; reload it and send that as expected_version"
    ))
    .with("current_version", current)
}

/// 409 with the current version when the deck moved on; 404 when it is gone.
async fn stale_or_gone(app: &AppState, deck_id: &str) -> ApiError {
    match store::deck(&app.db, deck_id).await {
        Ok(Some(d)) => stale(d.version),
        Ok(None) => deck_not_found(),
        Err(e) => e.into(),
    }
}

fn unavailable(what: &str) -> impl Fn(crate::storage::StorageError) -> ApiError + '_ {
    move |e| {
        tracing::error!(error = %e, "{what}");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{what} is unavailable"),
        )
    }
}

// ---- idempotent changes ----

use crate::domain::idempotency::{idempotency_key, request_hash};

/// Runs a mutation in the deck actor of `scope` behind its idempotency key.
async fn change<F>(
    app: &AppState,
    scope: String,
    route: &str,
    caller: &Caller,
    body: &Map<String, Value>,
    work: F,
) -> ApiResult
where
    F: std::future::Future<Output = ApiResult> + Send + 'static,
{
    let key = idempotency_key(body)?;
    let hash = request_hash(route, &caller.id, body);
    let work = async move {
        let reply = match work.await {
            Ok(r) => r,
            Err(e) => Reply::from(e),
        };
        (reply.status.as_u16(), Value::Object(reply.body))
    }
    .boxed();
    use plinth_actors::decks::ChangeError;
    let answer = app
        .decks
        .run(scope, key, hash, work)
        .await
        .map_err(|e| match e {
            ChangeError::KeyReused => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
            }
            other => ApiError::internal(other),
        })?;
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let body = match answer.body {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Ok(Reply::with_status(status, body))
}

/// Who may make a change to a deck.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Editor,
    Manager,
}

/// The prelude every deck mutation shares: open the deck named in the request, check
/// the role, then run `work` as a change of that deck.
async fn on_deck<F, Fut>(
    app: &AppState,
    caller: &Arc<Caller>,
    body: &Map<String, Value>,
    deck_id: &str,
    need: Need,
    route: &str,
    work: F,
) -> ApiResult
where
    F: FnOnce(AppState, Arc<Caller>, DeckRow) -> Fut,
    Fut: std::future::Future<Output = ApiResult> + Send + 'static,
{
    let (deck, role) = open(app, caller, deck_id).await?;
    if need == Need::Manager {
        require_manager(role)?;
    }
    let scope = format!("deck:{}", deck.id);
    let work = work(app.clone(), caller.clone(), deck);
    change(app, scope, route, caller, body, work).await
}

fn expected_version(body: &Map<String, Value>) -> ApiResult<i64> {
    match body.get("expected_version") {
        Some(v) => v
            .as_i64()
            .filter(|v| *v >= 1)
            .ok_or_else(|| ApiError::bad_request("`expected_version` must be a positive integer")),
        None => Err(ApiError::bad_request(
            "`expected_version` is required (the deck's current `version`)",
        )),
    }
}

fn string_field(body: &Map<String, Value>, name: &str) -> ApiResult<String> {
    match body.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        Some(_) => Err(ApiError::bad_request(format!(
            "`{name}` must be a non-empty string"
        ))),
        None => Err(ApiError::bad_request(format!("`{name}` is required"))),
    }
}

// ---- content ----

/// The deck content of a create or update body: exactly one of `document`, `markdown`
/// or (create only) `template`. Returns the deck and its source kind. Parsing runs on
/// the blocking pool: half a megabyte of markdown is milliseconds of CPU (H4).
async fn content_of(
    body: &Map<String, Value>,
    allow_template: bool,
) -> ApiResult<Option<(Deck, &'static str)>> {
    let given: Vec<&str> = ["document", "markdown", "template"]
        .into_iter()
        .filter(|k| body.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    if given.len() > 1 {
        return Err(ApiError::bad_request(format!(
            "send only one of {}",
            given
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let invalid = |e: plinth_slides::Invalid| ApiError::bad_request(e.0);
    let Some(kind) = given.first() else {
        return Ok(None);
    };
    let value = &body[*kind];
    let deck = match *kind {
        "document" => {
            if !value.is_object() {
                return Err(ApiError::bad_request(
                    "`document` must be a JSON deck document (see docs/slides.md)",
                ));
            }
            let value = value.clone();
            (
                off_runtime(move || Deck::from_json(value))
                    .await?
                    .map_err(invalid)?,
                "document",
            )
        }
        "markdown" => {
            let text = value
                .as_str()
                .ok_or_else(|| ApiError::bad_request("`markdown` must be a string"))?
                .to_owned();
            (
                off_runtime(move || plinth_slides::parse_markdown(&text))
                    .await?
                    .map_err(invalid)?,
                "markdown",
            )
        }
        _ if !allow_template => {
            return Err(ApiError::bad_request("`template` is only for create"));
        }
        _ => {
            let name = value.as_str().ok_or_else(|| {
                ApiError::bad_request("`template` must be a template name (see capabilities)")
            })?;
            let deck = plinth_slides::template(name).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "unknown template `{name}`; GET /api/slides/capabilities lists them"
                ))
            })?;
            (deck, "template")
        }
    };
    Ok(Some(deck))
}

/// Runs CPU-bound deck work on the blocking pool so it never stalls the runtime threads
/// that serve every other request.
async fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(ApiError::internal)
}

/// The deck title: `title` in the body, else the document's, else the first slide's.
fn title_of(body: &Map<String, Value>, deck: &mut Deck) -> ApiResult<()> {
    match body.get("title") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t.chars().count() <= 200 => {
            deck.title = Some(t.trim().to_owned()).filter(|t| !t.is_empty())
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "`title` must be a string of at most 200 characters",
            ))
        }
    }
    if deck.title.is_none() {
        deck.title = deck
            .slides
            .iter()
            .find_map(|s| s.title.as_deref())
            .map(plinth_slides::plain);
    }
    Ok(())
}

/// Every image the deck references must be an asset of this deck that was not rejected.
async fn check_assets(app: &AppState, deck_id: Option<&str>, deck: &Deck) -> ApiResult<()> {
    let ids = deck.asset_ids();
    if ids.is_empty() {
        return Ok(());
    }
    let known = match deck_id {
        Some(id) => store::deck_assets(&app.db, id).await?,
        None => Vec::new(),
    };
    let mut unknown = Vec::new();
    for id in &ids {
        match known.iter().find(|a| &a.id == id) {
            None => unknown.push(id.clone()),
            Some(a) if a.status == "rejected" => {
                return Err(ApiError::bad_request(format!(
                    "image asset {id} was rejected: {}",
                    a.reason.as_deref().unwrap_or("invalid image")
                )))
            }
            Some(_) => {}
        }
    }
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "unknown image asset ids (upload them with assets/create first): {}",
            unknown.join(", ")
        ))
        .with("unknown_asset_ids", unknown))
    }
}

fn deck_reply(deck: &DeckRow, revision: &store::RevisionRow) -> Reply {
    let mut v = deck.to_json();
    v["content"] = revision.content.0.clone();
    v["revision"] = revision.summary.to_json();
    Reply::ok(v)
}

// ---- queries ----

#[derive(Deserialize)]
pub struct DeckQuery {
    deck_id: Option<String>,
}

fn deck_id_of(deck_id: &Option<String>) -> ApiResult<&str> {
    deck_id
        .as_deref()
        .filter(|d| !d.is_empty())
        .ok_or_else(|| ApiError::bad_request("query parameter `deck_id` is required"))
}

/// A revision of this deck; 404 otherwise.
async fn deck_revision(
    app: &AppState,
    deck: &DeckRow,
    revision_id: &str,
) -> ApiResult<store::RevisionRow> {
    store::revision(&app.db, &deck.id, revision_id)
        .await?
        .ok_or_else(|| ApiError::not_found("revision not found"))
}
