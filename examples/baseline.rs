//! Benchmark baseline: a bare axum JSON handler built from the same dependencies as
//! plinth (same axum, tokio, serde_json), with no database, auth or usage layer.
//! `cargo run --release --example baseline -- 127.0.0.1:8099`

use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8099".into());
    // `POST /echo` is the like-for-like baseline of POST endpoints that read a small JSON
    // body (bench/kv.sh): the body is read and parsed, one field answered.
    let app = Router::new()
        .route(
            "/",
            get(|| async { Json(json!({"ok": true, "service": "baseline"})) }),
        )
        .route(
            "/echo",
            post(|Json(body): Json<serde_json::Value>| async move {
                Json(json!({"ok": true, "key": body["key"]}))
            }),
        );
    let listener = tokio::net::TcpListener::bind(&addr).await.unwrap();
    println!(
        "baseline listening on http://{}",
        listener.local_addr().unwrap()
    );
    axum::serve(listener, app).await.unwrap();
}
