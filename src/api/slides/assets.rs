//! Image assets: reserve an upload, complete it (queues validation), read, delete; or
//! all of it in one request (`assets/upload`).

use super::*;
use crate::http::request::NonBlank;
use plinth_vocab::ImageFormat;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AssetCreate {
    /// The deck the image belongs to.
    deck_id: NonBlank,
    /// The file name (kept in the object key).
    #[schemars(regex(pattern = r"[A-Za-z0-9_]"))]
    file: String,
    /// `image/png`, `image/jpeg`, `image/webp` or `image/svg+xml` (or `png`, `jpg`, `webp`, `svg`).
    #[serde(rename = "type")]
    #[schemars(schema_with = "image_type_schema")]
    mime: String,
    /// Bytes, at most 10 MiB.
    #[schemars(range(min = 1, max = 10485760))]
    size: i64,
    /// Hex SHA-256 of the file, checked when it is validated.
    #[schemars(regex(pattern = r"^\s*[0-9A-Fa-f]{64}\s*$"))]
    sha256: String,
}

/// Every spelling `assets/create` accepts for `type`, from the one table of them.
fn image_type_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::wire::names_schema(ImageFormat::SPELLINGS.iter().map(|(name, _)| *name), false)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AssetRef {
    deck_id: NonBlank,
    asset_id: NonBlank,
}

/// `POST /api/slides/assets/create` (Editor): reserves a private image upload.
pub async fn asset_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(req, sent): DeckChange<AssetCreate>,
) -> ApiResult<Recorded<Asset>> {
    let deck_id = req.deck_id.trimmed().to_owned();
    let file = asset_file(&req.file)?;
    // Short names (`png`, `jpg`, `svg`) are accepted for the MIME type they stand for.
    let Some(mime) = ImageFormat::named(&req.mime).map(ImageFormat::mime) else {
        return Err(ApiError::bad_request(format!(
            "`type` must be one of {}",
            ImageFormat::mimes().join(", ")
        )));
    };
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
            let key = object_key(&deck.id, &id, &file);
            let url = a
                .objects
                .presign_put(&key, mime, req.size as u64, true, UPLOAD_TTL)
                .await?;
            let row = store::create_asset(
                &a.db,
                NewAsset {
                    id: &id,
                    deck_id: &deck.id,
                    created_by: &c.id,
                    file: &file,
                    mime,
                    size: req.size,
                    sha256: &sha,
                    object_key: &key,
                },
            )
            .await?;
            Ok(Asset {
                upload_url: Some(url),
                upload_method: Some("PUT"),
                upload_headers: Some(json!({ "Content-Type": mime })),
                upload_expires_at: Some(chrono::Utc::now() + UPLOAD_TTL),
                ..Asset::from(&row)
            })
        },
    )
    .await
}

/// An asset's file name as a deck's markdown names it: folders kept (`img/chart.png`,
/// as a Marp deck next to its `img/` folder writes it), each part cleaned as any file
/// name is; `.` parts dropped, `..` refused (a name never points out of the deck).
fn asset_file(raw: &str) -> ApiResult<String> {
    let raw = raw.trim().replace('\\', "/");
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part.trim() {
            "" | "." => {}
            ".." => {
                return Err(ApiError::bad_request(
                    "`file` must not climb out of its folder (`..`)",
                ))
            }
            part => parts.push(crate::domain::validate::clean_filename(part, "file")?),
        }
    }
    let file = parts.join("/");
    if file.is_empty() || file.len() > 128 {
        return Err(ApiError::bad_request(
            "`file` must have 1 to 128 usable characters",
        ));
    }
    Ok(file)
}

