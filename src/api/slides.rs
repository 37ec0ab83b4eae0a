//! Slide decks: `/api/slides*`.
//!
//! Roles (spec): an *editor* is the owner of a personal deck or a member of the deck's
//! organization; a *manager* is the owner of a personal deck, an admin of its
//! organization or a platform admin. A deck the caller cannot see answers 404.
//!
//! Every mutation runs through the deck actors ([`plinth_actors::decks`]): one at a time
//! per deck, behind the idempotency check of its `idempotency_key`. Exports and image
//! validation are queued; clients poll `jobs/{id}` and `assets/{id}`.

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

/// Largest image upload.
pub const MAX_ASSET_BYTES: u64 = 10 * 1024 * 1024;
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

/// Fields every mutation may carry.
fn idempotency_key(body: &Map<String, Value>) -> ApiResult<Option<String>> {
    match body.get("idempotency_key") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(k)) if !k.is_empty() && k.len() <= 255 => Ok(Some(k.clone())),
        Some(_) => Err(ApiError::bad_request(
            "`idempotency_key` must be a string of 1 to 255 characters",
        )),
    }
}

/// JSON with object keys sorted, so that equal requests hash equally.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<_> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn request_hash(route: &str, caller: &str, body: &Map<String, Value>) -> String {
    let mut body = body.clone();
    body.remove("idempotency_key");
    let mut text = format!("{route}\n{caller}\n");
    canonical(&Value::Object(body), &mut text);
    crate::crypto::sha256_hex(text.as_bytes())
}

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

// ---- endpoints ----

/// `GET /api/slides/capabilities` (Public).
pub async fn capabilities() -> ApiResult {
    Ok(Reply::ok(json!({
        "sources": ["document", "markdown", "template"],
        "formats": FORMATS,
        "fonts": [
            {"family": "DejaVu Sans", "styles": ["regular", "bold", "oblique"], "use": "text"},
            {"family": "DejaVu Sans Mono", "styles": ["regular"], "use": "code"}
        ],
        "themes": ["light", "dark"],
        "layouts": ["content", "title"],
        "blocks": ["heading", "text", "bullets", "code", "image"],
        "operations": ["insert", "delete", "move", "update", "set_notes", "hide", "show"],
        "templates": plinth_slides::TEMPLATES,
        "image_types": IMAGE_TYPES,
        "png": {"width": 1920, "height": 1080},
        "limits": {
            "slides_per_deck": plinth_slides::MAX_SLIDES,
            "blocks_per_slide": plinth_slides::MAX_BLOCKS_PER_SLIDE,
            "text_chars": plinth_slides::MAX_TEXT_CHARS,
            "markdown_bytes": plinth_slides::MAX_MARKDOWN_BYTES,
            "asset_bytes": MAX_ASSET_BYTES,
            "image_pixels": plinth_render::MAX_IMAGE_PIXELS,
            "artifact_url_seconds": DOWNLOAD_TTL.as_secs(),
            "upload_url_seconds": UPLOAD_TTL.as_secs(),
        },
        "docs": "docs/slides.md",
    })))
}

/// `POST /api/slides/create` (V10; OrgMember when `domain` is given).
pub async fn create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let (mut deck, source) = content_of(&body, true)
        .await?
        .ok_or_else(|| ApiError::bad_request("send one of `document`, `markdown` or `template`"))?;
    title_of(&body, &mut deck)?;
    let org_id = match body.get("domain") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => {
            let org = crate::db::organizations::by_domain(&app.db, d)
                .await?
                .ok_or_else(|| ApiError::not_found("organization not found"))?;
            let role = crate::db::organizations::role_of(&app.db, &org.id, &caller.id).await?;
            if role.is_none() && !caller.is_admin() {
                return Err(ApiError::forbidden(
                    "you are not a member of this organization",
                ));
            }
            Some(org.id)
        }
        Some(_) => return Err(ApiError::bad_request("`domain` must be a string")),
    };
    // A new deck has no assets yet, so any image reference is unknown.
    check_assets(&app, None, &deck).await?;
    let scope = format!("user:{}", caller.id);
    let (a, c) = (app.clone(), caller.clone());
    change(&app, scope, "create", &caller, &body, async move {
        let content = serde_json::to_value(&deck).map_err(ApiError::internal)?;
        let key = hex::encode(crate::crypto::random_bytes::<16>());
        let (deck_row, rev) = store::create_deck(
            &a.db,
            &c.id,
            org_id.as_deref(),
            &key,
            NewRevision {
                deck: &deck,
                content: &content,
                source,
                restored_from: None,
                created_by: &c.id,
            },
        )
        .await?;
        Ok(deck_reply(&deck_row, &rev))
    })
    .await
}

