//! HTTP handlers, one module per area of the spec. Routes are bound in `routes.rs`.

pub mod admin;
pub mod analytics;
pub mod billing;
pub mod checkout;
pub mod console;
pub mod credits;
pub mod data;
pub mod documents;
pub mod downloads;
pub mod events;
pub mod idempotent;
pub mod identity;
pub mod inventory;
pub mod kv;
pub mod licenses;
pub mod likes;
pub mod marketplace;
pub mod office;
pub mod openapi;
pub mod ops;
pub mod organizations;
pub mod pages;
pub mod posts;
pub mod public_access;
pub mod slides;
pub mod status;
pub mod telemetry;
pub mod users;
pub mod waitlist;

use axum::http::{Method, Uri};

use crate::http::error::ApiError;

/// Rows of the route table without a handler yet.
pub async fn not_implemented(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_IMPLEMENTED,
        format!("{method} {} is not implemented yet", uri.path()),
    )
}

/// Any path outside the route table.
pub async fn fallback(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {method} {}", uri.path()))
}
