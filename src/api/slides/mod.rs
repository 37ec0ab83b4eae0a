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
mod viewer;

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

use crate::http::reply::{Answer, Recorded};
use crate::wire::slides::{
    self as wire, Asset, AssetDeleted, Capabilities, Presentation, Publication, Revision,
    Revisions, SlideDeck, SlideDeckDeleted, SlideDecks,
};
use crate::wire::True;

use crate::db::slides::{
    self as store, DeckRow, JobRow, NewAsset, NewRevision, Published, Unpublished,
};
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{from_object, JsonBody};

use crate::http::reply::Reply;
use crate::state::AppState;

use crate::domain::decks::MAX_ASSET_BYTES;
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
        Some(org) => match crate::db::organizations::role_of(&app.db, org, &caller.id).await? {
            Some(crate::states::OrgRole::Admin) => Some(Role::OrgAdmin),
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

// ---- idempotent changes ----

use crate::http::idempotency::request_hash;
use crate::http::request::NonBlank;

/// The body of a deck mutation: typed, plus the JSON as sent and its idempotency key
/// (the `Idempotency-Key` header or the body's `idempotency_key`: `api::idempotent`; a
/// repeat is told from a different request by a hash of what was sent). An `operations`
/// array past the limit is refused by a skim of the raw bytes before anything is parsed
/// (H4).
pub struct DeckChange<T>(T, Sent);

/// What the idempotency check of a change needs.
pub struct Sent {
    key: Option<String>,
    json: Map<String, Value>,
}

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S>
    for DeckChange<T>
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let headers = req.headers().clone();
        let bytes = crate::http::extract::read_json_bytes(req, state).await?;
        if too_many_operations(&bytes) {
            return Err(ApiError::bad_request(format!(
                "at most {} operations per update",
                plinth_slides::MAX_OPERATIONS
            )));
        }
        let json = crate::http::extract::parse_object(&bytes)?;
        let key = crate::api::idempotent::key(&headers, &json)?;
        Ok(DeckChange(from_object(json.clone())?, Sent { key, json }))
    }
}

impl<T: schemars::JsonSchema> crate::http::schema::DocArg for DeckChange<T> {
    fn document(op: &mut crate::http::schema::Operation, gen: &mut schemars::SchemaGenerator) {
        // Inline, with the key beside the body's own fields: one object schema whose
        // `required` the document reads (an `allOf` would hide it).
        let mut body = T::json_schema(gen);
        let key = serde_json::json!({
            "type": "string", "minLength": 1, "maxLength": 255,
            "description": "a repeat with the same key and body replays the first answer for 24 hours (not counted in a rate window); the same key with another body is a 422; the Idempotency-Key header is the same key (both, different: 400)"
        });
        let object = body.ensure_object();
        match object.get_mut("oneOf") {
            // A body of whole alternatives (`slides/create`, `update`): the key in each.
            Some(serde_json::Value::Array(branches)) => {
                for branch in branches {
                    if let Some(props) =
                        branch.get_mut("properties").and_then(|p| p.as_object_mut())
                    {
                        props.insert("idempotency_key".into(), key.clone());
                    }
                }
            }
            _ => {
                if let Some(props) = object
                    .entry("properties")
                    .or_insert_with(|| serde_json::json!({}))
                    .as_object_mut()
                {
                    props.insert("idempotency_key".into(), key);
                }
            }
        }
        op.body = Some(body);
    }
}

/// Whether the body's `operations` array has more than the allowed number of elements,
/// found by skimming (nothing is built, and the scan stops at the first one too many).
/// Anything malformed is left for the real parse to report.
fn too_many_operations(bytes: &[u8]) -> bool {
    use serde::de::{Error, IgnoredAny, SeqAccess, Visitor};
    const TOO_MANY: &str = "too many operations";

    struct Count;
    impl<'de> Deserialize<'de> for Count {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Counter;
            impl<'de> Visitor<'de> for Counter {
                type Value = Count;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an array")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                    let mut n = 0;
                    while seq.next_element::<IgnoredAny>()?.is_some() {
                        n += 1;
                        if n > plinth_slides::MAX_OPERATIONS {
                            return Err(A::Error::custom(TOO_MANY));
                        }
                    }
                    Ok(Count)
                }
            }
            d.deserialize_seq(Counter)
        }
    }
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        #[allow(dead_code)] // read only for its count
        operations: Option<Count>,
    }
    matches!(serde_json::from_slice::<Probe>(bytes), Err(e) if e.to_string().starts_with(TOO_MANY))
}