/// `GET /api/slides` (V10): personal decks and decks of the caller's organizations.
pub async fn list(State(app): State<AppState>, Viewer(caller): Viewer) -> ApiResult {
    let decks = store::list(&app.db, &caller.id).await?;
    let data: Vec<Value> = decks.iter().map(DeckRow::to_json).collect();
    Ok(Reply::ok(json!({ "data": data, "count": data.len() })))
}

/// `GET /api/slides/{id}`: the deck and its current revision.
pub async fn get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult {
    let (deck, role) = open(&app, &caller, &id).await?;
    let rev = store::revision(&app.db, &deck.id, &deck.current_revision_id)
        .await?
        .ok_or_else(deck_not_found)?;
    let mut reply = deck_reply(&deck, &rev);
    reply.body.insert("role".into(), json!(role.name()));
    if let Some(p) = store::active_publication_of(&app.db, &deck.id).await? {
        reply.body.insert("publication".into(), p.to_json());
    }
    Ok(reply)
}

/// `POST /api/slides/update` (Editor): a replacement (`markdown` or `document`) or a
/// batch of slide `operations`, at `expected_version`.
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let id = string_field(&body, "id")?;
    let expected = expected_version(&body)?;
    let replacement = content_of(&body, false).await?;
    let ops: Option<Vec<Operation>> = match body.get("operations") {
        None | Some(Value::Null) => None,
        // Refused by count before a single operation is parsed (H4).
        Some(Value::Array(a)) if a.len() > plinth_slides::MAX_OPERATIONS => {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "at most {} operations per update ({} sent)",
                    plinth_slides::MAX_OPERATIONS,
                    a.len()
                ),
            ))
        }
        Some(v) => Some(serde_path_to_error::deserialize(v.clone()).map_err(|e| {
            ApiError::bad_request(format!(
                "invalid `operations` at `{}`: {}",
                e.path(),
                e.inner()
            ))
        })?),
    };
    if replacement.is_some() == ops.is_some() {
        return Err(ApiError::bad_request(
            "send either a replacement (`markdown` or `document`) or `operations`",
        ));
    }
    let b = body.clone();
    on_deck(
        &app,
        &caller,
        &body,
        &id,
        Need::Editor,
        "update",
        move |a, c, deck| async move {
            let current = store::deck(&a.db, &deck.id)
                .await?
                .ok_or_else(deck_not_found)?;
            if current.version != expected {
                return Err(stale(current.version));
            }
            let (mut next, source) = match (replacement, ops) {
                (Some((deck, source)), _) => (deck, source),
                (None, Some(ops)) => {
                    let rev = store::revision(&a.db, &current.id, &current.current_revision_id)
                        .await?
                        .ok_or_else(deck_not_found)?;
                    let next = off_runtime(move || {
                        Deck::from_json(rev.content.0)
                            .map_err(ApiError::internal)?
                            .apply(&ops)
                            .map_err(|e| ApiError::bad_request(e.0))
                    })
                    .await??;
                    (next, "operations")
                }
                (None, None) => unreachable!("checked above"),
            };
            if b.contains_key("title") || source != "operations" {
                title_of(&b, &mut next)?;
            }
            check_assets(&a, Some(&current.id), &next).await?;
            let content = serde_json::to_value(&next).map_err(ApiError::internal)?;
            match store::save_revision(
                &a.db,
                &current.id,
                expected,
                NewRevision {
                    deck: &next,
                    content: &content,
                    source,
                    restored_from: None,
                    created_by: &c.id,
                },
            )
            .await?
            {
                Some((deck, rev)) => Ok(deck_reply(&deck, &rev)),
                None => Err(stale_or_gone(&a, &current.id).await),
            }
        },
    )
    .await
}

/// `POST /api/slides/delete` (manager).
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let id = string_field(&body, "id")?;
    let expected = expected_version(&body)?;
    on_deck(
        &app,
        &caller,
        &body,
        &id,
        Need::Manager,
        "delete",
        move |a, _, deck| async move {
            let revoked = store::active_publication_of(&a.db, &deck.id).await?;
            if store::delete_deck(&a.db, &deck.id, expected).await? {
                Ok(Reply::ok(json!({
                    "success": true,
                    "id": deck.id,
                    "deleted": true,
                    "revoked_publications": revoked.map(|p| vec![p.id]).unwrap_or_default(),
                })))
            } else {
                Err(stale_or_gone(&a, &deck.id).await)
            }
        },
    )
    .await
}

