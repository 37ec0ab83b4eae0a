//! Operator endpoints outside the JSON API: `/livez`, `/readyz` and `/metrics` (no
//! envelope, no rate limit, no key; `routes::ops` serves them on the API listener and on
//! `--metrics-listen`); and
//! `GET /api/admin/errors` (Admin100, in the route table's additions) for the console.

use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::http::error::ApiResult;
use crate::http::reply::Answer;
use crate::observe::{ErrorCount, OpsState, ServerError};

/// The process is up and serving: nothing else is checked (a restart cures nothing a
/// dependency broke).
pub async fn livez() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// Ready for traffic when the database answers and takes a write (and no request saw it
/// fail as an outage in the last few seconds: a probe's small write can succeed on a
/// full disk), the credit-account shards, the job queue and object storage answer, each
/// within two seconds; 503 names what did not. A load balancer stops sending traffic
/// while writes fail, and starts again once they recover (issue 36).
pub async fn readyz(State(ops): State<OpsState>) -> Response {
    let limit = Duration::from_secs(2);
    let process = PROCESS.get_or_init(|| crate::config::process_name("ready"));
    let ledger = async {
        match &ops.credits {
            Some(c) => c.responsive(limit).await,
            None => true,
        }
    };
    let (db, writes, ledger, queue, storage) = tokio::join!(
        tokio::time::timeout(limit, ops.db.ping()),
        tokio::time::timeout(limit, ops.db.probe_write(process)),
        ledger,
        tokio::time::timeout(limit, ops.queue.health()),
        tokio::time::timeout(limit, ops.objects.healthy()),
    );
    let recent_outage = crate::db::outage_within(RECENT_OUTAGE);
    let (db, writes, queue, storage) = (
        db.unwrap_or(false),
        writes.unwrap_or(false) && !recent_outage,
        queue.is_ok_and(|q| q.ok),
        storage.unwrap_or(false),
    );
    let ready = db && writes && ledger && queue && storage;
    let (status, word) = if ready {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    };
    let checks = json!({"database": db, "writes": writes, "ledger": ledger, "queue": queue, "storage": storage});
    (status, Json(json!({"status": word, "checks": checks}))).into_response()
}

/// This process's name in `readiness_probe`.
static PROCESS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// How long after a request saw the database fail `/readyz` stays unready.
const RECENT_OUTAGE: Duration = Duration::from_secs(5);

/// The Prometheus exposition. On the API listener it needs `Authorization: Bearer
/// <PLINTH_METRICS_TOKEN>` and is 404 without a configured token, so that an unset
/// token never means an open endpoint.
pub async fn metrics(State(ops): State<OpsState>, headers: HeaderMap) -> Response {
    if !ops.open {
        let Some(token) = &ops.token else {
            return StatusCode::NOT_FOUND.into_response();
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !crate::crypto::ct_eq(given.trim().as_bytes(), token.as_bytes()) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "metrics need Authorization: Bearer <PLINTH_METRICS_TOKEN>\n",
            )
                .into_response();
        }
    }
    match crate::observe::render(&ops.db).await {
        Some(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct ErrorsAnswer {
    /// The latest 5xx answers of this process (at most 100), newest first.
    errors: Vec<ServerError>,
    /// 5xx answers of this process since it started, by route, most first.
    by_route: Vec<ErrorCount>,
}

/// `GET /api/admin/errors` (Admin100): recent 5xx answers of the process that answers.
pub async fn errors() -> ApiResult<Answer<ErrorsAnswer>> {
    let (errors, by_route) = crate::observe::server_errors();
    Ok(Answer(ErrorsAnswer { errors, by_route }))
}
