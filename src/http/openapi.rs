//! The OpenAPI document of `GET /api/openapi.json` (an addition beyond the spec's list), generated from the
//! route tables, `ROUTES` and `EXTRA_ROUTES` (paths, methods, tags, security, rate
//! category and cost per operation), the spec's own notes (`fixtures/spec_notes.tsv`:
//! summaries and descriptions), and for every built endpoint the request and answer
//! types of its handler (`crate::http::schema`). OpenAPI 3.1, so the schemas are JSON Schema
//! 2020-12. Operation ids are the path in camelCase (`slidesExportsCreate`), stable
//! across releases; every operation lists the statuses it answers, each error with the
//! shared envelope.

use std::collections::HashMap;
use std::sync::LazyLock;

use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use crate::http::routes::{Access, RouteSpec};
use crate::state::AppState;

/// How an organization is named in the body of an OrgMember/OrgAdmin route.
fn org_ref() -> Value {
    let name = json!({"type": "string", "minLength": 1, "pattern": "\\S"});
    json!({
        "type": "object",
        "description": "names the organization: `domain`, else `organizationId`, `organization_id` or `id`",
        "properties": {
            "domain": name,
            "organizationId": name,
            "organization_id": name,
            "id": name,
        },
        "anyOf": [
            {"required": ["domain"]},
            {"required": ["organizationId"]},
            {"required": ["organization_id"]},
            {"required": ["id"]},
        ],
    })
}

/// A body schema that also names the organization: one object schema (the body's
/// properties, the organization's four names, `anyOf` one of them), simpler for
/// generators than an `allOf`.
fn with_org_ref(mut body: Value) -> Value {
    let org = org_ref();
    let Some(b) = body.as_object_mut() else {
        return json!({"allOf": [org, body]});
    };
    let names = org["properties"].as_object().cloned().unwrap_or_default();
    if let Some(p) = b
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        for (k, v) in names {
            match p.get_mut(&k).and_then(Value::as_object_mut) {
                // The body's own field of that name (a record's `id`) is read by the
                // guard too when no other name comes first: it must not be blank either.
                Some(own) if !own.contains_key("pattern") => {
                    own.entry("minLength").or_insert(json!(1));
                    own.insert("pattern".into(), json!("\\S"));
                }
                Some(_) => {}
                None => {
                    p.insert(k, v);
                }
            }
        }
    }
    b.insert("anyOf".into(), org["anyOf"].clone());
    if let Some(d) = b.get("description").and_then(Value::as_str) {
        let d = format!("{d} The body names the organization: `domain`, else `organizationId`, `organization_id` or `id`.");
        b.insert("description".into(), json!(d));
    } else {
        b.insert("description".into(), org["description"].clone());
    }
    body
}

/// The operation id of a route: its path after `/api/` in camelCase, a path parameter
/// as `By<Name>`, and the method appended for the second method of a row that takes two
/// (`GET /api/posts/{id}` is `postsById`).
pub fn operation_id(method: &str, path: &str, second: bool) -> String {
    let mut id = String::new();
    for seg in path.trim_start_matches("/api/").split('/') {
        let (seg, by) = match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(p) => (p, true),
            None => (seg, false),
        };
        if by {
            id.push_str("By");
        }
        for word in seg.split(['-', '_', '.']).filter(|w| !w.is_empty()) {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                if id.is_empty() {
                    id.extend(first.to_lowercase());
                } else {
                    id.extend(first.to_uppercase());
                }
                id.push_str(chars.as_str());
            }
        }
    }
    if second {
        let m = method.to_ascii_lowercase();
        id.push_str(&m[..1].to_uppercase());
        id.push_str(&m[1..]);
    }
    id
}