/// The object key of an asset: its id and the last part of its file name.
fn object_key(deck_id: &str, id: &str, file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    format!("slides/{deck_id}/assets/{id}/{base}")
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
    let deck_id = body.deck_id.trimmed().to_owned();
    let asset_id = body.asset_id.trimmed().to_owned();
    on_deck(
        &app,
        &caller,
        &sent,
        &deck_id,
        Need::Editor,
        "assets/complete",
        move |a, _, deck| async move {
            let asset = deck_asset(&a, &deck, &asset_id).await?;
            let asset = if matches!(
                asset.status,
                plinth_vocab::AssetStatus::PendingUpload | plinth_vocab::AssetStatus::Rejected
            ) {
                // The move to `validating` and the queued check commit together.
                store::start_validation(&a.db, &asset.id)
                    .await?
                    .ok_or_else(|| ApiError::not_found("asset not found"))?
            } else {
                asset
            };
            Ok(Asset::from(&asset))
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
) -> ApiResult<Answer<Asset>> {
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    let asset = deck_asset(&app, &deck, &id).await?;
    let mut v = Asset::from(&asset);
    if asset.status == plinth_vocab::AssetStatus::Ready {
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
    let deck_id = body.deck_id.trimmed().to_owned();
    let asset_id = body.asset_id.trimmed().to_owned();
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
            Ok(AssetDeleted {
                success: True,
                id: asset.id,
                deleted: True,
            })
        },
    )
    .await
}

/// An image as a request body: its bytes and the type its `Content-Type` names (one of
/// `ImageFormat::mimes`), or `None` for `application/octet-stream` (the file name's extension
/// then says); 415 for any other type. The usage layer has already bounded the body to
/// the route's limit ([`MAX_ASSET_BYTES`]).
pub struct ImageBody {
    mime: Option<&'static str>,
    file: std::sync::Arc<crate::http::body::Spooled>,
}

/// What `application/octet-stream` or no `Content-Type` means here: "see the file name".
const ANY_FILE: &str = "application/octet-stream";

/// What `curl --data-binary @chart.png` sends when no `-H Content-Type` is given: the
/// body is the file all the same, so its type is the file name's too.
const CURL_DEFAULT: &str = "application/x-www-form-urlencoded";

/// The image type a file name's extension names.
fn type_of_name(file: &str) -> Option<&'static str> {
    let ext = file.rsplit_once('.')?.1;
    // Only a bare extension: `image/png` is no file name's ending.
    (!ext.contains('/')).then(|| ImageFormat::named(ext).map(ImageFormat::mime))?
}

impl<S: Send + Sync> axum::extract::FromRequest<S> for ImageBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, _: &S) -> Result<Self, ApiError> {
        let sent = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = sent
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let mime = match ImageFormat::of_mime(&essence) {
            Some(f) => Some(f.mime()),
            None if essence.is_empty() || essence == ANY_FILE || essence == CURL_DEFAULT => None,
            None => {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!(
                        "send the image as the body with its type as Content-Type: one of {} \
                         (or {ANY_FILE} and a file name ending .png, .jpg, .webp or .svg)",
                        ImageFormat::mimes().join(", ")
                    ),
                ))
            }
        };
        // The usage layer spooled the body to a file, within this route's limit.
        let file = req
            .extensions()
            .get::<std::sync::Arc<crate::http::body::Spooled>>()
            .cloned()
            .ok_or_else(|| ApiError::bad_request("the body must be the image's bytes"))?;
        if file.len == 0 {
            return Err(ApiError::bad_request("the body must be the image's bytes"));
        }
        Ok(ImageBody { mime, file })
    }
}

impl crate::http::schema::DocArg for ImageBody {
    fn document(op: &mut crate::http::schema::Operation, _: &mut schemars::SchemaGenerator) {
        op.binary_body = Some(
            "the image file; its type is the file name's extension (png, jpg, webp, svg), or a \
             Content-Type of image/png, image/jpeg, image/webp or image/svg+xml",
        );
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UploadQuery {
    /// The deck the image belongs to.
    deck_id: NonBlank,
    /// The file name a markdown deck uses for it: `![](chart.png)`. It ends in the
    /// image's extension (`.png`, `.jpg`, `.jpeg`, `.webp`, `.svg`, any case).
    #[schemars(
        length(min = 1, max = 128),
        regex(
            pattern = r"^.*[A-Za-z0-9_].*\.([Pp][Nn][Gg]|[Jj][Pp][Ee]?[Gg]|[Ww][Ee][Bb][Pp]|[Ss][Vv][Gg])$"
        )
    )]
    file: String,
}

