//! The local object store's signed URLs, served by plinth outside the JSON API (an
//! upload is bounded by its signed size, checked while it streams to disk). Apart from
//! `storage.rs`, which the state holds, since these handlers take the state.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use crate::adapters::storage::{valid_key, ObjectStore, WriteError};
use crate::route_spec::Category;
use crate::state::AppState;

/// Uploads one client address may make per minute through signed URLs.
const OBJECT_PUTS_PER_MINUTE: u64 = 60;
/// Object reads (signed or public) per client address and minute: the `read`
/// category's base.
const OBJECT_GETS_PER_MINUTE: u64 = 120;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/objects/{*key}", get(read).put(write))
        .route("/public/{*key}", get(read_public))
}

#[derive(Deserialize)]
pub struct Signed {
    method: String,
    expires: i64,
    max: u64,
    #[serde(default)]
    ct: String,
    /// A named download's file name (signed with the rest).
    #[serde(default)]
    name: String,
    sig: String,
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain")],
        why.to_owned(),
    )
        .into_response()
}

/// Checks method, key, expiry and signature; `Err` is the refusal to send (built
/// once per refused request, so its size does not matter).
#[allow(clippy::result_large_err)]
fn check(app: &AppState, method: &str, key: &str, q: &Signed) -> Result<(), Response> {
    let ObjectStore::Local(l) = &app.objects else {
        return Err(refuse(StatusCode::NOT_FOUND, "not found"));
    };
    if !valid_key(key) || q.method != method {
        return Err(refuse(StatusCode::FORBIDDEN, "signature does not match"));
    }
    let expected = l.signature(method, key, q.expires, q.max, &q.ct, &q.name);
    if !crate::crypto::ct_eq(expected.as_bytes(), q.sig.as_bytes()) {
        return Err(refuse(StatusCode::FORBIDDEN, "signature does not match"));
    }
    if chrono::Utc::now().timestamp() > q.expires {
        return Err(refuse(StatusCode::FORBIDDEN, "URL expired"));
    }
    Ok(())
}

/// Counts a request of the client's address in its own window of `category` (signed
/// URLs can be replayed for their whole lifetime, and `/public` needs none): `Err` is
/// the 429 to send.
#[allow(clippy::result_large_err)]
async fn admit(
    app: &AppState,
    what: &str,
    peer: SocketAddr,
    headers: &HeaderMap,
    per_minute: u64,
    category: Category,
) -> Result<(), Response> {
    let client =
        crate::http::client_ip::client_ip(peer.ip(), headers, &app.opts.server.trusted_proxies);
    let limit = (per_minute as f64 * app.opts.rates.rate_limit_multiplier)
        .ceil()
        .max(1.0) as u64;
    let d = app
        .rate
        .check(
            &format!("objects:{what}:ip:{client}"),
            category as u8,
            limit,
            category.interval_ms(),
        )
        .await;
    if d.allowed {
        return Ok(());
    }
    let mut r = refuse(
        StatusCode::TOO_MANY_REQUESTS,
        "too many requests; retry later",
    );
    let secs = d.retry_after_ms.div_ceil(1000).max(1);
    r.headers_mut().insert(header::RETRY_AFTER, secs.into());
    Err(r)
}

