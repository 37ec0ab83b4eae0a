//! `GET /api/openapi.json`: the document `crate::http::openapi` builds from the route table,
//! reached through the state (`Inner::openapi`) so that this handler, which is in the
//! table, does not import what reads the table.

use axum::extract::State;

use crate::http::reply::Reply;
use crate::state::AppState;

pub async fn openapi(State(app): State<AppState>) -> Reply {
    (app.openapi)(&app)
}
