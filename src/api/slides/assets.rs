//! Image assets: reserve an upload, complete it (queues validation), read, delete.

use super::*;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AssetCreate {
    /// The deck the image belongs to.
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    deck_id: String,
    /// The file name (kept in the object key).
    #[schemars(regex(pattern = r"[A-Za-z0-9_]"))]
    file: String,
    /// `image/png`, `image/jpeg`, `image/webp` or `image/svg+xml` (or `png`, `jpg`, `webp`, `svg`).
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["image/png", "image/jpeg", "image/webp", "image/svg+xml", "png", "jpg", "jpeg", "webp", "svg", "image/jpg", "image/svg"]))]
    mime: String,
    /// Bytes, at most 10 MiB.
    #[schemars(range(min = 1, max = 10485760))]
    size: i64,
    /// Hex SHA-256 of the file, checked when it is validated.
    #[schemars(regex(pattern = r"^\s*[0-9A-Fa-f]{64}\s*$"))]
    sha256: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AssetRef {
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    deck_id: String,
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    asset_id: String,
}

/// `POST /api/slides/assets/create` (Editor): reserves a private image upload.
pub async fn asset_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(req, sent): DeckChange<AssetCreate>,
) -> ApiResult<Recorded<Asset>> {
    let deck_id = required("deck_id", &req.deck_id)?;
    let file = crate::domain::validate::clean_filename(&req.file, "file")?;
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
        &sent,
        &deck_id,
        Need::Editor,
        "assets/create",
        move |a, c, deck| async move {
            let id = uuid::Uuid::new_v4().to_string();
            let key = format!("slides/{}/assets/{id}/{file}", deck.id);
            let url = a
                .objects
                .presign_put(&key, &mime, req.size as u64, true, UPLOAD_TTL)
                .await?;
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
            Ok(Reply::ok(Asset {
                upload_url: Some(url),
                upload_method: Some("PUT"),
                upload_headers: Some(json!({ "Content-Type": mime })),
                upload_expires_at: Some(chrono::Utc::now() + UPLOAD_TTL),
                ..Asset::from(&row)
            }))
        },
    )
    .await
    .map(Recorded::from)
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
    DeckChange(body, sent): DeckChange<AssetRef>,
) -> ApiResult<Recorded<Asset>> {
    let deck_id = required("deck_id", &body.deck_id)?;
    let asset_id = required("asset_id", &body.asset_id)?;
    on_deck(
        &app,
        &caller,
        &sent,
        &deck_id,
        Need::Editor,
        "assets/complete",
        move |a, _, deck| async move {
            let asset = deck_asset(&a, &deck, &asset_id).await?;
            let asset = if matches!(asset.status.as_str(), "pending_upload" | "rejected") {
                // The move to `validating` and the queued check commit together.
                store::start_validation(&a.db, &asset.id)
                    .await?
                    .ok_or_else(|| ApiError::not_found("asset not found"))?
            } else {
                asset
            };
            Ok(Reply::ok(Asset::from(&asset)))
        },
    )
    .await
    .map(Recorded::from)
}

/// `GET /api/slides/assets/{id}?deck_id=` (Editor): status and, when ready, a URL valid
/// five minutes.
pub async fn asset_get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<DeckQuery>,
) -> ApiResult<Answer<Asset>> {
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    let asset = deck_asset(&app, &deck, &id).await?;
    let mut v = Asset::from(&asset);
    if asset.status == "ready" {
        let url = app
            .objects
            .presign_get(&asset.object_key, DOWNLOAD_TTL)
            .await?;
        v.url = Some(url);
        v.url_expires_at = Some(chrono::Utc::now() + DOWNLOAD_TTL);
    }
    Ok(Answer(v))
}

/// `POST /api/slides/assets/delete` (Editor): only an image no retained revision uses.
pub async fn asset_delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<AssetRef>,
) -> ApiResult<Recorded<AssetDeleted>> {
    let deck_id = required("deck_id", &body.deck_id)?;
    let asset_id = required("asset_id", &body.asset_id)?;
    on_deck(
        &app,
        &caller,
        &sent,
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
            // The row is gone; removing the object is best effort and happens outside
            // the deck's serialized section, so slow storage never holds the deck.
            let (objects, key) = (a.objects.clone(), asset.object_key.clone());
            tokio::spawn(async move {
                if let Err(e) = objects.delete(&key).await {
                    tracing::warn!(error = %e, key, "asset object not deleted");
                }
            });
            Ok(Reply::ok(AssetDeleted {
                success: True,
                id: asset.id,
                deleted: True,
            }))
        },
    )
    .await
    .map(Recorded::from)
}
