//! The key-value store: `/api/kv/*` (Admin100; docs/api.md). Every endpoint but the
//! namespace list and create needs the caller to own the namespace: another admin's
//! namespace is a 404, like one that does not exist. Entries are not listed.

use axum::extract::State;
use serde::Deserialize;

use crate::db::kv as store;
use crate::http::auth::Viewer;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::{prebuild, Answer, Prebuilt, PrivateAnswer};
use crate::state::AppState;
use crate::wire::kv::{Entry, EntryDeleted, Namespace, NamespaceDeleted, Namespaces};
use crate::wire::{Data, Saved, True};

/// Longest namespace name, key, and value (bytes of UTF-8).
const MAX_NAMESPACE: usize = 128;
const MAX_KEY: usize = 512;
const MAX_VALUE: usize = 256 * 1024;

/// A namespace as stored: trimmed, lower-cased, 1 to 128 of letters, digits, `.`, `_`,
/// `-`, starting with a letter or digit.
fn namespace(raw: &str) -> ApiResult<String> {
    namespace_owned(raw.to_owned())
}

/// As `namespace`, keeping the caller's string when it is already in stored form (the
/// usual case on the read path: no second allocation).
fn namespace_owned(raw: String) -> ApiResult<String> {
    let stored = raw.len() == raw.trim().len() && !raw.bytes().any(|b| b.is_ascii_uppercase());
    let n = if stored {
        raw
    } else {
        raw.trim().to_lowercase()
    };
    let ok = !n.is_empty()
        && n.len() <= MAX_NAMESPACE
        && n.starts_with(|c: char| c.is_ascii_alphanumeric())
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !ok {
        return Err(ApiError::bad_request(format!(
            "`namespace` must be 1 to {MAX_NAMESPACE} letters, digits, `.`, `_` or `-`, starting with a letter or digit"
        )));
    }
    Ok(n)
}

/// A key: case-sensitive, 1 to 512 characters.
fn key(raw: &str) -> ApiResult<&str> {
    // At most MAX_KEY bytes is at most MAX_KEY characters: counting only past that.
    if raw.is_empty() || (raw.len() > MAX_KEY && raw.chars().count() > MAX_KEY) {
        return Err(ApiError::bad_request(format!(
            "`key` must be 1 to {MAX_KEY} characters"
        )));
    }
    Ok(raw)
}

/// A value: a string of at most 256 KiB (empty allowed); a 400 beyond (a field over its
/// limit; 413 is for a whole body over the body limit).
fn value(raw: &str) -> ApiResult<&str> {
    if raw.len() > MAX_VALUE {
        return Err(ApiError::bad_request(format!(
            "`value` must be at most 256 KiB ({MAX_VALUE} bytes of UTF-8)"
        ))
        .with("max_bytes", MAX_VALUE));
    }
    Ok(raw)
}

/// The admin caller's own namespace (404 for one that does not exist or is another's).
async fn owned(app: &AppState, caller_id: &str, raw: &str) -> ApiResult<String> {
    let n = namespace(raw)?;
    if !store::owns(&app.db, &n, caller_id).await? {
        return Err(ApiError::not_found("namespace not found"));
    }
    Ok(n)
}

