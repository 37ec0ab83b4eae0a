//! The HTTP edge: the app's assembly (the route table's router and the layers around
//! it), the usage layer, request bodies, authentication, extractors, answers, the error
//! type and its mapping, the OpenAPI document and the pages. Handlers live in `crate::api`,
//! answer shapes in `crate::wire`.

pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod client_ip;
pub(crate) mod cors;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod idempotency;
pub(crate) mod keyed;
pub(crate) mod object_urls;
pub(crate) mod openapi;
pub(crate) mod pages;
pub(crate) mod reply;
pub(crate) mod request;
pub mod routes;
pub(crate) mod schema;
pub(crate) mod usage;

use axum::http::HeaderValue;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::{DefaultOnFailure, TraceLayer};

use crate::http::cors::{Cors, CorsPolicy};
use crate::state::AppState;

/// Largest accepted request body.
pub const BODY_LIMIT: usize = 1 << 20;

/// The whole HTTP interface: every row of the route table, the OpenAPI document, the
/// JSON 404 fallback (all from `routes::router`), and the layers around them.
pub fn app(state: AppState) -> Router {
    let cors = Cors::new(CorsPolicy::from_origins(&state.opts.server.cors_origins));
    // Each `Router::layer` call boxes every route once more, and every level is cloned on
    // every request: the layers go on in two stacks (first listed = outermost).
    let app = routes::router()
        .layer(
            tower::ServiceBuilder::new()
                // Outermost: every answer, the router's 404 and 405 included, gets the
                // envelope.
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    usage::usage_layer,
                ))
                // A panic in a handler becomes a 500 that the usage layer wraps and logs,
                // never a dropped connection. (No body-limit layer: the usage layer has
                // already read the whole body, refusing one over BODY_LIMIT.)
                .layer(CatchPanicLayer::custom(panic_response)),
        )
        // The simulated payment provider's hosted pages: HTML, outside the JSON API.
        .merge(routes::hosted_pages(&state))
        .merge(routes::assets())
        // The local object store's signed URLs: an upload is bounded by its signed size,
        // checked while it streams to disk (object_urls).
        .merge(object_urls::router())
        // Probes and metrics: no envelope, key or rate limit.
        .merge(routes::ops(crate::observe::OpsState::of_api(&state)))
        .with_state(state)
        .layer(
            tower::ServiceBuilder::new()
                // Every request and response carries `x-request-id` (the client's, or a
                // new one).
                .layer(SetRequestIdLayer::x_request_id(NewRequestId))
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(cors),
        );
    // Per-request spans at DEBUG (`RUST_LOG=tower_http=debug`), only when that is enabled
    // at start: the layer costs ~1 % of a small request even with its spans filtered out.
    if !tracing::enabled!(target: "tower_http::trace", tracing::Level::DEBUG) {
        return app;
    }
    app.layer(
        TraceLayer::new_for_http()
            .make_span_with(redacted_span)
            // The usage layer logs each failure once, with its cause.
            .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
    )
}

/// A request's DEBUG span: method and path, without the query (object signatures, codes)
/// and with the secret of a download link's path replaced (security round 2, L3).
fn redacted_span(req: &axum::extract::Request) -> tracing::Span {
    let path = req.uri().path();
    let path = match path.strip_prefix("/api/downloads/") {
        Some(rest) if rest.starts_with("dl_") => "/api/downloads/{token}",
        _ => path,
    };
    tracing::debug_span!("request", method = %req.method(), path, version = ?req.version())
}

/// A new `x-request-id`: a random UUID, formatted on the stack (tower-http's
/// `MakeRequestUuid` formats to a `String` and parses it again).
#[derive(Clone, Copy)]
struct NewRequestId;

impl MakeRequestId for NewRequestId {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let mut buf = uuid::Uuid::encode_buffer();
        let id = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf);
        HeaderValue::from_str(id).ok().map(RequestId::new)
    }
}

/// The 500 of a caught panic; the panic message is logged (once, by the usage layer),
/// never sent.
fn panic_response(err: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    let what = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    axum::response::IntoResponse::into_response(crate::http::error::ApiError::internal(format!(
        "handler panicked: {what}"
    )))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_caught_panic_is_a_500_envelope_with_its_cause_kept_for_the_log() {
        let resp = super::panic_response(Box::new("index out of bounds".to_owned()));
        assert_eq!(resp.status(), axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        let Some(crate::http::reply::Envelope::Map(envelope)) = resp.extensions().get() else {
            panic!("no envelope");
        };
        assert_eq!(envelope["message"], "internal error");
        let cause = resp
            .extensions()
            .get::<crate::http::error::ErrorCause>()
            .unwrap();
        assert!(cause.0.contains("index out of bounds"), "{}", cause.0);
    }
}