/// The spec's request and notes columns, by method and our path.
static NOTES: LazyLock<HashMap<(String, String), (String, String)>> = LazyLock::new(|| {
    let spec_path: HashMap<(String, String), String> = include_str!("../../fixtures/endpoints.tsv")
        .lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            Some((
                (c.first()?.to_string(), c.get(1)?.to_string()),
                c.get(2)?.to_string(),
            ))
        })
        .collect();
    let notes: HashMap<(String, String), (String, String)> =
        include_str!("../../fixtures/spec_notes.tsv")
            .lines()
            .skip(1)
            .filter_map(|l| {
                let c: Vec<&str> = l.split('\t').collect();
                Some((
                    (c.first()?.to_string(), c.get(1)?.to_string()),
                    (c.get(2)?.to_string(), c.get(3)?.to_string()),
                ))
            })
            .collect();
    spec_path
        .into_iter()
        .filter_map(|(ours, spec)| Some((ours.clone(), notes.get(&(ours.0, spec))?.clone())))
        .collect()
});

/// A summary and description: the spec's notes (the path itself when it has none), its
/// request column, and who may call the route.
fn texts(r: &RouteSpec) -> (String, String) {
    let (request, notes) = NOTES
        .get(&(r.method.to_owned(), r.path.to_owned()))
        .cloned()
        .unwrap_or_default();
    let summary = if notes.is_empty() {
        format!("{} {}", r.method, r.path)
    } else {
        notes.trim_end_matches('.').to_owned()
    };
    let mut description = format!(
        "Access: {}. Rate category: {}.",
        r.access.name(),
        r.category.name()
    );
    if !request.is_empty() && request != "none" {
        description.push_str(&format!(" The spec's request: {request}."));
    }
    (summary, description)
}