/// `POST /api/slides/assets/upload?deck_id=&file=` (Editor; an addition to the spec):
/// the image in one request. The body is the file, its type the `Content-Type` (or, for
/// `application/octet-stream`, the file name's extension, which it must have); the
/// image is stored, checked by the image queue like a completed upload, and the answer
/// waits for the check: a `ready` asset, which `![](file)` in the deck's markdown then
/// names, or a 422 with the reason and nothing kept. It waits at most half the request
/// timeout (`PLINTH_REQUEST_TIMEOUT`: 5 s of the default 10), so the answer always comes
/// before the deadline; then it answers the asset still `validating` (a paused or busy
/// image queue; read `assets/{id}` for the verdict).
pub async fn asset_upload(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<UploadQuery>,
    ImageBody { mime, file: body }: ImageBody,
) -> ApiResult<Answer<Asset>> {
    let deck_id = q.deck_id.trimmed().to_owned();
    let file = asset_file(&q.file)?;
    // The name is what markdown will name: it says what it is.
    let by_name = type_of_name(&file).ok_or_else(|| {
        ApiError::bad_request("`file` must end in .png, .jpg, .jpeg, .webp or .svg")
    })?;
    let mime = mime.unwrap_or(by_name);
    let (deck, _) = open(&app, &caller, &deck_id).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let key = object_key(&deck.id, &id, &file);
    let (size, sha) = (body.len as i64, body.sha256.as_str());
    app.objects.put_file(&key, &body.path, mime).await?;
    // The watch starts before the check is queued, so its verdict cannot be missed.
    let watch = crate::db::watch::watch(&store::asset_watch(&id));
    let created = async {
        store::create_asset(
            &app.db,
            NewAsset {
                id: &id,
                deck_id: &deck.id,
                created_by: &caller.id,
                file: &file,
                mime,
                size,
                sha256: sha,
                object_key: &key,
            },
        )
        .await?;
        store::start_validation(&app.db, &id).await
    }
    .await;
    if let Err(e) = created {
        // Nothing half-kept: the object without its row would never be read or deleted.
        let _ = app.objects.delete(&key).await;
        return Err(e.into());
    }
    let patience = Duration::from_secs(app.opts.server.request_timeout.max(1)) / 2;
    let asset = checked(&app, &watch, &id, patience).await?;
    if asset.status == plinth_vocab::AssetStatus::Rejected {
        store::delete_asset(&app.db, &id).await?;
        let _ = app.objects.delete(&key).await;
        let reason = asset.reason.unwrap_or_else(|| "not a valid image".into());
        return Err(
            ApiError::unprocessable(format!("the image was refused: {reason}"))
                .with("reason", reason),
        );
    }
    Ok(Answer(Asset::from(&asset)))
}

/// The asset once its check has a verdict, or as it is after `patience`:
/// woken by the verdict's write in this process, and read again every 250 ms for a
/// worker in another one.
async fn checked(
    app: &AppState,
    watch: &crate::db::watch::Watch,
    id: &str,
    patience: Duration,
) -> ApiResult<store::AssetRow> {
    let deadline = tokio::time::Instant::now() + patience;
    let notify = watch.notifier();
    loop {
        let woken = notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let asset = store::asset(&app.db, id)
            .await?
            .ok_or_else(|| ApiError::not_found("asset not found"))?;
        if asset.status != plinth_vocab::AssetStatus::Validating
            || tokio::time::Instant::now() >= deadline
        {
            return Ok(asset);
        }
        let _ = tokio::time::timeout_at(
            deadline.min(tokio::time::Instant::now() + Duration::from_millis(250)),
            woken,
        )
        .await;
    }
}