#[derive(Deserialize)]
pub struct DeckQuery {
    deck_id: Option<String>,
}

#[derive(Deserialize)]
pub struct RevisionsQuery {
    deck_id: Option<String>,
    limit: Option<i64>,
    offset: Option<i64>,
}

fn deck_id_of(deck_id: &Option<String>) -> ApiResult<&str> {
    deck_id
        .as_deref()
        .filter(|d| !d.is_empty())
        .ok_or_else(|| ApiError::bad_request("query parameter `deck_id` is required"))
}

/// `GET /api/slides/revisions?deck_id=` (Editor): newest first, without content, one
/// page at a time: `limit` (default 50, max 200), `offset`.
pub async fn revisions(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<RevisionsQuery>,
) -> ApiResult {
    let deck_id = deck_id_of(&q.deck_id)?;
    let limit = q.limit.unwrap_or(50);
    let offset = q.offset.unwrap_or(0);
    if !(1..=200).contains(&limit) || offset < 0 {
        return Err(ApiError::bad_request(
            "`limit` must be 1 to 200 and `offset` 0 or more",
        ));
    }
    let (deck, _) = open(&app, &caller, deck_id).await?;
    let (revs, total) = store::revisions(&app.db, &deck.id, limit, offset).await?;
    let data: Vec<Value> = revs.iter().map(store::RevisionSummary::to_json).collect();
    Ok(Reply::ok(json!({
        "data": data,
        "count": data.len(),
        "total": total,
        "limit": limit,
        "offset": offset,
        "version": deck.version,
    })))
}

/// `GET /api/slides/revisions/{id}?deck_id=` (Editor): one revision with its content.
pub async fn revision(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<DeckQuery>,
) -> ApiResult {
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    let rev = store::revision(&app.db, &deck.id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("revision not found"))?;
    Ok(Reply::ok(rev.to_json()))
}

/// `POST /api/slides/revisions/restore` (Editor): a new revision with an old one's content.
pub async fn restore(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let revision_id = string_field(&body, "revision_id")?;
    let expected = expected_version(&body)?;
    on_deck(
        &app,
        &caller,
        &body,
        &deck_id,
        Need::Editor,
        "restore",
        move |a, c, deck| async move {
            let old = store::revision(&a.db, &deck.id, &revision_id)
                .await?
                .ok_or_else(|| ApiError::not_found("revision not found"))?;
            let content = Deck::from_json(old.content.0.clone()).map_err(ApiError::internal)?;
            match store::save_revision(
                &a.db,
                &deck.id,
                expected,
                NewRevision {
                    deck: &content,
                    content: &old.content.0,
                    source: "restore",
                    restored_from: Some(&old.summary.id),
                    created_by: &c.id,
                },
            )
            .await?
            {
                Some((deck, rev)) => Ok(deck_reply(&deck, &rev)),
                None => Err(stale_or_gone(&a, &deck.id).await),
            }
        },
    )
    .await
}

#[derive(Deserialize)]
struct AssetCreate {
    file: String,
    #[serde(rename = "type")]
    mime: String,
    size: i64,
    sha256: String,
}

/// `POST /api/slides/assets/create` (Editor): reserves a private image upload.
pub async fn asset_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let req: AssetCreate = from_object(body.clone())?;
    let file = crate::api::data::clean_filename(&req.file, "file")?;
    // Short names (`png`, `jpg`, `svg`) are accepted for the MIME type they stand for.
    let mime = match req.mime.trim().to_ascii_lowercase().as_str() {
        "png" => "image/png".to_owned(),
        "jpg" | "jpeg" | "image/jpg" => "image/jpeg".to_owned(),
        "webp" => "image/webp".to_owned(),
        "svg" | "image/svg" => "image/svg+xml".to_owned(),
        other => other.to_owned(),
    };
    if !IMAGE_TYPES.contains(&mime.as_str()) {
        return Err(ApiError::bad_request(format!(
            "`type` must be one of {}",
            IMAGE_TYPES.join(", ")
        )));
    }
    if req.size < 1 || req.size as u64 > MAX_ASSET_BYTES {
        return Err(ApiError::bad_request(format!(
            "`size` must be between 1 and {MAX_ASSET_BYTES} bytes"
        ))
        .with("max_size", MAX_ASSET_BYTES));
    }
    let sha = req.sha256.trim().to_ascii_lowercase();
    if sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(ApiError::bad_request("`sha256` must be 64 hex characters"));
    }
    on_deck(
        &app,
        &caller,
        &body,
        &deck_id,
        Need::Editor,
        "assets/create",
        move |a, c, deck| async move {
            let id = uuid::Uuid::new_v4().to_string();
            let key = format!("slides/{}/assets/{id}/{file}", deck.id);
            let url = a
                .objects
                .presign_put(&key, &mime, req.size as u64, UPLOAD_TTL)
                .await
                .map_err(unavailable("object storage"))?;
            let row = store::create_asset(
                &a.db,
                NewAsset {
                    id: &id,
                    deck_id: &deck.id,
                    created_by: &c.id,
                    file: &file,
                    mime: &mime,
                    size: req.size,
                    sha256: &sha,
                    object_key: &key,
                },
            )
            .await?;
            let mut v = row.to_json();
            v["upload_url"] = json!(url);
            v["upload_method"] = json!("PUT");
            v["upload_headers"] = json!({ "Content-Type": mime });
            v["upload_expires_at"] = json!(chrono::Utc::now() + UPLOAD_TTL);
            Ok(Reply::ok(v))
        },
    )
    .await
}