/// The error answers an operation may give: the shared envelope for each.
fn error_responses(r: &RouteSpec, takes_body: bool, keyed: bool) -> Map<String, Value> {
    let error = |what: &str| {
        json!({"description": what, "headers": common_headers(),
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
    };
    let mut out = Map::new();
    out.insert(
        "400".into(),
        error("bad input: the message names the field"),
    );
    if r.access != Access::Public {
        out.insert("401".into(), error("no valid API key"));
        out.insert("403".into(), error("the key may not do this"));
    }
    out.insert("404".into(), error("not found, or not the caller's"));
    out.insert("409".into(), error("conflicts with the current state"));
    if keyed {
        out.insert(
            "422".into(),
            error("the `Idempotency-Key` was used for another request"),
        );
    }
    if takes_body {
        out.insert(
            "413".into(),
            error(&format!(
                "the body is larger than {} MiB",
                r.body_limit >> 20
            )),
        );
        out.insert(
            "415".into(),
            error("the body's Content-Type is not one this operation takes"),
        );
    }
    out.insert(
        "429".into(),
        error("rate limit reached: retry after `retry_after_ms`"),
    );
    out.insert(
        "503".into(),
        error("a service plinth depends on is unavailable"),
    );
    out.insert(
        "default".into(),
        error("any other error, in the same envelope"),
    );
    out
}

/// The fields of a body schema as query parameters of `op` (values are text there; a
/// number is sent as a numeral). An organization guard needs `domain`.
fn query_params(op: &mut Value, schema: &Value, names_org: bool) {
    let parts: Vec<&Value> = match schema.get("allOf").and_then(Value::as_array) {
        Some(all) => all.iter().collect(),
        None => vec![schema],
    };
    let params = op["parameters"].as_array_mut().expect("an array");
    for part in parts {
        let required: Vec<&str> = part["required"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(props) = part["properties"].as_object() else {
            continue;
        };
        for (name, s) in props {
            if params.iter().any(|p| p["name"] == *name) {
                continue;
            }
            // Of the four ways to name the organization, a query string documents one.
            if names_org && ["organizationId", "organization_id", "id"].contains(&name.as_str()) {
                continue;
            }
            let needed = required.contains(&name.as_str()) || (names_org && name == "domain");
            params.push(json!({"name": name, "in": "query", "required": needed, "schema": url_safe(s.clone())}));
        }
    }
}

/// Headers on every answer of the JSON API.
fn common_headers() -> Value {
    let int = json!({"schema": {"type": "integer"}});
    json!({
        "x-request-id": {"description": "the client's, or a new one", "schema": {"type": "string"}},
        "x-ratelimit-limit": int,
        "x-ratelimit-remaining": int,
        "x-ratelimit-interval-ms": int,
        "x-tokens-cost": int,
    })
}

/// The document, as `GET /api/openapi.json` answers it (the handler reaches this through
/// the state, `Inner::openapi`: the handler is in the route table this reads).
pub fn document(app: &AppState) -> Value {
    let mut gen = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let mut paths = Map::new();
    for r in crate::http::routes::all() {
        let doc = r.doc.map(|d| d(&mut gen)).unwrap_or_default();
        let op = operation(app, r, &doc);
        let item = paths
            .entry(r.path.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        for (i, m) in std::iter::once(r.method).chain(r.also).enumerate() {
            let mut op = op.clone();
            // Operation ids are unique per method (found by openapi-spec-validator).
            op["operationId"] = json!(operation_id(m, r.path, i > 0));
            if m == "GET" {
                // A GET reads what a body would carry from its query string (the
                // organization guards do): the body's fields become query parameters.
                if let Some(body) = op.as_object_mut().and_then(|o| o.remove("requestBody")) {
                    let schema = &body["content"]["application/json"]["schema"];
                    query_params(&mut op, schema, doc.names_org);
                }
            }
            item[m.to_lowercase()] = op;
        }
    }
    whole_document(app, gen, paths)
}

/// One route's operation (for its first method; `document` copies it to the others).
fn operation(app: &AppState, r: &RouteSpec, doc: &crate::http::schema::Operation) -> Value {
    let params = parameters(r, doc);
    let security = match r.access {
        Access::Public => json!([]),
        Access::Custom => json!([{}, {"apiKey": []}]),
        _ => json!([{"apiKey": []}]),
    };
    let (summary, description) = texts(r);
    let takes_body = doc.body.is_some() || doc.raw_body || r.method != "GET";
    // The slide routes read the key through the deck actors, the others through the
    // `IdempotencyKey` argument (docs/api.md, "Idempotency").
    let rule = crate::http::routes::key_rule(r.method, r.path);
    let keyed = doc.idempotency_key
        || crate::http::idempotency::hash_route(r.path).is_some()
        || rule == Some(crate::http::keyed::KeyRule::Recorded);
    // The `Idempotency-Key` header is stated by `x-idempotency` and the description, not
    // as a parameter: a key's value must differ per request body, which no schema can
    // say, so a generator filling the parameter from its schema sends one key with many
    // bodies and reads the 422 as a valid request refused (issue 45). Clients set the
    // header themselves (docs/api.md, "Generated clients").
    let description = match keyed {
        true => format!("{description}\n\n{KEY_NOTE}"),
        false => description,
    };
    let mut responses = error_responses(r, takes_body, keyed);
    responses.insert(
        "200".into(),
        json!({"description": "success", "headers": common_headers(),
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Success"}}}}),
    );
    let mut op = json!({
        "tags": [r.area],
        "operationId": operation_id(r.method, r.path, false),
        "summary": summary,
        "description": description,
        "parameters": params,
        "security": security,
        "x-access": r.access.name(),
        "x-rate-category": r.category.name(),
        "x-token-cost": app.routes.cost_of(r),
        "x-implemented": r.implemented(),
        "responses": responses,
    });
    if let Some(rule) = rule {
        op["x-idempotency"] = json!(rule.name());
    }
    success_response(&mut op, doc);
    request_body(&mut op, r, doc);
    configured_values(app, r, &mut op);
    if let Some(body) = op.pointer_mut("/requestBody/content/application~1json/schema") {
        nullable_formats(body);
        if keyed {
            without_body_key(body);
        }
    }
    op
}

/// The slide routes' body field `idempotency_key` (the spec's name) is stated like the
/// header it equals, in the description and `x-idempotency`, not as a property: a key
/// must differ per distinct body, which no schema can say, and a generator filling the
/// property sends one key with many bodies (issue 45). The server still reads it.
fn without_body_key(schema: &mut Value) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove(BODY_KEY);
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r != BODY_KEY);
    }
    for branches in ["oneOf", "anyOf", "allOf"] {
        if let Some(all) = schema.get_mut(branches).and_then(Value::as_array_mut) {
            all.iter_mut().for_each(without_body_key);
        }
    }
}

const BODY_KEY: &str = "idempotency_key";

/// The path parameters, then the query parameters the route's documentation declares.
fn parameters(r: &RouteSpec, doc: &crate::http::schema::Operation) -> Vec<Value> {
    let mut params: Vec<Value> = r
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "pattern": NO_NUL}}))
        .collect();
    if let Some(query) = &doc.query {
        let q = query.as_value();
        let required: Vec<&str> = q["required"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = q["properties"].as_object() {
            for (name, schema) in props {
                let schema = url_safe(schema.clone());
                let mut p = json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": schema});
                if let Some(d) = schema.get("description") {
                    p["description"] = d.clone();
                }
                params.push(p);
            }
        }
    }
    params
}