/// Runs a mutation in the deck actor of `scope` behind its idempotency key. The answer
/// is the `T` the work returns, or on a replay the recorded JSON of that same `T`.
async fn change<T, F>(
    app: &AppState,
    scope: String,
    route: &str,
    caller: &Caller,
    sent: &Sent,
    work: F,
) -> ApiResult<Recorded<T>>
where
    T: serde::Serialize,
    F: std::future::Future<Output = ApiResult<T>> + Send + 'static,
{
    let hash = request_hash(route, &caller.id, &sent.json);
    let work = async move {
        let reply = match work.await {
            Ok(value) => Reply::ok(value),
            Err(e) => Reply::from(e),
        };
        (reply.status.as_u16(), Value::Object(reply.body))
    }
    .boxed();
    let reply =
        crate::api::idempotent::answer(app.decks.run(scope, sent.key.clone(), hash, work).await)?;
    Ok(Recorded::of_record(reply))
}

/// Who may make a change to a deck.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Editor,
    Manager,
}

/// The prelude every deck mutation shares: open the deck named in the request, check
/// the role, then run `work` as a change of that deck.
async fn on_deck<T, F, Fut>(
    app: &AppState,
    caller: &Arc<Caller>,
    sent: &Sent,
    deck_id: &str,
    need: Need,
    route: &str,
    work: F,
) -> ApiResult<Recorded<T>>
where
    T: serde::Serialize,
    F: FnOnce(AppState, Arc<Caller>, DeckRow) -> Fut,
    Fut: std::future::Future<Output = ApiResult<T>> + Send + 'static,
{
    let (deck, role) = open(app, caller, deck_id).await?;
    if need == Need::Manager {
        require_manager(role)?;
    }
    let scope = format!("deck:{}", deck.id);
    let work = work(app.clone(), caller.clone(), deck);
    change(app, scope, route, caller, sent, work).await
}

/// `expected_version`: the deck's current `version`, at least 1.
fn version(v: i64) -> ApiResult<i64> {
    if v >= 1 {
        Ok(v)
    } else {
        Err(ApiError::bad_request(
            "`expected_version` must be a positive integer",
        ))
    }
}

/// A required id or name, trimmed and not empty.
fn required(name: &str, value: &str) -> ApiResult<String> {
    let v = value.trim();
    if v.is_empty() {
        return Err(ApiError::bad_request(format!(
            "`{name}` must be a non-empty string"
        )));
    }
    Ok(v.to_owned())
}

// ---- content ----

/// Deck content in a create or update body: exactly one of the three.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Content {
    /// A JSON deck document (docs/slides.md).
    #[schemars(with = "Option<plinth_slides::Deck>")]
    document: Option<Map<String, Value>>,
    /// A markdown deck (docs/slides.md).
    markdown: Option<String>,
    /// A template name from `capabilities` (create only).
    #[serde(default)]
    #[schemars(schema_with = "template_names")]
    template: Option<String>,
}

/// The template names `capabilities` lists (the closed set `template` takes).
fn template_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::wire::names_schema(plinth_slides::TEMPLATES.iter().map(|t| t.name), true)
}

