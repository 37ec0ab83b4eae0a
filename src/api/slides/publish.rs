//! Publication and audience content: publish, unpublish, public, present.

use axum::response::IntoResponse;

use super::*;
use crate::http::reply::OrPage;
use crate::http::request::NonBlank;
use crate::states::PublicationStatus;

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
        if let Some(a) = assets
            .iter()
            .find(|a| a.id == id && a.status == plinth_vocab::AssetStatus::Ready)
        {
            let url = app.objects.presign_get(&a.object_key, DOWNLOAD_TTL).await?;
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

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PublishBody {
    deck_id: NonBlank,
    /// A revision with a successful export.
    revision_id: NonBlank,
    /// The deck's current `version`.
    #[schemars(range(min = 1))]
    expected_version: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UnpublishBody {
    deck_id: NonBlank,
    /// The deck's current `version`.
    #[schemars(range(min = 1))]
    expected_version: i64,
}

/// `POST /api/slides/publish` (manager): a revision that rendered successfully becomes
/// the deck's active publication (replacing any previous one).
pub async fn publish(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<PublishBody>,
) -> ApiResult<Recorded<Publication>> {
    let deck_id = body.deck_id.trimmed().to_owned();
    let revision_id = body.revision_id.trimmed().to_owned();
    let expected = version(body.expected_version)?;
    on_deck(
        &app,
        &caller,
        &sent,
        &deck_id,
        Need::Manager,
        "publish",
        move |a, c, deck| async move {
            let rev = deck_revision(&a, &deck, &revision_id).await?;
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
                Published::Done(p) => Ok(Publication {
                    url: Some(format!("{}/api/slides/public/{}", a.public_url, p.id)),
                    ..Publication::from(&p)
                }),
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
    DeckChange(body, sent): DeckChange<UnpublishBody>,
) -> ApiResult<Recorded<wire::Unpublished>> {
    let deck_id = body.deck_id.trimmed().to_owned();
    let expected = version(body.expected_version)?;
    on_deck(
        &app,
        &caller,
        &sent,
        &deck_id,
        Need::Manager,
        "unpublish",
        move |a, _, deck| async move {
            match store::unpublish(&a.db, &deck.id, expected).await? {
                Unpublished::Revoked(ids) if ids.is_empty() => {
                    Err(ApiError::not_found("the deck has no active publication"))
                }
                Unpublished::Revoked(ids) => Ok(wire::Unpublished {
                    success: True,
                    deck_id: deck.id,
                    status: PublicationStatus::Revoked,
                    revoked_publications: ids,
                }),
                Unpublished::StaleVersion => Err(stale_or_gone(&a, &deck.id).await),
            }
        },
    )
    .await
}

/// `GET /api/slides/public/{id}` (Public): an active publication's audience content;
/// to a browser (`Accept: text/html`) the audience viewer page instead, and a 404 page
/// for a publication that is unknown or withdrawn.
pub async fn public(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
) -> ApiResult<OrPage<Publication>> {
    let html = viewer::wants_html(&headers);
    let Some(p) = store::publication(&app.db, &id)
        .await?
        .filter(|p| p.status == PublicationStatus::Active)
    else {
        return if html {
            Ok(OrPage::page(viewer::not_found_page()))
        } else {
            Err(ApiError::not_found("publication not found"))
        };
    };
    if html {
        return Ok(OrPage::page(
            viewer::page(&app, &p.id, &p.deck_id, &p.content.0).await?,
        ));
    }
    let answer = OrPage::answer(Publication {
        content: Some(audience_json(&app, &p.deck_id, &p.content.0).await?),
        ..Publication::from(&p)
    });
    Ok(OrPage::page(viewer::vary_accept(answer.into_response())))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PresentBody {
    id: String,
    key: String,
}

/// `POST /api/slides/present` (Public): the current revision as audience content, for
/// whoever holds the deck's presentation key.
pub async fn present(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<PresentBody>,
) -> ApiResult<Answer<Presentation>> {
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
    Ok(Answer(Presentation {
        content: audience_json(&app, &deck.id, &rev.content.0).await?,
        deck_id: deck.id,
        version: deck.version,
        revision_id: rev.summary.id,
    }))
}