/// The success answer: its schema or event stream, a redirect, another status, or none.
fn success_response(op: &mut Value, doc: &crate::http::schema::Operation) {
    if let Some(answer) = &doc.response {
        if doc.event_stream {
            op["responses"]["200"]["content"] = json!({"text/event-stream": {
                "schema": {"type": "string", "description": "server-sent events; the `data` of each is the JSON object below"},
                "x-event-data": answer.as_value().clone(),
            }});
        } else {
            op["responses"]["200"]["content"]["application/json"]["schema"] = json!({"allOf": [{"$ref": "#/components/schemas/Success"}, answer.as_value().clone()]});
        }
    }
    if doc.never_succeeds {
        op["responses"]
            .as_object_mut()
            .expect("an object")
            .remove("200");
    }
    if doc.redirect {
        op["responses"]["200"] = json!({
            "description": "redirect to a short-lived signed URL of the file",
            "headers": {"Location": {"required": true, "schema": {"type": "string", "format": "uri"}}},
        });
    }
    if let Some(status) = doc.success_status.filter(|s| *s != 200) {
        let responses = op["responses"].as_object_mut().expect("an object");
        if let Some(ok) = responses.remove("200") {
            responses.insert(status.to_string(), ok);
        }
    }
}

/// The request body: a signed provider event, a file, a JSON object, or no fields.
fn request_body(op: &mut Value, r: &RouteSpec, doc: &crate::http::schema::Operation) {
    if doc.raw_body {
        // The provider signs the body; without its signature header the event is a 400.
        if let Some(params) = op["parameters"].as_array_mut() {
            params.push(json!({"name": "Stripe-Signature", "in": "header", "required": true,
                "description": "`t=<unix time>,v1=<HMAC-SHA256 of \"t.body\">` with the webhook secret",
                "schema": {"type": "string", "minLength": 1}}));
        }
        op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"description": "the provider's signed event, checked byte for byte"}}}});
    } else if let Some(about) = doc.binary_body {
        // One content type, as generated clients model a file; the description names
        // the others the route takes.
        op["requestBody"] = json!({"required": true, "description": about, "content": {
            "application/octet-stream": {"schema": {"type": "string", "format": "binary", "minLength": 1}}}});
        op["responses"]["422"] = json!({"description": "the file is not a valid image of its type (nothing is kept)",
            "headers": common_headers(),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    } else if let Some(body) = &doc.body {
        let schema = if doc.names_org {
            with_org_ref(body.as_value().clone())
        } else {
            body.as_value().clone()
        };
        // An empty body counts as `{}` (docs/api.md): required only when a field is.
        let required = doc.names_org || requires_a_field(body.as_value());
        op["requestBody"] =
            json!({"required": required, "content": {"application/json": {"schema": schema}}});
    } else if r.method == "POST" && r.implemented() {
        op["requestBody"] = json!({"required": false, "content": {"application/json": {"schema": {"type": "object", "description": "no fields; any are ignored"}}}});
    }
}

/// What this server is configured with, so a client (and a property tester) knows the
/// values that pass: telemetry products, plans, the simulated provider's payment methods.
/// What a keyed operation's description says of the header it does not list.
const KEY_NOTE: &str = "Takes an `Idempotency-Key` header (1-255 visible characters, one \
    per distinct request; the slide routes also read it from the body's `idempotency_key`, \
    the spec's name, and refuse both when they differ, 400): a retry with the same key and \
    body replays the first answer for 24 hours (`Idempotent-Replayed: true`); another body \
    under the key is a 422, a repeat while the first runs a 409 with `Retry-After`.";

fn configured_values(app: &AppState, r: &RouteSpec, op: &mut Value) {
    if r.path.starts_with("/api/telemetry/") {
        let products: Vec<&str> = app
            .opts
            .rates
            .telemetry_products
            .iter()
            .map(|p| p.trim())
            .collect();
        if let Some(p) =
            op.pointer_mut("/requestBody/content/application~1json/schema/properties/product_id")
        {
            if products.is_empty() {
                // No product is registered, so every value is refused (400). Stated in
                // words: `not: {}` or an empty `enum` is a schema nothing satisfies, which
                // generators report as an error in the document (issue 45).
                p["description"] = json!(
                    "A registered product. None is registered on this server \
                     (PLINTH_TELEMETRY_PRODUCTS): every value is refused."
                );
            } else {
                p["enum"] = json!(products);
            }
        }
    }
    // The plans a subscription or an agent sign-up may name.
    if [
        "/api/users/subscriptions/subscribe",
        "/api/users/authenticate-agent",
    ]
    .contains(&r.path)
    {
        if let Some(p) =
            op.pointer_mut("/requestBody/content/application~1json/schema/properties/productId")
        {
            let plans: Vec<&str> = crate::adapters::payments::PLANS
                .iter()
                .map(|p| p.product_id.as_str())
                .collect();
            p["enum"] = json!(plans);
        }
    }
    // The simulated payment provider knows only Stripe's test payment methods. The enum
    // lists those that pay; the declining ones are named in the description (a decline is
    // a 402, an answer about the card, so the document does not offer them as values
    // every request may take).
    if app.payments.hosted_by_plinth() {
        let (pay, decline) = crate::adapters::payments::simulated_payment_methods();
        for name in ["paymentMethodId", "payment_method_id"] {
            let at = format!("/requestBody/content/application~1json/schema/properties/{name}");
            if let Some(p) = op.pointer_mut(&at) {
                p["enum"] = json!(pay);
                let said = p["description"].as_str().unwrap_or_default().to_owned();
                p["description"] = json!(format!(
                    "{said}\n\nThis server simulates payments: the test cards above pay; \
                     {} are declined (402).",
                    decline.join(", ")
                )
                .trim_start());
            }
        }
    }
}

/// The paths with the shared schemas, tags, servers and security schemes.
fn whole_document(
    app: &AppState,
    mut gen: schemars::SchemaGenerator,
    paths: Map<String, Value>,
) -> Value {
    let mut schemas = gen.take_definitions(true);
    for s in schemas.values_mut() {
        nullable_formats(s);
    }
    name_recursive_branches(&mut schemas);
    if let Value::Object(common) = common_schemas() {
        schemas.extend(common);
    }
    let mut areas: Vec<&str> = crate::http::routes::all().map(|r| r.area).collect();
    areas.sort_unstable();
    areas.dedup();
    let tags: Vec<Value> = areas.iter().map(|a| json!({"name": a})).collect();
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {"title": "plinth", "version": "2.0.4",
                 "description": "The JSON REST API of plinth: the spec's 216 endpoints and the additions in docs/api.md. Every answer is a JSON object with `_usage`; every error is `{error: true, message, _usage}`."},
        "servers": [{"url": app.public_url}],
        "tags": tags,
        "paths": paths,
        "components": {
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
            "schemas": schemas,
        },
    });
    objects_for_boolean_schemas(&mut doc);
    doc
}