/// The deck of a create or update body, its source kind and the markdown parser's
/// warnings, or `None` when the body has no content. Parsing runs on the blocking pool: half a megabyte of markdown is
/// milliseconds of CPU (H4).
async fn content_of(
    content: Content,
    allow_template: bool,
    names: ImageNames,
) -> ApiResult<Option<(Deck, &'static str, Vec<String>)>> {
    let given: Vec<&str> = [
        ("document", content.document.is_some()),
        ("markdown", content.markdown.is_some()),
        ("template", content.template.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
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
    let deck = match content {
        Content {
            document: Some(doc),
            ..
        } => {
            let (deck, warnings) = off_runtime(move || Deck::from_json_report(Value::Object(doc)))
                .await?
                .map_err(invalid)?;
            (deck, "document", warnings)
        }
        Content {
            markdown: Some(text),
            ..
        } => {
            let (deck, warnings) = off_runtime(move || {
                let resolve = |name: &str| names.resolve(name);
                plinth_slides::parse_markdown_report(
                    &text,
                    &plinth_slides::ParseOptions {
                        resolve_image: Some(&resolve),
                        images_are: "an uploaded asset as `asset:<asset id>` or the \
                                     file name it was uploaded under (`img/chart.png`)",
                    },
                )
            })
            .await?
            .map_err(invalid)?;
            (deck, "markdown", warnings)
        }
        Content {
            template: Some(_), ..
        } if !allow_template => {
            return Err(ApiError::bad_request("`template` is only for create"));
        }
        Content {
            template: Some(name),
            ..
        } => {
            let deck = plinth_slides::template(&name).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "unknown template `{name}`; GET /api/slides/capabilities lists them"
                ))
            })?;
            (deck, "template", Vec::new())
        }
        _ => return Ok(None),
    };
    Ok(Some(deck))
}

/// The file names a markdown deck may use for images (`![](chart.png)`): the ready
/// assets of one deck, by the `file` they were uploaded as. Read only after the caller's
/// access to that deck was checked, so a name never reaches another deck's asset.
#[derive(Default)]
pub(super) struct ImageNames(Vec<(String, String)>);

impl ImageNames {
    /// The ready assets of `deck_id`; when two share a name the newest wins.
    async fn of_deck(app: &AppState, deck_id: &str) -> ApiResult<ImageNames> {
        let mut ready: Vec<store::AssetRow> = store::deck_assets(&app.db, deck_id)
            .await?
            .into_iter()
            .filter(|a| a.status == plinth_vocab::AssetStatus::Ready)
            .collect();
        ready.sort_by_key(|a| std::cmp::Reverse(a.created_at));
        Ok(ImageNames(
            ready.into_iter().map(|a| (a.file, a.id)).collect(),
        ))
    }

    fn resolve(&self, name: &str) -> Option<String> {
        let name = name.strip_prefix("./").unwrap_or(name);
        self.0
            .iter()
            .find(|(file, _)| file == name)
            .map(|(_, id)| id.clone())
    }
}

/// Runs CPU-bound deck work on the blocking pool so it never stalls the runtime threads
/// that serve every other request.
async fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(ApiError::internal)
}

/// The deck title: `title` in the body, else the document's, else the first slide's.
fn title_of(title: Option<&str>, deck: &mut Deck) -> ApiResult<()> {
    match title {
        None => {}
        Some(t) if t.chars().count() <= 200 => {
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

/// Every image the deck references must be an asset of this deck (404: a reference to
/// nothing, as an unknown id is) that was not rejected (409: the asset's state).
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
            Some(a) if a.status == plinth_vocab::AssetStatus::Rejected => {
                return Err(ApiError::conflict(format!(
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
        Err(ApiError::not_found(format!(
            "unknown image asset ids (upload them with assets/create first): {}",
            unknown.join(", ")
        ))
        .with("unknown_asset_ids", unknown))
    }
}

fn deck_reply(deck: &DeckRow, revision: &store::RevisionRow) -> SlideDeck {
    SlideDeck::with_revision(deck, revision)
}

/// The answer of `create` and `update`: the deck and the parser's warnings.
fn deck_reply_warned(
    deck: &DeckRow,
    revision: &store::RevisionRow,
    warnings: Vec<String>,
) -> SlideDeck {
    SlideDeck {
        warnings: Some(warnings),
        ..SlideDeck::with_revision(deck, revision)
    }
}

// ---- queries ----

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DeckQuery {
    #[schemars(with = "NonBlank")]
    deck_id: Option<NonBlank>,
}

fn deck_id_of(deck_id: &Option<NonBlank>) -> ApiResult<&str> {
    deck_id
        .as_deref()
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
