//! `GET /api/openapi.json`: the document `crate::http::openapi` builds from the route table,
//! reached through the state (`Inner::openapi`) so that this handler, which is in the
//! table, does not import what reads the table. Built once per process, then sent as
//! shared bytes.

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use crate::http::reply::{prebuild, Prebuilt};
use crate::state::AppState;

pub async fn openapi(State(app): State<AppState>) -> Response {
    let doc = app.openapi_doc.get_or_init(|| {
        let document = (app.openapi)(&app);
        prebuild(&document).unwrap_or_default()
    });
    Prebuilt::<()>::public(doc.clone()).into_response()
}