/// A union whose inline branches refer back to the union (a deck's `Block`: a quote holds
/// blocks) gets each tagged branch as a component of its own, `QuoteBlock` for the
/// branch whose `type` is `quote`: generators read a self-reference inside an inline
/// branch as an invalid union (openapi-python-client drops the operation), a named
/// model that refers back as a plain recursive model. Same shape, named.
fn name_recursive_branches(schemas: &mut Map<String, Value>) {
    let unions: Vec<String> = schemas
        .iter()
        .filter(|(name, s)| {
            let me = format!("\"#/components/schemas/{name}\"");
            s["oneOf"].as_array().is_some_and(|branches| {
                branches
                    .iter()
                    .any(|b| b.get("$ref").is_none() && b.to_string().contains(&me))
            })
        })
        .map(|(name, _)| name.clone())
        .collect();
    for union in unions {
        let Some(Value::Array(branches)) = schemas[&union].get("oneOf").cloned() else {
            continue;
        };
        let mut named = Vec::with_capacity(branches.len());
        for branch in branches {
            let tag = branch["properties"]
                .as_object()
                .and_then(|p| p.values().find_map(|v| v["const"].as_str()));
            match tag {
                Some(tag) if branch.get("$ref").is_none() => {
                    let mut name: String = tag
                        .split('_')
                        .map(|w| {
                            let mut c = w.chars();
                            c.next().map_or_else(String::new, |f| {
                                f.to_ascii_uppercase().to_string() + c.as_str()
                            })
                        })
                        .collect();
                    name.push_str(&union);
                    named.push(json!({"$ref": format!("#/components/schemas/{name}")}));
                    schemas.insert(name, branch);
                }
                _ => named.push(branch),
            }
        }
        schemas[&union]["oneOf"] = Value::Array(named);
    }
}

