//! The route table against the spec's list, and every listed path answering.

use std::collections::BTreeSet;

use plinth::http::routes::{Access, ROUTES};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::Server;

fn spec_rows() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/endpoints.tsv"
    ))
    .unwrap();
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            (cols[0].to_owned(), cols[1].to_owned())
        })
        .collect()
}

#[test]
fn table_has_exactly_the_spec_endpoints() {
    let spec: BTreeSet<_> = spec_rows().into_iter().collect();
    assert_eq!(spec.len(), 216);
    let table: BTreeSet<_> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    let missing: Vec<_> = spec.difference(&table).collect();
    let extra: Vec<_> = table.difference(&spec).collect();
    assert!(
        missing.is_empty(),
        "routes missing from the table: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "undocumented routes in the table: {extra:?}"
    );
    assert_eq!(ROUTES.len(), 216, "a route is declared twice");
}

/// Concrete URL for a table path: `{id}` and friends become a placeholder value.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| {
            if seg.starts_with('{') {
                "nonexistent"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn every_spec_path_answers_with_the_envelope() {
    let s = Server::start().await;
    let mut admin = s.admin(&crate::common::email("admin")).await;
    for r in ROUTES {
        let method = Method::from_bytes(r.method.as_bytes()).unwrap();
        let res = s
            .request(method, &concrete(r.path), Some(&admin), Some(json!({})))
            .await;
        res.assert_usage();
        if let Some(k) = res.body.get("key").and_then(|k| k.as_str()) {
            admin = k.to_owned(); // regenerate-key replaced it
        }
        let status = res.status.as_u16();
        assert!(
            status != 405
                && !(status == 404
                    && res.body["message"]
                        .as_str()
                        .unwrap()
                        .starts_with("no route")),
            "{} {} is not routed: {}",
            r.method,
            r.path,
            res.body
        );
        if !r.implemented() {
            res.assert_error(501);
            assert!(res.body["message"]
                .as_str()
                .unwrap()
                .contains("not implemented"));
        }
        assert_ne!(status, 500, "{} {}: {}", r.method, r.path, res.body);
    }
}

#[tokio::test]
async fn access_rules_of_the_table_are_enforced_on_every_route() {
    let s = Server::start().await;
    let (unverified, _) = s.signup(&crate::common::email("u0")).await;
    let verified = s.verified_user(&crate::common::email("u10")).await;
    for r in ROUTES {
        let method = Method::from_bytes(r.method.as_bytes()).unwrap();
        let path = concrete(r.path);
        let anon = s
            .request(method.clone(), &path, None, Some(json!({})))
            .await;
        let bad = s
            .request(method.clone(), &path, Some("pk_not_a_key"), Some(json!({})))
            .await;
        match r.access {
            Access::Key | Access::V10 | Access::Admin100 | Access::OrgMember | Access::OrgAdmin => {
                anon.assert_error(401);
                bad.assert_error(401);
            }
            Access::Custom if crate::common::guest_session_route(r.path) && r.implemented() => {
                anon.assert_error(401);
                bad.assert_error(401);
            }
            Access::Public | Access::Custom => {
                assert_ne!(anon.status.as_u16(), 401, "{} {}", r.method, r.path);
            }
        }
        if r.access == Access::V10 {
            s.request(method.clone(), &path, Some(&unverified), Some(json!({})))
                .await
                .assert_error(403);
        }
        if r.access == Access::Admin100 {
            s.request(method.clone(), &path, Some(&verified), Some(json!({})))
                .await
                .assert_error(403);
        }
    }
}

#[tokio::test]
async fn pricing_lists_every_endpoint_from_the_table() {
    let s = Server::start().await;
    let r = s.get("/api/credits/pricing", None).await;
    r.assert_ok();
    let data = r.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 216);
    let spec: BTreeSet<_> = spec_rows().into_iter().collect();
    for row in data {
        let key = (
            row["method"].as_str().unwrap().to_owned(),
            row["path"].as_str().unwrap().to_owned(),
        );
        assert!(spec.contains(&key), "{key:?}");
        assert_eq!(row["cost"], json!(0));
    }
    let find = |m: &str, p: &str| {
        data.iter()
            .find(|r| r["method"] == json!(m) && r["path"] == json!(p))
            .unwrap()
            .clone()
    };
    let auth = find("POST", "/api/users/authenticate");
    assert_eq!(auth["category"], json!("auth"));
    assert_eq!(auth["limit"], json!(5));
    assert_eq!(auth["interval_ms"], json!(60000));
    assert_eq!(
        find("POST", "/api/credits/send")["category"],
        json!("financial")
    );
    assert_eq!(
        find("POST", "/api/slides/exports/create")["limit"],
        json!(1)
    );
    assert_eq!(find("POST", "/api/analytics/track")["limit"], json!(600));
    let hook = find("POST", "/api/webhooks/stripe");
    assert_eq!(hook["category"], json!("unlimited"));
    assert_eq!(hook["limit"], json!(null));
}