/// The asset, if it belongs to the deck.
async fn deck_asset(app: &AppState, deck: &DeckRow, asset_id: &str) -> ApiResult<store::AssetRow> {
    store::asset(&app.db, asset_id)
        .await?
        .filter(|a| a.deck_id == deck.id)
        .ok_or_else(|| ApiError::not_found("asset not found"))
}

/// `POST /api/slides/assets/complete` (Editor): queues validation of the upload.
pub async fn asset_complete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let asset_id = string_field(&body, "asset_id")?;
    on_deck(
        &app,
        &caller,
        &body,
        &deck_id,
        Need::Editor,
        "assets/complete",
        move |a, _, deck| async move {
            let asset = deck_asset(&a, &deck, &asset_id).await?;
            let asset = if matches!(asset.status.as_str(), "pending_upload" | "rejected") {
                let row = store::start_validation(&a.db, &asset.id)
                    .await?
                    .ok_or_else(|| ApiError::not_found("asset not found"))?;
                a.queue
                    .push_image_check(&row.id)
                    .await
                    .map_err(|e| ApiError::internal(format!("queueing image validation: {e}")))?;
                row
            } else {
                asset
            };
            Ok(Reply::ok(asset.to_json()))
        },
    )
    .await
}

/// `GET /api/slides/assets/{id}?deck_id=` (Editor): status and, when ready, a URL valid
/// five minutes.
pub async fn asset_get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<DeckQuery>,
) -> ApiResult {
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    let asset = deck_asset(&app, &deck, &id).await?;
    let mut v = asset.to_json();
    if asset.status == "ready" {
        let url = app
            .objects
            .presign_get(&asset.object_key, DOWNLOAD_TTL)
            .await
            .map_err(unavailable("object storage"))?;
        v["url"] = json!(url);
        v["url_expires_at"] = json!(chrono::Utc::now() + DOWNLOAD_TTL);
    }
    Ok(Reply::ok(v))
}

/// `POST /api/slides/assets/delete` (Editor): only an image no retained revision uses.
pub async fn asset_delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let asset_id = string_field(&body, "asset_id")?;
    on_deck(
        &app,
        &caller,
        &body,
        &deck_id,
        Need::Editor,
        "assets/delete",
        move |a, _, deck| async move {
            let asset = deck_asset(&a, &deck, &asset_id).await?;
            if store::asset_in_use(&a.db, &deck.id, &asset.id).await? {
                return Err(ApiError::conflict(
                    "a retained revision of the deck uses this image; it cannot be deleted",
                ));
            }
            store::delete_asset(&a.db, &asset.id).await?;
            if let Err(e) = a.objects.delete(&asset.object_key).await {
                tracing::warn!(error = %e, key = asset.object_key, "asset object not deleted");
            }
            Ok(Reply::ok(
                json!({ "success": true, "id": asset.id, "deleted": true }),
            ))
        },
    )
    .await
}