/// Whether an object schema needs at least one field: a `required` list, or `anyOf` or
/// `oneOf` branches that each need one (a download revoke's `id` or `token`).
fn requires_a_field(schema: &Value) -> bool {
    let listed = schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    let branches = ["anyOf", "oneOf"].iter().any(|k| {
        schema
            .get(*k)
            .and_then(Value::as_array)
            .is_some_and(|bs| !bs.is_empty() && bs.iter().all(requires_a_field))
    });
    listed || branches
}

/// No URL may hold a NUL (`%00`): the server refuses it before any route (400).
const NO_NUL: &str = "^[^\\u0000]*$";

/// A query parameter's schema with the URL's own rule: no NUL. A pattern the schema
/// already has is kept beside it.
fn url_safe(mut schema: Value) -> Value {
    let Some(m) = schema.as_object_mut() else {
        return schema;
    };
    let text = match m.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    };
    if !text || m.contains_key("enum") || m.contains_key("format") {
        return schema;
    }
    match m.remove("pattern") {
        None => {
            m.insert("pattern".into(), json!(NO_NUL));
        }
        Some(own) => {
            m.insert(
                "allOf".into(),
                json!([{"pattern": own}, {"pattern": NO_NUL}]),
            );
        }
    }
    schema
}

/// Hands every JSON object under `root` (arrays looked into) to `visit`, which says
/// whether to look inside it. Iterative: a schema may nest deeper than a stack should.
fn each_object(root: &mut Value, mut visit: impl FnMut(&mut Map<String, Value>) -> bool) {
    let mut stack = vec![root];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a.iter_mut()),
            Value::Object(m) => {
                let inside = visit(m);
                if inside {
                    stack.extend(m.values_mut());
                }
            }
            _ => {}
        }
    }
}

