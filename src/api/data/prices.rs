//! `POST /api/data/prices/by-label` (Public): one labelled price from the price list
//! (`fixtures/prices.json`, or `PLINTH_PRICES_FILE`).

use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::reply::Reply;
use crate::state::AppState;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct LabelBody {
    label: String,
}

pub async fn price_by_label(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<LabelBody>,
) -> ApiResult {
    let price = app
        .prices
        .get(&body.label)
        .ok_or_else(|| ApiError::not_found(format!("no price labelled `{}`", body.label.trim())))?;
    Ok(Reply::ok(json!({ "data": Value::Object(price.clone()) })))
}