async fn job_json(app: &AppState, job: &JobRow) -> ApiResult<Value> {
    let progress = if job.status == "succeeded" {
        1.0
    } else if job.total > 0 {
        job.done as f64 / job.total as f64
    } else {
        0.0
    };
    let mut artifacts = Vec::new();
    if job.status == "succeeded" {
        let list: Vec<plinth_workers::slides::Artifact> =
            serde_json::from_value(job.artifacts.0.clone()).unwrap_or_default();
        for a in list {
            let url = app
                .objects
                .presign_get(&a.key, DOWNLOAD_TTL)
                .await
                .map_err(unavailable("object storage"))?;
            artifacts.push(json!({
                "name": a.name,
                "content_type": a.content_type,
                "size": a.size,
                "slide": a.slide,
                "url": url,
            }));
        }
    }
    Ok(json!({
        "id": job.id,
        "deck_id": job.deck_id,
        "revision_id": job.revision_id,
        "kind": "export",
        "format": job.format,
        "status": job.status,
        "progress": progress,
        "slides_done": job.done,
        "slides_total": job.total,
        "attempts": job.attempts,
        "error": job.error,
        "artifacts": artifacts,
        "artifacts_expire_at": (job.status == "succeeded").then(|| chrono::Utc::now() + DOWNLOAD_TTL),
        "requested_by": job.requested_by,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }))
}

/// `POST /api/slides/exports/create` (Editor): queues rendering of a revision.
pub async fn export_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let format = string_field(&body, "format")?.to_ascii_lowercase();
    if !FORMATS.contains(&format.as_str()) {
        return Err(ApiError::bad_request(
            "`format` must be one of html, pdf, png",
        ));
    }
    let revision_id = match body.get("revision_id") {
        None | Some(Value::Null) => None,
        Some(_) => Some(string_field(&body, "revision_id")?),
    };
    on_deck(
        &app,
        &caller,
        &body,
        &deck_id,
        Need::Editor,
        "exports/create",
        move |a, c, deck| async move {
            let revision_id = revision_id.unwrap_or_else(|| deck.current_revision_id.clone());
            let rev = store::revision(&a.db, &deck.id, &revision_id)
                .await?
                .ok_or_else(|| ApiError::not_found("revision not found"))?;
            let job = store::create_job(&a.db, &deck.id, &rev.summary.id, &format, &c.id).await?;
            if let Err(e) = a.queue.push_export(&job.id).await {
                // Nothing left pending that no worker will ever run.
                store::start_job(&a.db, &job.id).await?;
                store::finish_job(
                    &a.db,
                    &job.id,
                    "failed",
                    &json!([]),
                    Some("could not be queued"),
                )
                .await?;
                return Err(ApiError::internal(format!("queueing an export: {e}")));
            }
            Ok(Reply::ok(job_json(&a, &job).await?))
        },
    )
    .await
}

async fn deck_job(app: &AppState, deck: &DeckRow, job_id: &str) -> ApiResult<JobRow> {
    store::job(&app.db, job_id)
        .await?
        .filter(|j| j.deck_id == deck.id)
        .ok_or_else(|| ApiError::not_found("job not found"))
}

/// `GET /api/slides/jobs/{id}?deck_id=` (Editor).
pub async fn job(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<DeckQuery>,
) -> ApiResult {
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    let job = deck_job(&app, &deck, &id).await?;
    Ok(Reply::ok(job_json(&app, &job).await?))
}

/// `POST /api/slides/jobs/cancel` (job requester or manager): a pending job never runs;
/// a running one stops at its next slide and leaves no artifacts.
pub async fn job_cancel(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let job_id = string_field(&body, "job_id")?;
    let (deck, role) = open(&app, &caller, &deck_id).await?;
    let job = deck_job(&app, &deck, &job_id).await?;
    if job.requested_by != caller.id {
        require_manager(role)?;
    }
    let a = app.clone();
    change(
        &app,
        format!("deck:{}", deck.id),
        "jobs/cancel",
        &caller,
        &body,
        async move {
            let (cancelled, job) = store::cancel_job(&a.db, &job.id)
                .await?
                .ok_or_else(|| ApiError::not_found("job not found"))?;
            if !cancelled {
                return Err(ApiError::conflict(format!(
                    "the job already ended ({}); only pending or running jobs can be cancelled",
                    job.status
                ))
                .with("status", job.status));
            }
            Ok(Reply::ok(job_json(&a, &job).await?))
        },
    )
    .await
}