/// `GET /api/kv/namespaces` (Admin100): the caller's namespaces.
pub async fn namespaces(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<PrivateAnswer<Namespaces>> {
    let data: Vec<Namespace> = store::namespaces(&app.db, &caller.id)
        .await?
        .into_iter()
        .map(Namespace::from)
        .collect();
    Ok(PrivateAnswer(Namespaces {
        count: data.len(),
        data,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct NamespaceBody {
    /// Trimmed and lower-cased; 1 to 128 of letters, digits, `.`, `_`, `-`, starting
    /// with a letter or digit; unique across the platform.
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9][A-Za-z0-9._-]{0,127}\s*$"))]
    namespace: String,
}

/// `POST /api/kv/namespaces/create` (Admin100): 409 when the name is taken (by anyone).
pub async fn namespace_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<NamespaceBody>,
) -> ApiResult<Answer<Saved<Namespace>>> {
    let n = namespace(&body.namespace)?;
    let created = store::create_namespace(&app.db, &n, &caller.id).await?;
    Ok(Answer(Saved::new(created.into())))
}

/// `POST /api/kv/namespaces/delete` (Admin100, owner): only an empty namespace (409
/// while it has entries).
pub async fn namespace_delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<NamespaceBody>,
) -> ApiResult<Answer<NamespaceDeleted>> {
    let n = owned(&app, &caller.id, &body.namespace).await?;
    let deleted = store::delete_namespace(&app.db, &n, &caller.id).await?;
    if !app.caches.announce(deleted).await {
        return Err(ApiError::conflict(
            "the namespace still has entries: delete them first",
        ));
    }
    Ok(Answer(NamespaceDeleted {
        success: True,
        namespace: n,
        deleted: True,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EntryBody {
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9][A-Za-z0-9._-]{0,127}\s*$"))]
    namespace: String,
    /// Case-sensitive, 1 to 512 characters.
    #[schemars(length(min = 1, max = 512))]
    key: String,
    /// A string of at most 256 KiB (empty allowed).
    #[schemars(length(max = 262144))]
    value: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct KeyBody {
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9][A-Za-z0-9._-]{0,127}\s*$"))]
    namespace: String,
    #[schemars(length(min = 1, max = 512))]
    key: String,
}

/// `POST /api/kv/entries/create` (Admin100, owner): 409 when the key exists.
pub async fn entry_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<EntryBody>,
) -> ApiResult<Answer<Saved<Entry>>> {
    let (k, v) = (key(&body.key)?, value(&body.value)?);
    let n = owned(&app, &caller.id, &body.namespace).await?;
    let entry = store::create(&app.db, &n, k, v).await?;
    Ok(Answer(Saved::new(entry.into())))
}

/// `POST /api/kv/entries/get` (Admin100, owner). The answer comes from the read cache
/// (`crate::db::cache`: every change is announced to every process) or one query that reads
/// the entry and checks the owner; only a miss asks which of the two is missing.
pub async fn entry_get(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<KeyBody>,
) -> ApiResult<Prebuilt<Data<Entry>>> {
    key(&body.key)?;
    let n = namespace_owned(body.namespace)?;
    let cache = &app.caches.kv;
    let id = (n, body.key);
    let k = id.1.as_str();
    if let Some(hit) = cache.get(&id) {
        if hit.0 == caller.id {
            return Ok(Prebuilt::private(hit.1.clone()));
        }
    }
    let ticket = cache.ticket(&id);
    match store::get_owned(&app.db, &id.0, k, &caller.id).await? {
        Some(data) => {
            let bytes = prebuild(&Data {
                data: Entry::from(data),
            })
            .ok_or_else(|| ApiError::internal("a KV answer that is not an object"))?;
            cache.fill(
                ticket,
                id,
                std::sync::Arc::new((caller.id.clone(), bytes.clone())),
            );
            Ok(Prebuilt::private(bytes))
        }
        None => {
            let n = id.0;
            owned(&app, &caller.id, &n).await?;
            Err(ApiError::not_found("entry not found"))
        }
    }
}

/// `POST /api/kv/entries/update` (Admin100, owner): replaces the value of an existing
/// entry; never creates (404).
pub async fn entry_update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<EntryBody>,
) -> ApiResult<Answer<Saved<Entry>>> {
    let (k, v) = (key(&body.key)?, value(&body.value)?);
    let n = owned(&app, &caller.id, &body.namespace).await?;
    let entry = store::update(&app.db, &n, k, v)
        .await?
        .ok_or_else(|| ApiError::not_found("entry not found"))?;
    let entry = app.caches.announce(entry).await;
    Ok(Answer(Saved::new(entry.into())))
}

/// `POST /api/kv/entries/delete` (Admin100, owner).
pub async fn entry_delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<KeyBody>,
) -> ApiResult<Answer<EntryDeleted>> {
    let k = key(&body.key)?;
    let n = owned(&app, &caller.id, &body.namespace).await?;
    let deleted = store::delete(&app.db, &n, k).await?;
    if !app.caches.announce(deleted).await {
        return Err(ApiError::not_found("entry not found"));
    }
    Ok(Answer(EntryDeleted {
        success: True,
        namespace: n,
        key: k.to_owned(),
        deleted: True,
    }))
}
