//! Decks: capabilities, create, list, get, update, delete.

use super::*;

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

/// The body of `update`, refused by its operation count before it becomes a map: a
/// megabyte of operations costs a scan of the first 501, not a parse of them all (H4).
pub struct UpdateBody(Map<String, Value>);

impl<S: Send + Sync> axum::extract::FromRequest<S> for UpdateBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let bytes = crate::extract::read_json_bytes(req, state).await?;
        if too_many_operations(&bytes) {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "at most {} operations per update",
                    plinth_slides::MAX_OPERATIONS
                ),
            ));
        }
        Ok(UpdateBody(crate::extract::parse_object(&bytes)?))
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

/// `POST /api/slides/update` (Editor): a replacement (`markdown` or `document`) or a
/// batch of slide `operations`, at `expected_version`.
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    UpdateBody(body): UpdateBody,
) -> ApiResult {
    let id = string_field(&body, "id")?;
    let expected = expected_version(&body)?;
    let replacement = content_of(&body, false).await?;
    let ops: Option<Vec<Operation>> = match body.get("operations") {
        None | Some(Value::Null) => None,
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
