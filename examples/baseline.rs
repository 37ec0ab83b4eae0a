//! Benchmark baseline: a bare axum JSON handler built from the same dependencies as
//! plinth (same axum, tokio, serde_json), with no database, auth or usage layer.
//! `cargo run --release --example baseline -- 127.0.0.1:8099`

use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8099".into());
    let app = Router::new().route(
        "/",
        get(|| async { Json(json!({"ok": true, "service": "baseline"})) }),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await.unwrap();
    println!(
        "baseline listening on http://{}",
        listener.local_addr().unwrap()
    );
    axum::serve(listener, app).await.unwrap();
}
