//! Credits. Today: `GET /api/credits/pricing`, read straight from the route table.

use axum::extract::State;
use serde_json::json;

use crate::error::ApiResult;
use crate::reply::Reply;
use crate::routes::{Category, ROUTES};
use crate::state::AppState;

/// Every endpoint with its token cost, rate category and base limit.
pub async fn pricing(State(app): State<AppState>) -> ApiResult {
    let data: Vec<_> = ROUTES
        .iter()
        .map(|r| {
            json!({
                "method": r.method,
                "path": r.path,
                "cost": app.routes.cost_of(r),
                "category": r.category.name(),
                "limit": r.category.base_limit(),
                "interval_ms": r.category.interval_ms(),
                "access": r.access.name(),
                "implemented": r.implemented(),
            })
        })
        .collect();
    let categories: serde_json::Map<_, _> = Category::ALL
        .iter()
        .map(|c| {
            (
                c.name().to_owned(),
                json!({"limit": c.base_limit(), "interval_ms": c.interval_ms()}),
            )
        })
        .collect();
    Ok(Reply::ok(json!({
        "data": data,
        "categories": categories,
        "tiers": [
            {"level": 0, "name": "UNVERIFIED", "monthly_credits": 0, "rate_multiplier": 1},
            {"level": 10, "name": "VERIFIED", "monthly_credits": 0, "rate_multiplier": 6},
            {"level": 20, "name": "PAYING", "monthly_credits": 1500, "rate_multiplier": 12},
            {"level": 30, "name": "GENERAL_CO_WORKING", "monthly_credits": 45000, "rate_multiplier": 120},
            {"level": 40, "name": "PARTNER", "monthly_credits": 45000, "rate_multiplier": 1200},
            {"level": 100, "name": "ADMIN", "monthly_credits": 45000, "rate_multiplier": null},
        ],
        "rate_limit_multiplier": app.opts.rate_limit_multiplier,
    })))
}