/// `{"type": ["string", "null"], "format": ...}` as `anyOf` a formatted string or null:
/// the same values, in the shape property testers and generators keep the format of
/// (schemathesis's coverage phase drops a format beside a `null` type).
fn nullable_formats(schema: &mut Value) {
    each_object(schema, |m| {
        let nullable = m
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|ts| ts.contains(&json!("null")));
        // An enum on an optional field (`#[schemars(extend("enum" = ...))]`) lists the
        // values; `null` is one too, as the field's type says.
        if let Some(Value::Array(values)) = m.get_mut("enum") {
            if nullable && !values.contains(&Value::Null) {
                values.push(Value::Null);
            }
        }
        let nullable_string = nullable
            && m.get("type")
                .and_then(Value::as_array)
                .is_some_and(|ts| ts.len() == 2 && ts.contains(&json!("string")));
        if nullable_string && m.contains_key("format") {
            let description = m.remove("description");
            let mut text = std::mem::take(m);
            text.insert("type".into(), json!("string"));
            m.insert("anyOf".into(), json!([text, {"type": "null"}]));
            if let Some(d) = description {
                m.insert("description".into(), d);
            }
            return false;
        }
        true
    });
}

/// Keywords whose value is one schema, and those whose value maps names to schemas.
const SCHEMA_KEYWORDS: [&str; 8] = [
    "schema",
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
];
const SCHEMA_MAPS: [&str; 4] = ["properties", "patternProperties", "$defs", "schemas"];

/// JSON Schema lets `true` stand for "any value" (schemars writes it for `serde_json::Value`),
/// but common client generators (openapi-python-client among them) accept only object
/// schemas: `{}` means the same and every tool reads it.
fn objects_for_boolean_schemas(doc: &mut Value) {
    each_object(doc, |m| {
        for (k, child) in m.iter_mut() {
            let is_schema_map = SCHEMA_MAPS.contains(&k.as_str());
            if SCHEMA_KEYWORDS.contains(&k.as_str()) && *child == Value::Bool(true) {
                *child = json!({});
            } else if is_schema_map {
                if let Value::Object(entries) = child {
                    for s in entries.values_mut() {
                        if *s == Value::Bool(true) {
                            *s = json!({});
                        }
                    }
                }
            }
        }
        true
    });
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
                "window": {"type": "string", "description": "A 429 from a rate window: its category (`read`, `write`, `auth`, …)."},
                "limit": {"type": "integer", "description": "A 429 from a rate window: the requests it takes per `interval_ms`."},
                "interval_ms": {"type": "integer"},
                "reopens_at": {"type": "string", "format": "date-time", "description": "A 429 from a rate window: when it takes requests again."},
                "tokens_required": {"type": "integer"},
                "tokens_balance": {"type": "integer"},
                "payment_url": {"type": "string"},
                "_usage": {"$ref": "#/components/schemas/Usage"},
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::operation_id;

    #[test]
    fn operation_ids_are_camel_case_and_unique() {
        assert_eq!(
            operation_id("POST", "/api/slides/exports/create", false),
            "slidesExportsCreate"
        );
        assert_eq!(operation_id("GET", "/api/posts/{id}", false), "postsById");
        assert_eq!(operation_id("GET", "/api/documents", true), "documentsGet");
        assert_eq!(
            operation_id(
                "POST",
                "/api/credits/verify-apple-transaction-distritbution",
                false
            ),
            "creditsVerifyAppleTransactionDistritbution"
        );
        let mut seen = std::collections::HashSet::new();
        for r in crate::http::routes::all() {
            for (i, m) in std::iter::once(r.method).chain(r.also).enumerate() {
                let id = operation_id(m, r.path, i > 0);
                assert!(seen.insert(id.clone()), "{id} twice ({m} {})", r.path);
                assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
            }
        }
    }
}
