//! Revisions: the paged list, one revision, restore.

use super::*;
use crate::http::request::{Limit, NonBlank, Offset};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RevisionsQuery {
    #[schemars(with = "NonBlank")]
    deck_id: Option<NonBlank>,
    #[serde(default)]
    limit: Limit<50, 200>,
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/slides/revisions?deck_id=` (Editor): newest first, without content, one
/// page at a time: `limit` (default 50, max 200), `offset`.
pub async fn revisions(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<RevisionsQuery>,
) -> ApiResult<Answer<Revisions>> {
    let deck_id = deck_id_of(&q.deck_id)?;
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let (deck, _) = open(&app, &caller, deck_id).await?;
    let (revs, total) = store::revisions(&app.db, &deck.id, limit, offset).await?;
    let data: Vec<Revision> = revs.iter().map(Revision::from).collect();
    Ok(Answer(Revisions {
        count: data.len(),
        data,
        total,
        limit,
        offset,
        version: deck.version,
    }))
}

/// `GET /api/slides/revisions/{id}?deck_id=` (Editor): one revision with its content.
pub async fn revision(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<DeckQuery>,
) -> ApiResult<Answer<Revision>> {
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    let rev = deck_revision(&app, &deck, &id).await?;
    Ok(Answer(Revision::from(&rev)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RevisionChange {
    deck_id: NonBlank,
    revision_id: NonBlank,
    /// The deck's current `version`.
    #[schemars(range(min = 1))]
    expected_version: i64,
}

/// `POST /api/slides/revisions/restore` (Editor): a new revision with an old one's content.
pub async fn restore(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<RevisionChange>,
) -> ApiResult<Recorded<SlideDeck>> {
    let deck_id = body.deck_id.trimmed().to_owned();
    let revision_id = body.revision_id.trimmed().to_owned();
    let expected = version(body.expected_version)?;
    on_deck(
        &app,
        &caller,
        &sent,
        &deck_id,
        Need::Editor,
        "restore",
        move |a, c, deck| async move {
            let old = deck_revision(&a, &deck, &revision_id).await?;
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
