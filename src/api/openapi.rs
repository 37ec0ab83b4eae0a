//! `GET /api/openapi.json` (an addition beyond the spec's list), generated from the
//! route tables, `ROUTES` and `EXTRA_ROUTES` (paths, methods, tags, security, rate
//! category and cost per operation) and, for every built endpoint, the request schema
//! read off its handler's argument types (`crate::schema`). OpenAPI 3.1, so the schemas
//! are JSON Schema 2020-12.

use axum::extract::State;
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use crate::reply::Reply;
use crate::routes::Access;
use crate::state::AppState;

/// How an organization is named in the body of an OrgMember/OrgAdmin route.
fn org_ref() -> Value {
    json!({
        "type": "object",
        "description": "names the organization: `domain`, else `organizationId`, `organization_id` or `id`",
        "properties": {
            "domain": {"type": "string"},
            "organizationId": {"type": "string"},
            "organization_id": {"type": "string"},
            "id": {"type": "string"},
        },
        "anyOf": [
            {"required": ["domain"]},
            {"required": ["organizationId"]},
            {"required": ["organization_id"]},
            {"required": ["id"]},
        ],
    })
}

pub async fn openapi(State(app): State<AppState>) -> Reply {
    let mut gen = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let mut paths = Map::new();
    for r in crate::routes::all() {
        let mut params: Vec<Value> = r
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let doc = r.doc.map(|d| d(&mut gen)).unwrap_or_default();
        if let Some(query) = doc.query {
            let q = query.as_value();
            let required: Vec<&str> = q["required"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = q["properties"].as_object() {
                for (name, schema) in props {
                    let mut p = json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": schema});
                    if let Some(d) = schema.get("description") {
                        p["description"] = d.clone();
                    }
                    params.push(p);
                }
            }
        }
        let security = match r.access {
            Access::Public => json!([]),
            Access::Custom => json!([{}, {"apiKey": []}]),
            _ => json!([{"apiKey": []}]),
        };
        let mut op = json!({
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
        if let Some(answer) = doc.response {
            op["responses"]["200"]["content"]["application/json"]["schema"] =
                json!({"allOf": [{"$ref": "#/components/schemas/Success"}, answer.to_value()]});
        }
        if let Some(status) = doc.success_status.filter(|s| *s != 200) {
            let responses = op["responses"].as_object_mut().expect("an object");
            if let Some(ok) = responses.remove("200") {
                responses.insert(status.to_string(), ok);
            }
        }
        if doc.raw_body {
            op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"description": "the provider's signed event, checked byte for byte"}}}});
        } else if let Some(body) = doc.body {
            let schema = if doc.names_org {
                json!({"allOf": [org_ref(), body.to_value()]})
            } else {
                body.to_value()
            };
            // An empty body counts as `{}` (docs/api.md).
            op["requestBody"] =
                json!({"required": false, "content": {"application/json": {"schema": schema}}});
        } else if r.method == "POST" && r.implemented() {
            op["requestBody"] = json!({"required": false, "content": {"application/json": {"schema": {"type": "object", "description": "no fields; any are ignored"}}}});
        }
        let item = paths
            .entry(r.path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        for m in std::iter::once(r.method).chain(r.also) {
            let mut op = op.clone();
            // Operation ids are unique per method (found by openapi-spec-validator).
            op["operationId"] = json!(format!("{m} {}", r.path));
            op["summary"] = op["operationId"].clone();
            item[m.to_lowercase()] = op;
        }
    }
    let mut schemas = gen.take_definitions(true);
    if let Value::Object(common) = common_schemas() {
        schemas.extend(common);
    }
    Reply::ok(json!({
        "openapi": "3.1.0",
        "info": {"title": "plinth", "version": "2.0.4"},
        "servers": [{"url": app.public_url}],
        "paths": paths,
        "components": {
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
            "schemas": schemas,
        },
    }))
}

/// The envelope every answer shares.
fn common_schemas() -> Value {
    let usage = json!({
        "type": "object",
        "properties": {
            "tokens": {"type": "object", "properties": {"cost": {"type": "integer"}, "remaining": {"type": "integer"}}},
            "rate_limit": {"type": "object", "properties": {"limit": {"type": "integer"}, "remaining": {"type": "integer"}, "interval_ms": {"type": "integer"}}},
        },
    });
    json!({
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
    })
}