#[tokio::test]
async fn openapi_document_covers_the_table() {
    let s = Server::start().await;
    let r = s.get("/api/openapi.json", None).await;
    r.assert_ok();
    let paths = r.body["paths"].as_object().unwrap();
    for route in ROUTES {
        let op = &paths[route.path][route.method.to_lowercase()];
        assert!(op.is_object(), "{} {} missing", route.method, route.path);
        assert_eq!(op["x-rate-category"], json!(route.category.name()));
        let secured = !op["security"].as_array().unwrap().is_empty();
        assert_eq!(secured, route.access != Access::Public, "{}", route.path);
    }
    assert_eq!(
        r.body["components"]["securitySchemes"]["apiKey"]["name"],
        json!("x-api-key")
    );
    // The listed-GET / example-POST endpoint answers both.
    assert!(paths["/api/users/list-by-source"]["post"].is_object());
}

/// A field the server reads as optional is never required by the document (schemars
/// marks a `schema_with` field required unless it has `#[serde(default)]`: the bulk job
/// body required `queue` and `status` that way, and a body without them was "invalid"
/// yet accepted). Walks every request body and query parameter for a required field
/// whose schema allows null.
#[tokio::test]
async fn no_request_requires_a_field_that_may_be_null() {
    fn nullable(s: &Value) -> bool {
        let t = &s["type"];
        t == "null"
            || t.as_array().is_some_and(|a| a.contains(&json!("null")))
            || s["enum"]
                .as_array()
                .is_some_and(|e| e.contains(&Value::Null))
            || ["anyOf", "oneOf"].iter().any(|k| {
                s[k].as_array()
                    .is_some_and(|a| a.iter().any(|b| b["type"] == "null"))
            })
    }
    fn walk(s: &Value, at: &str, found: &mut Vec<String>) {
        let props = s["properties"].as_object();
        for r in s["required"].as_array().into_iter().flatten() {
            let name = r.as_str().unwrap_or_default();
            if props.and_then(|p| p.get(name)).is_some_and(nullable) {
                found.push(format!("{at}.{name}"));
            }
        }
        for (name, p) in props.into_iter().flatten() {
            walk(p, &format!("{at}.{name}"), found);
        }
        for k in ["oneOf", "anyOf", "allOf"] {
            for (i, b) in s[k].as_array().into_iter().flatten().enumerate() {
                walk(b, &format!("{at}/{k}{i}"), found);
            }
        }
    }
    let s = Server::start().await;
    let doc = s.get("/api/openapi.json", None).await.body;
    let mut found = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let at = format!("{} {path}", method.to_uppercase());
            walk(
                &op["requestBody"]["content"]["application/json"]["schema"],
                &at,
                &mut found,
            );
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["required"] == true && nullable(&p["schema"]) {
                    found.push(format!("{at} ?{}", p["name"]));
                }
            }
        }
    }
    assert!(found.is_empty(), "required yet nullable: {found:#?}");
}

/// The spec and the design kept in this repository (`spec/`, `fixtures/endpoints.tsv`,
/// `docs/design.md`) are the shared ones, word for word, wherever the shared folder sits
/// beside the checkout; without it there is nothing to compare.
#[test]
fn the_repository_copies_of_the_spec_and_design_are_current() {
    let root = env!("CARGO_MANIFEST_DIR");
    let shared = std::path::Path::new(root).join("../shared");
    if !shared.is_dir() {
        eprintln!("no ../shared beside the checkout: nothing to compare");
        return;
    }
    for (ours, theirs) in [
        ("fixtures/endpoints.tsv", "spec/endpoints.tsv"),
        (
            "spec/part1-conventions-identity-credits-organizations.md",
            "spec/part1-conventions-identity-credits-organizations.md",
        ),
        (
            "spec/part2-content-commerce-storage-analytics-kv-slides.md",
            "spec/part2-content-commerce-storage-analytics-kv-slides.md",
        ),
        ("docs/design.md", "DESIGN.md"),
    ] {
        let a = std::fs::read_to_string(std::path::Path::new(root).join(ours)).unwrap();
        let b = std::fs::read_to_string(shared.join(theirs)).unwrap();
        assert!(
            a == b,
            "{ours} differs from ../shared/{theirs}: copy it again"
        );
    }
}

/// docs/status.md is generated from the table; run with PLINTH_BLESS=1 to rewrite it.
#[test]
fn status_doc_matches_the_table() {
    let mut out = String::from(
        "# Endpoint status\n\n\
         Generated from the route table (`src/http/routes.rs`) by the test `status_doc_matches_the_table`\n\
         (`PLINTH_BLESS=1 cargo test status_doc` rewrites it). **done**: built and tested end to end.\n\
         **501**: routed, access-checked, rate-limited and answering `501 {error: true, message: \"... not implemented ...\"}`\n\
         until its area lands.\n",
    );
    let done = ROUTES.iter().filter(|r| r.implemented()).count();
    out.push_str(&format!("\n{done} of {} endpoints done.\n", ROUTES.len()));
    let mut area = "";
    for r in ROUTES {
        if r.area != area {
            area = r.area;
            out.push_str(&format!(
                "\n## {area}\n\n| status | method | path | access | rate category |\n|---|---|---|---|---|\n"
            ));
        }
        out.push_str(&format!(
            "| {} | {} | `{}` | {} | {} |\n",
            if r.implemented() { "done" } else { "501" },
            r.method,
            r.path,
            r.access.name(),
            r.category.name()
        ));
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/status.md");
    if std::env::var("PLINTH_BLESS").is_ok() {
        std::fs::write(path, &out).unwrap();
    }
    let current = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        current == out,
        "docs/status.md is stale: run PLINTH_BLESS=1 cargo test status_doc"
    );
}
