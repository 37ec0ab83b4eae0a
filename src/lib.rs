//! plinth: the HTTP API, configuration, data access and adapters. `app()` builds the
//! router; `server` wires configuration, database, queue and actors together.

pub mod api;
pub mod auth;
pub mod config;
pub mod crypto;
pub mod db;
pub mod domain;
pub mod error;
pub mod extract;
pub mod mail;
pub mod payments;
pub mod periodic;
pub mod reply;
pub mod routes;
pub mod server;
pub mod slide_jobs;
pub mod state;
pub mod storage;
pub mod store;
pub mod usage;

use std::collections::BTreeMap;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, MethodFilter, MethodRouter};
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;

use crate::routes::ROUTES;
use crate::state::AppState;

/// Largest accepted request body.
pub const BODY_LIMIT: usize = 1 << 20;

fn method_filter(m: &str) -> MethodFilter {
    match m {
        "GET" => MethodFilter::GET,
        "POST" => MethodFilter::POST,
        "PUT" => MethodFilter::PUT,
        "PATCH" => MethodFilter::PATCH,
        "DELETE" => MethodFilter::DELETE,
        other => panic!("route table uses unsupported method {other}"),
    }
}

/// The whole HTTP interface: every row of the route table, the OpenAPI document, the
/// JSON 404 fallback, and the usage layer around all of them.
pub fn app(state: AppState) -> Router {
    let mut by_path: BTreeMap<&str, MethodRouter<AppState>> = BTreeMap::new();
    for spec in ROUTES {
        let handler = spec
            .handler
            .unwrap_or(|f| axum::routing::on(f, api::not_implemented));
        let mut mr = handler(method_filter(spec.method));
        if let Some(also) = spec.also {
            mr = mr.merge(handler(method_filter(also)));
        }
        let entry = by_path.remove(spec.path).unwrap_or_default();
        by_path.insert(spec.path, entry.merge(mr));
    }
    let mut router = Router::new();
    for (path, mr) in by_path {
        router = router.route(path, mr);
    }
    // The simulated provider's hosted pages exist only while payments are simulated
    // (finding M8: with Stripe they would be an unauthenticated way to attach cards).
    let hosted_pages = if state.payments.hosted_by_plinth() {
        api::checkout::router()
    } else {
        Router::new()
    };
    router
        // The one API route beyond the spec's list (docs/api.md).
        .route("/api/openapi.json", get(api::openapi::openapi))
        .fallback(api::fallback)
        // Layers added later wrap earlier ones: the usage layer is outermost so that even
        // a 413 from the body limit gets the envelope.
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            usage::usage_layer,
        ))
        // The simulated payment provider's hosted pages: HTML, outside the JSON API.
        .merge(hosted_pages)
        // The local object store's signed URLs (uploads up to 64 MiB).
        .merge(storage::serve::router().layer(DefaultBodyLimit::max(64 << 20)))
        .with_state(state)
}
