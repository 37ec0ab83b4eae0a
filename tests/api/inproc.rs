//! In-process tests of pure rules: the whole app (`plinth::app`, every layer) built by
//! `plinth::server::build` on a temp SQLite database and driven with tower's `oneshot`
//! — no listener, no child process, no port. Rules that need a client's view of the
//! wire (sockets, workers, peers) stay with `common::Server`.

use axum::body::Body;
use axum::http::{Method, Request};
use clap::Parser;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::common::Resp;

pub struct App {
    router: axum::Router,
    built: plinth::server::Built,
    _dir: tempfile::TempDir,
}

impl Drop for App {
    fn drop(&mut self) {
        self.built.stop();
    }
}

impl App {
    pub async fn start() -> App {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("plinth.db").display());
        let cli = plinth::config::Cli::try_parse_from([
            "plinth",
            "--data-dir",
            dir.path().to_str().unwrap(),
            "--database-url",
            &url,
            "--no-workers",
            // As for `common::Server`: many requests from one (here: no) address.
            "--rate-limit-multiplier",
            "1000",
        ])
        .unwrap();
        let built = plinth::server::build(cli.opts, "127.0.0.1:9")
            .await
            .unwrap();
        App {
            router: plinth::app(built.state.clone()),
            built,
            _dir: dir,
        }
    }

    pub async fn send(&self, req: Request<Body>) -> Resp {
        let res = self.router.clone().oneshot(req).await.unwrap();
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        Resp {
            status: parts.status,
            headers: parts.headers,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    pub async fn call(&self, method: Method, path: &str, body: Option<(&str, &str)>) -> Resp {
        let req = Request::builder().method(method).uri(path);
        let req = match body {
            Some((ct, b)) => req
                .header("content-type", ct)
                .body(Body::from(b.to_owned())),
            None => req.body(Body::empty()),
        };
        self.send(req.unwrap()).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.call(
            Method::POST,
            path,
            Some(("application/json", &body.to_string())),
        )
        .await
    }
}

#[tokio::test]
async fn unknown_routes_wrong_methods_and_the_404_endpoint() {
    let app = App::start().await;
    app.call(Method::GET, "/api/does-not-exist", None)
        .await
        .assert_error(404);
    app.post("/somewhere/else", json!({}))
        .await
        .assert_error(404);
    app.post("/api/404", json!({})).await.assert_error(404);
    let r = app.call(Method::DELETE, "/api/status", None).await;
    r.assert_error(405);
    assert!(r.body["message"].as_str().unwrap().contains("DELETE"));
    // A POST-only route asked with GET.
    app.call(Method::GET, "/api/users/authenticate", None)
        .await
        .assert_error(405);
    // A public route whose area is not built yet (while one is left).
    let unbuilt = plinth::http::routes::ROUTES.iter().find(|r| {
        !r.implemented() && r.method == "POST" && r.access == plinth::http::routes::Access::Public
    });
    if let Some(route) = unbuilt {
        let r = app.post(route.path, json!({})).await;
        r.assert_error(501);
        assert!(r.body["message"]
            .as_str()
            .unwrap()
            .contains("not implemented"));
    }
}

#[tokio::test]
async fn malformed_bodies_get_a_4xx_naming_the_problem() {
    let app = App::start().await;
    let path = "/api/users/authenticate";
    let send =
        |body: &'static str, ct: &'static str| app.call(Method::POST, path, Some((ct, body)));

    let r = send("{\"email\":", "application/json").await;
    r.assert_error(400);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("malformed JSON"));

    let r = send("[1,2]", "application/json").await;
    r.assert_error(400);
    assert!(r.body["message"].as_str().unwrap().contains("JSON object"));

    for body in [
        "{\"email\": 5, \"password\": \"x\"}",
        "{\"password\": \"x\"}",
    ] {
        let r = send(body, "application/json").await;
        r.assert_error(400);
        assert!(
            r.body["message"].as_str().unwrap().contains("email"),
            "{}",
            r.body
        );
    }

    send("email=a", "application/x-www-form-urlencoded")
        .await
        .assert_error(415);

    app.post(path, json!({"email": "not-an-email", "password": "x"}))
        .await
        .assert_error(400);
    app.post(path, json!({"email": "e@example.com", "password": ""}))
        .await
        .assert_error(400);
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_a_sent_one_is_echoed() {
    let app = App::start().await;
    let r = app
        .call(Method::GET, "/api/slides/capabilities", None)
        .await;
    r.assert_ok();
    let id = r.header("x-request-id").expect("a generated request id");
    assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4);
    let req = Request::get("/api/nowhere")
        .header("x-request-id", "client-chosen-42")
        .body(Body::empty())
        .unwrap();
    let r = app.send(req).await;
    r.assert_error(404);
    assert_eq!(
        r.header("x-request-id").as_deref(),
        Some("client-chosen-42")
    );
}