/// Streams a local object from disk (constant memory whatever its size; `Range`,
/// `If-Modified-Since` and `HEAD` by tower-http's `ServeFile`), always as a download
/// so nothing renders on this origin (security round 2, M2: objects were read whole
/// into memory, one copy per concurrent reader).
async fn stream(
    app: &AppState,
    key: &str,
    headers: &HeaderMap,
    public: bool,
    as_file: Option<(&str, &str)>,
) -> Response {
    let ObjectStore::Local(l) = &app.objects else {
        return refuse(StatusCode::NOT_FOUND, "no such object");
    };
    let mut req = axum::http::Request::new(Body::empty());
    for name in [
        header::RANGE,
        header::IF_RANGE,
        header::IF_MODIFIED_SINCE,
        header::IF_UNMODIFIED_SINCE,
    ] {
        if let Some(v) = headers.get(&name) {
            req.headers_mut().insert(name, v.clone());
        }
    }
    let served =
        tower::ServiceExt::oneshot(tower_http::services::ServeFile::new(l.path(key)), req).await;
    let mut res = match served {
        Ok(r) if r.status() == StatusCode::NOT_FOUND => {
            return refuse(StatusCode::NOT_FOUND, "no such object")
        }
        Ok(r) => r.map(Body::new),
        Err(e) => return refuse(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let h = res.headers_mut();
    let (content_type, name) = as_file.unwrap_or(("application/octet-stream", ""));
    let value = |text: &str| header::HeaderValue::from_str(text).ok();
    h.insert(
        header::CONTENT_TYPE,
        value(content_type).unwrap_or(header::HeaderValue::from_static("application/octet-stream")),
    );
    let disposition =
        crate::adapters::storage::disposition(&crate::adapters::storage::safe_file_name(name));
    h.insert(
        header::CONTENT_DISPOSITION,
        value(&disposition).unwrap_or(header::HeaderValue::from_static("attachment")),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    if public {
        h.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("public, max-age=60"),
        );
    }
    res
}

async fn read(
    State(app): State<AppState>,
    Path(key): Path<String>,
    Query(q): Query<Signed>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = check(&app, "GET", &key, &q) {
        return r;
    }
    if let Err(r) = admit(
        &app,
        "get",
        peer,
        &headers,
        OBJECT_GETS_PER_MINUTE,
        Category::Read,
    )
    .await
    {
        return r;
    }
    // A named download keeps the type and name it was signed with.
    let as_file = (!q.name.is_empty()).then_some((q.ct.as_str(), q.name.as_str()));
    stream(&app, &key, &headers, false, as_file).await
}

/// An object under `public/` (distribution files from `/api/data/admin/upload`): no
/// signature, a window per client address, served as a download.
async fn read_public(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let key = format!("public/{key}");
    if !valid_key(&key) || !matches!(app.objects, ObjectStore::Local(_)) {
        return refuse(StatusCode::NOT_FOUND, "no such object");
    }
    if let Err(r) = admit(
        &app,
        "public",
        peer,
        &headers,
        OBJECT_GETS_PER_MINUTE,
        Category::Read,
    )
    .await
    {
        return r;
    }
    stream(&app, &key, &headers, true, None).await
}

/// A signed upload. Everything that can refuse it (signature, expiry, content type,
/// declared length, the address's upload window) is checked before one body byte is
/// read, and the body is streamed to disk and cut off at the signed size (M3).
async fn write(
    State(app): State<AppState>,
    Path(key): Path<String>,
    Query(q): Query<Signed>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(r) = check(&app, "PUT", &key, &q) {
        return r;
    }
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !q.ct.is_empty() && ct != q.ct {
        return refuse(
            StatusCode::FORBIDDEN,
            "content type does not match the signed one",
        );
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > q.max) {
        return too_large();
    }
    // Each URL came from a rate-limited API call, but one URL may be replayed for
    // its whole lifetime: the client's address gets a window of its own.
    if let Err(r) = admit(
        &app,
        "put",
        peer,
        &headers,
        OBJECT_PUTS_PER_MINUTE,
        Category::Upload,
    )
    .await
    {
        return r;
    }
    let ObjectStore::Local(l) = &app.objects else {
        return refuse(StatusCode::NOT_FOUND, "not found");
    };
    // The signed size bounds the body; the budget bounds how slowly it may come.
    let budget = crate::http::body::BodyBudget::new(&app.opts.limits, u64::MAX, false);
    match l
        .write_stream(&key, crate::http::body::stream(body, budget), q.max)
        .await
    {
        Ok(()) => StatusCode::OK.into_response(),
        Err(WriteError::TooLarge) => too_large(),
        Err(WriteError::Body(e)) => refuse(StatusCode::BAD_REQUEST, &e),
        Err(WriteError::Store(e)) => refuse(StatusCode::SERVICE_UNAVAILABLE, &e.0),
    }
}

fn too_large() -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        "larger than the signed size limit",
    )
}
