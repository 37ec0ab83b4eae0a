//! `GET /api/openapi.json`: the one route beyond the spec's list, generated from the
//! route table (paths, methods, tags, security, rate category and cost per operation).

use axum::extract::State;
use serde_json::{json, Map, Value};

use crate::reply::Reply;
use crate::routes::{Access, ROUTES};
use crate::state::AppState;

pub async fn openapi(State(app): State<AppState>) -> Reply {
    let mut paths = Map::new();
    for r in ROUTES {
        let params: Vec<Value> = r
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let security = match r.access {
            Access::Public => json!([]),
            Access::Custom => json!([{}, {"apiKey": []}]),
            _ => json!([{"apiKey": []}]),
        };
        let op = json!({
            "tags": [r.area],
            "operationId": format!("{} {}", r.method, r.path),
            "summary": format!("{} {}", r.method, r.path),
            "parameters": params,
            "security": security,
            "x-access": r.access.name(),
            "x-rate-category": r.category.name(),
            "x-token-cost": app.routes.cost_of(r),
            "x-implemented": r.implemented(),
            "responses": {
                "200": {"description": "success", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Success"}}}},
                "default": {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
            },
        });
        let item = paths
            .entry(r.path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        for m in std::iter::once(r.method).chain(r.also) {
            item[m.to_lowercase()] = op.clone();
        }
    }
    let usage = json!({
        "type": "object",
        "properties": {
            "tokens": {"type": "object", "properties": {"cost": {"type": "integer"}, "remaining": {"type": "integer"}}},
            "rate_limit": {"type": "object", "properties": {"limit": {"type": "integer"}, "remaining": {"type": "integer"}, "interval_ms": {"type": "integer"}}},
        },
    });
    Reply::ok(json!({
        "openapi": "3.1.0",
        "info": {"title": "plinth", "version": "2.0.4"},
        "servers": [{"url": app.public_url}],
        "paths": paths,
        "components": {
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
            "schemas": {
                "Usage": usage,
                "Success": {"type": "object", "properties": {"_usage": {"$ref": "#/components/schemas/Usage"}}},
                "Error": {
                    "type": "object",
                    "required": ["error", "message", "_usage"],
                    "properties": {
                        "error": {"const": true},
                        "message": {"type": "string"},
                        "retry_after_ms": {"type": "integer"},
                        "tokens_required": {"type": "integer"},
                        "tokens_balance": {"type": "integer"},
                        "payment_url": {"type": "string"},
                        "_usage": {"$ref": "#/components/schemas/Usage"},
                    },
                },
            },
        },
    }))
}
