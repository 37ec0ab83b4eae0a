//! Decks: capabilities, create, list, get, update, delete.

use super::*;
use crate::http::request::NonBlank;

/// `GET /api/slides/capabilities` (Public).
pub async fn capabilities() -> ApiResult<Answer<Capabilities>> {
    use crate::wire::slides::{Aspects, MarpSupport, Size, SlideLimits, Template};
    let size = |width, height| Size { width, height };
    Ok(Answer(Capabilities {
        sources: &["document", "markdown", "template"],
        formats: plinth_vocab::ExportFormat::ALL,
        fonts: plinth_render::font_families()
            .into_iter()
            .map(Into::into)
            .collect(),
        themes: &["light", "dark"],
        layouts: &["content", "title"],
        blocks: plinth_slides::BLOCK_TYPES,
        operations: &[
            "insert",
            "delete",
            "move",
            "update",
            "set_notes",
            "hide",
            "show",
        ],
        templates: plinth_slides::TEMPLATES
            .iter()
            .map(|t| Template {
                name: t.name,
                description: t.description,
            })
            .collect(),
        image_types: plinth_vocab::ImageFormat::mimes(),
        png: size(1920, 1080),
        // A 4:3 deck (`aspect`, Marp's `size: 4:3`) renders at 1440x1080.
        aspects: Aspects {
            wide: size(1920, 1080),
            standard: size(1440, 1080),
        },
        marp: MarpSupport {
            themes: &["default", "gaia", "uncover"],
            classes: &["lead", "invert"],
        },
        limits: SlideLimits {
            slides_per_deck: plinth_slides::MAX_SLIDES,
            blocks_per_slide: plinth_slides::MAX_BLOCKS_PER_SLIDE,
            text_chars: plinth_slides::MAX_TEXT_CHARS,
            markdown_bytes: plinth_slides::MAX_MARKDOWN_BYTES,
            nesting: plinth_slides::MAX_NESTING,
            table_columns: plinth_slides::MAX_TABLE_COLUMNS,
            table_cells: plinth_slides::MAX_TABLE_CELLS,
            asset_bytes: MAX_ASSET_BYTES,
            image_pixels: plinth_render::MAX_IMAGE_PIXELS,
            artifact_url_seconds: DOWNLOAD_TTL.as_secs(),
            upload_url_seconds: UPLOAD_TTL.as_secs(),
        },
        docs: "docs/slides.md",
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(transform = create_content)]
pub struct CreateBody {
    #[serde(flatten)]
    content: Content,
    /// At most 200 characters; default: the document's title, else the first slide's.
    #[schemars(length(max = 200))]
    title: Option<String>,
    /// An organization the caller belongs to; without it the deck is personal.
    domain: Option<String>,
}

/// `POST /api/slides/create` (V10; OrgMember when `domain` is given).
pub async fn create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<CreateBody>,
) -> ApiResult<Recorded<SlideDeck>> {
    // A new deck has no assets yet: an image file name cannot resolve on create.
    let (mut deck, source, warnings) = content_of(body.content, true, ImageNames::default())
        .await?
        .ok_or_else(|| ApiError::bad_request("send one of `document`, `markdown` or `template`"))?;
    title_of(body.title.as_deref(), &mut deck)?;
    let org_id = app
        .domain
        .orgs
        .member_org(&caller, body.domain.as_deref())
        .await?;
    // A new deck has no assets yet, so any image reference is unknown.
    check_assets(&app, None, &deck).await?;
    let scope = format!("user:{}", caller.id);
    let (a, c) = (app.clone(), caller.clone());
    change(&app, scope, "create", &caller, &sent, async move {
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
        Ok(deck_reply_warned(&deck_row, &rev, warnings))
    })
    .await
}

/// `GET /api/slides` (V10): personal decks and decks of the caller's organizations.
pub async fn list(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<SlideDecks>> {
    let decks = store::list(&app.db, &caller.id).await?;
    let data: Vec<SlideDeck> = decks.iter().map(SlideDeck::from).collect();
    Ok(Answer(SlideDecks {
        count: data.len(),
        data,
    }))
}

/// `GET /api/slides/{id}`: the deck and its current revision.
pub async fn get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult<Answer<SlideDeck>> {
    let (deck, role) = open(&app, &caller, &id).await?;
    let rev = store::revision(&app.db, &deck.id, &deck.current_revision_id)
        .await?
        .ok_or_else(deck_not_found)?;
    let publication = store::active_publication_of(&app.db, &deck.id).await?;
    Ok(Answer(SlideDeck {
        role: Some(role.name()),
        publication: publication.as_ref().map(Publication::from),
        ..SlideDeck::with_revision(&deck, &rev)
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(transform = update_content)]
pub struct UpdateBody {
    /// The deck.
    id: NonBlank,
    /// The deck's current `version`; a stale one is a 409 with `current_version`.
    #[schemars(range(min = 1))]
    expected_version: i64,
    /// A replacement of the whole deck (`document` or `markdown`)...
    #[serde(flatten)]
    content: Content,
    /// ...or a batch of at most 500 slide operations (docs/slides.md), applied in order,
    /// all or nothing.
    #[schemars(length(max = plinth_slides::MAX_OPERATIONS))]
    operations: Option<Vec<Operation>>,
    /// At most 200 characters.
    #[schemars(length(max = 200))]
    title: Option<String>,
}

/// A create's content: exactly one of `document`, `markdown` and `template`.
fn create_content(schema: &mut schemars::Schema) {
    exactly_one_of(
        schema,
        "DeckFrom",
        &["document", "markdown", "template"],
        &[],
    );
}

/// An update's change: exactly one of `document`, `markdown` and `operations`; never a
/// `template` (a template makes a new deck).
fn update_content(schema: &mut schemars::Schema) {
    exactly_one_of(
        schema,
        "DeckUpdateWith",
        &["document", "markdown", "operations"],
        &["template"],
    );
}

/// The body as `oneOf` whole bodies, one per field of `one`: that field set (not null)
/// and required, the others of `one` and those of `never` null or absent, every other
/// property as it was. A body that sets none or two is a 400 (`content_of`, `update`),
/// which the document states this way; each branch is a whole body, titled (`DeckFrom
/// Markdown`), so generated clients get one complete model per choice.
fn exactly_one_of(schema: &mut schemars::Schema, title: &str, one: &[&str], never: &[&str]) {
    let (Some(Value::Object(properties)), required) = (
        schema.remove("properties"),
        schema
            .remove("required")
            .unwrap_or(Value::Array(Vec::new())),
    ) else {
        return;
    };
    let null = serde_json::json!({"type": "null"});
    let branches: Vec<Value> = one
        .iter()
        .map(|chosen| {
            let mut props = properties.clone();
            for field in one.iter().chain(never) {
                if field != chosen {
                    props.insert((*field).to_owned(), null.clone());
                }
            }
            if let Some(Value::Object(p)) = props.get_mut(*chosen) {
                // `["string", "null"]` becomes `"string"`, and `anyOf: [X, null]` becomes
                // X: the chosen field is set.
                if let Some(Value::Array(types)) = p.get("type") {
                    let set: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                    p.insert("type".into(), set.first().cloned().unwrap_or_default());
                }
                if let Some(Value::Array(enums)) = p.get_mut("enum") {
                    enums.retain(|v| !v.is_null());
                }
                if p.get("default") == Some(&Value::Null) {
                    p.remove("default");
                }
                if let Some(Value::Array(any)) = p.remove("anyOf") {
                    let mut set = any.into_iter().filter(|s| *s != null);
                    match (set.next(), set.next()) {
                        (Some(Value::Object(only)), None) => p.extend(only),
                        (first, second) => {
                            let rest: Vec<Value> = first.into_iter().chain(second).chain(set).collect();
                            p.insert("anyOf".into(), Value::Array(rest));
                        }
                    }
                }
            }
            let mut needed = required.as_array().cloned().unwrap_or_default();
            needed.push(Value::from(*chosen));
            let mut name = title.to_owned();
            name.push_str(&chosen[..1].to_ascii_uppercase());
            name.push_str(&chosen[1..]);
            serde_json::json!({"title": name, "type": "object", "properties": props, "required": needed})
        })
        .collect();
    schema.insert("oneOf".into(), Value::Array(branches));
}

/// `POST /api/slides/update` (Editor): a replacement (`markdown` or `document`) or a
/// batch of slide `operations`, at `expected_version`.
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<UpdateBody>,
) -> ApiResult<Recorded<SlideDeck>> {
    let id = body.id.trimmed().to_owned();
    let expected = version(body.expected_version)?;
    // Image file names resolve to this deck's ready assets, read once the caller's
    // access to the deck is checked (`check_assets` checks the ids again in the actor).
    let names = match &body.content.markdown {
        Some(_) => {
            let (deck, _) = open(&app, &caller, &id).await?;
            ImageNames::of_deck(&app, &deck.id).await?
        }
        None => ImageNames::default(),
    };
    let replacement = content_of(body.content, false, names).await?;
    let ops = body.operations;
    if replacement.is_some() == ops.is_some() {
        return Err(ApiError::bad_request(
            "send either a replacement (`markdown` or `document`) or `operations`",
        ));
    }
    let title = body.title;
    on_deck(
        &app,
        &caller,
        &sent,
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
            let (mut next, source, warnings) = match (replacement, ops) {
                (Some((deck, source, warnings)), _) => (deck, source, warnings),
                (None, Some(ops)) => {
                    let rev = store::revision(&a.db, &current.id, &current.current_revision_id)
                        .await?
                        .ok_or_else(deck_not_found)?;
                    let (next, warnings) = off_runtime(move || {
                        Deck::from_json(rev.content.0)
                            .map_err(ApiError::internal)?
                            .apply(&ops)
                            .map_err(|e| ApiError::bad_request(e.0))
                    })
                    .await??;
                    (next, "operations", warnings)
                }
                (None, None) => unreachable!("checked above"),
            };
            if title.is_some() || source != "operations" {
                title_of(title.as_deref(), &mut next)?;
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
                Some((deck, rev)) => Ok(deck_reply_warned(&deck, &rev, warnings)),
                None => Err(stale_or_gone(&a, &current.id).await),
            }
        },
    )
    .await
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DeleteBody {
    /// The deck.
    id: NonBlank,
    /// The deck's current `version`.
    #[schemars(range(min = 1))]
    expected_version: i64,
}

/// `POST /api/slides/delete` (manager).
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<DeleteBody>,
) -> ApiResult<Recorded<SlideDeckDeleted>> {
    let id = body.id.trimmed().to_owned();
    let expected = version(body.expected_version)?;
    on_deck(
        &app,
        &caller,
        &sent,
        &id,
        Need::Manager,
        "delete",
        move |a, _, deck| async move {
            let revoked = store::active_publication_of(&a.db, &deck.id).await?;
            if store::delete_deck(&a.db, &deck.id, expected).await? {
                Ok(SlideDeckDeleted {
                    success: True,
                    id: deck.id,
                    deleted: True,
                    revoked_publications: revoked.map(|p| vec![p.id]).unwrap_or_default(),
                })
            } else {
                Err(stale_or_gone(&a, &deck.id).await)
            }
        },
    )
    .await
}