/// Audience content plus short-lived URLs of its images.
async fn audience_json(app: &AppState, deck_id: &str, content: &Value) -> ApiResult<Value> {
    let deck = Deck::from_json(content.clone()).map_err(ApiError::internal)?;
    let audience = deck.audience();
    let mut images = Map::new();
    let ids = audience.asset_ids();
    // One query for the deck's assets, not one per image.
    let assets = if ids.is_empty() {
        Vec::new()
    } else {
        store::deck_assets(&app.db, deck_id).await?
    };
    for id in ids {
        if let Some(a) = assets.iter().find(|a| a.id == id && a.status == "ready") {
            let url = app
                .objects
                .presign_get(&a.object_key, DOWNLOAD_TTL)
                .await
                .map_err(unavailable("object storage"))?;
            images.insert(
                id,
                json!({ "url": url, "width": a.width, "height": a.height }),
            );
        }
    }
    let mut v = serde_json::to_value(&audience).map_err(ApiError::internal)?;
    v["images"] = Value::Object(images);
    Ok(v)
}

/// `POST /api/slides/publish` (manager): a revision that rendered successfully becomes
/// the deck's active publication (replacing any previous one).
pub async fn publish(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let revision_id = string_field(&body, "revision_id")?;
    let expected = expected_version(&body)?;
    on_deck(
        &app,
        &caller,
        &body,
        &deck_id,
        Need::Manager,
        "publish",
        move |a, c, deck| async move {
            let rev = store::revision(&a.db, &deck.id, &revision_id)
                .await?
                .ok_or_else(|| ApiError::not_found("revision not found"))?;
            if !store::revision_rendered(&a.db, &rev.summary.id).await? {
                return Err(ApiError::conflict(
                    "this revision has not rendered successfully; export it first (exports/create)",
                ));
            }
            let audience = Deck::from_json(rev.content.0.clone())
                .map_err(ApiError::internal)?
                .audience();
            let content = serde_json::to_value(&audience).map_err(ApiError::internal)?;
            match store::publish(&a.db, &deck.id, expected, &rev.summary.id, &content, &c.id)
                .await?
            {
                Published::Done(p) => {
                    let mut v = p.to_json();
                    v["url"] = json!(format!("{}/api/slides/public/{}", a.public_url, p.id));
                    Ok(Reply::ok(v))
                }
                Published::StaleVersion => Err(stale_or_gone(&a, &deck.id).await),
            }
        },
    )
    .await
}

/// `POST /api/slides/unpublish` (manager): revokes the active publication.
pub async fn unpublish(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> ApiResult {
    let deck_id = string_field(&body, "deck_id")?;
    let expected = expected_version(&body)?;
    on_deck(
        &app,
        &caller,
        &body,
        &deck_id,
        Need::Manager,
        "unpublish",
        move |a, _, deck| async move {
            match store::unpublish(&a.db, &deck.id, expected).await? {
                Unpublished::Revoked(ids) if ids.is_empty() => {
                    Err(ApiError::not_found("the deck has no active publication"))
                }
                Unpublished::Revoked(ids) => Ok(Reply::ok(json!({
                    "success": true,
                    "deck_id": deck.id,
                    "status": "revoked",
                    "revoked_publications": ids,
                }))),
                Unpublished::StaleVersion => Err(stale_or_gone(&a, &deck.id).await),
            }
        },
    )
    .await
}

/// `GET /api/slides/public/{id}` (Public): an active publication's audience content.
pub async fn public(State(app): State<AppState>, Path(id): Path<String>) -> ApiResult {
    let p = store::publication(&app.db, &id)
        .await?
        .filter(|p| p.status == "active")
        .ok_or_else(|| ApiError::not_found("publication not found"))?;
    let mut v = p.to_json();
    v["content"] = audience_json(&app, &p.deck_id, &p.content.0).await?;
    Ok(Reply::ok(v))
}

#[derive(Deserialize)]
pub struct PresentBody {
    id: String,
    key: String,
}

/// `POST /api/slides/present` (Public): the current revision as audience content, for
/// whoever holds the deck's presentation key.
pub async fn present(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<PresentBody>,
) -> ApiResult {
    let deck = match uuid::Uuid::parse_str(&body.id) {
        Ok(_) => store::deck(&app.db, &body.id).await?,
        Err(_) => None,
    }
    .ok_or_else(deck_not_found)?;
    if !crate::crypto::ct_eq(deck.presentation_key().as_bytes(), body.key.as_bytes()) {
        return Err(ApiError::forbidden("the presentation key does not match"));
    }
    let rev = store::revision(&app.db, &deck.id, &deck.current_revision_id)
        .await?
        .ok_or_else(deck_not_found)?;
    Ok(Reply::ok(json!({
        "deck_id": deck.id,
        "version": deck.version,
        "revision_id": rev.summary.id,
        "content": audience_json(&app, &deck.id, &rev.content.0).await?,
    })))
}
