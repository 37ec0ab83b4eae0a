//! `POST /api/data/prices/by-label` (Public): one labelled price from the price list
//! (`fixtures/prices.json`, or `PLINTH_PRICES_FILE`).

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::wire::Data;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct LabelBody {
    label: String,
}

pub async fn price_by_label(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<LabelBody>,
) -> ApiResult<Answer<Data<Map<String, Value>>>> {
    let price = app
        .prices
        .get(&body.label)
        .ok_or_else(|| ApiError::not_found(format!("no price labelled `{}`", body.label.trim())))?;
    // A labelled price is the operator's object (`label`, `amount`, `currency` and any
    // other keys they give), sent as it is.
    Ok(Answer(Data {
        data: price.clone(),
    }))
}