/// Follows a local `$ref` (`#/components/schemas/Name`) in `doc`.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => resolve(doc, doc.pointer(r.trim_start_matches('#')).unwrap()),
        None => schema,
    }
}

/// The object schemas a body schema is made of (`allOf` parts, refs followed).
fn parts<'a>(doc: &'a Value, schema: &'a Value) -> Vec<&'a Value> {
    let schema = resolve(doc, schema);
    // `allOf` parts, and the whole alternatives of a `oneOf` body (`slides/create`).
    match schema["allOf"].as_array().or(schema["oneOf"].as_array()) {
        Some(all) => all.iter().flat_map(|s| parts(doc, s)).collect(),
        None => vec![schema],
    }
}

fn property_names(doc: &Value, schema: &Value) -> Vec<String> {
    parts(doc, schema)
        .iter()
        .filter_map(|s| s["properties"].as_object())
        .flat_map(|p| p.keys().cloned())
        .collect()
}

fn required_names(doc: &Value, schema: &Value) -> Vec<String> {
    parts(doc, schema)
        .iter()
        .filter_map(|s| s["required"].as_array())
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// Issue 33: every operation states what it answers on success: a typed body (beyond
/// the bare `Success` envelope), a redirect with its `Location`, or, for the spec's
/// `POST /api/404`, no success at all. Only the document itself is free-form.
#[tokio::test]
async fn every_operation_documents_its_success_answer() {
    let app = App::start().await;
    let r = app.call(Method::GET, "/api/openapi.json", None).await;
    r.assert_ok();
    let bare = json!({"$ref": "#/components/schemas/Success"});
    let mut untyped = Vec::new();
    for (path, ops) in r.body["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            let success: Vec<_> = responses
                .iter()
                .filter(|(status, _)| status.starts_with('2') || status.starts_with('3'))
                .collect();
            let typed = match success.as_slice() {
                [] => path == "/api/404",
                [(status, answer)] if status.starts_with('3') => {
                    answer["headers"]["Location"].is_object()
                }
                [(_, answer)] => {
                    let content = &answer["content"];
                    content["text/event-stream"].is_object()
                        || content["application/json"]["schema"] != bare
                }
                _ => false,
            };
            if !typed && path != "/api/openapi.json" {
                untyped.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    assert!(untyped.is_empty(), "no typed success answer: {untyped:?}");

    // The routes that honour `Idempotency-Key` say so (in words: the header is no
    // parameter, as a key must differ per body), and list the 422 it can bring.
    let keyed = |method: &str, path: &str| {
        let op = &r.body["paths"][path][method];
        let said = op["description"]
            .as_str()
            .is_some_and(|d| d.contains("Takes an `Idempotency-Key` header"));
        let parameter = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["in"] == "header" && p["name"] == "Idempotency-Key");
        assert!(!parameter, "{path}");
        assert_eq!(said, op["responses"]["422"].is_object(), "{path}");
        said
    };
    for path in [
        "/api/credits/deduct",
        "/api/credits/send",
        "/api/marketplace/checkout",
        "/api/licenses/purchase",
        "/api/downloads/purchase",
        "/api/slides/exports/create",
        "/api/slides/update",
    ] {
        assert!(keyed("post", path), "{path} does not list Idempotency-Key");
    }
    assert!(!keyed("get", "/api/credits/balance"));
    // Recorded around the handler (issue 45), and refused where a key makes no sense.
    assert!(keyed("post", "/api/posts/create"));
    assert!(!keyed("post", "/api/users/authenticate"));
    let rule = |path: &str| r.body["paths"][path]["post"]["x-idempotency"].clone();
    assert_eq!(rule("/api/posts/create"), "honoured");
    assert_eq!(rule("/api/users/authenticate"), "refused");
}

#[tokio::test]
async fn openapi_has_request_schemas_for_every_built_endpoint_and_main_responses() {
    let app = App::start().await;
    let r = app.call(Method::GET, "/api/openapi.json", None).await;
    r.assert_ok();
    let doc = &r.body;
    let mut checked = 0;
    for route in plinth::http::routes::ROUTES
        .iter()
        .filter(|r| r.implemented())
    {
        let op = &doc["paths"][route.path][route.method.to_lowercase()];
        if route.method == "POST" {
            let schema = &op["requestBody"]["content"]["application/json"]["schema"];
            assert!(
                schema.is_object(),
                "POST {} has no request schema",
                route.path
            );
            checked += 1;
        }
    }
    assert!(checked >= 78, "{checked}");

    let body_of = |path: &str| {
        doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"].clone()
    };
    // Typed bodies: the fields and which are required come from the Rust structs.
    let send = body_of("/api/credits/send");
    assert!(
        required_names(doc, &send).contains(&"amount".to_owned()),
        "{send}"
    );
    // Updates take operations; deck changes state their idempotency key in the
    // description and `x-idempotency`, not as a property (a key must differ per body,
    // which no schema can say: issue 45).
    let update = body_of("/api/slides/update");
    let names = property_names(doc, &update);
    for f in [
        "id",
        "expected_version",
        "operations",
        "markdown",
        "document",
    ] {
        assert!(names.contains(&f.to_owned()), "{f} not in {names:?}");
    }
    assert!(!names.contains(&"idempotency_key".to_owned()), "{names:?}");
    let op = &doc["paths"]["/api/slides/update"]["post"];
    assert!(op["description"]
        .as_str()
        .unwrap()
        .contains("`idempotency_key`"));
    assert_eq!(op["x-idempotency"], json!("honoured"), "{op}");
    // Organization routes name the organization.
    let add = body_of("/api/organizations/users/add");
    let names = property_names(doc, &add);
    assert!(
        names.contains(&"domain".to_owned()) && names.contains(&"email".to_owned()),
        "{names:?}"
    );
    // Query parameters of GET routes.
    let params: Vec<&str> = doc["paths"]["/api/slides/revisions"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in"] == "query")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(params, ["deck_id", "limit", "offset"]);
    // The payment webhook takes the provider's bytes.
    assert!(doc["paths"]["/api/webhooks/stripe"]["post"]["requestBody"].is_object());

    // Typed answers: the schema is the handler's return type.
    let answer = |path: &str| {
        doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
            .clone()
    };
    let viewer = answer("/api/users/viewer");
    assert!(
        property_names(doc, &viewer).contains(&"user".to_owned()),
        "{viewer}"
    );
    let user = parts(doc, &viewer)
        .iter()
        .find_map(|s| s["properties"].get("user").cloned())
        .unwrap();
    let user_fields = property_names(doc, &user);
    for f in ["id", "email", "level", "verified", "key"] {
        assert!(
            user_fields.contains(&f.to_owned()),
            "{f} not in {user_fields:?}"
        );
    }
    assert!(required_names(doc, &answer("/api/credits/balance")).contains(&"balance".to_owned()));
    assert!(property_names(doc, &answer("/api/status")).contains(&"services".to_owned()));

    // What generators need (issue 33): stable camelCase operation ids, schema names that
    // are not numbered (they would move between releases), a tag per spec area, the
    // spec's notes as summaries, and every error status in the shared envelope.
    assert_eq!(
        doc["paths"]["/api/slides/exports/create"]["post"]["operationId"],
        "slidesExportsCreate"
    );
    let names: Vec<&String> = doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    let numbered: Vec<&&String> = names
        .iter()
        .filter(|n| n.ends_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(numbered.is_empty(), "numbered schema names: {numbered:?}");
    let tags: Vec<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tags.contains(&"Slide decks") && tags.contains(&"Credits"),
        "{tags:?}"
    );
    let status = &doc["paths"]["/api/status"]["get"];
    assert_eq!(status["summary"], "health of the server and its services");
    let mut ids = std::collections::HashSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap();
            assert!(
                id.chars().all(|c| c.is_ascii_alphanumeric()) && ids.insert(id.to_owned()),
                "{method} {path}: {id}"
            );
            for code in ["400", "404", "429", "default"] {
                assert_eq!(
                    op["responses"][code]["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/Error",
                    "{method} {path} {code}"
                );
            }
        }
    }

    validate_with_an_independent_validator(doc);
}

/// `openapi-spec-validator` (PyPI), which `.ci/run` installs; skipped, saying so,
/// where it is missing.
fn validate_with_an_independent_validator(doc: &Value) {
    let have = std::process::Command::new("python3")
        .args(["-c", "import openapi_spec_validator"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("skipping the OpenAPI validator: `pip install openapi-spec-validator` to run it");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    // Every answer carries `_usage`; the document is the rest.
    let mut doc = doc.clone();
    doc.as_object_mut().unwrap().remove("_usage");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = std::process::Command::new("python3")
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "openapi-spec-validator: {}",
        &said[..said.len().min(4000)]
    );
}
