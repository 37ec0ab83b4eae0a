//! The HTTP conventions: the error envelope and `_usage` on every response, bad input.

use reqwest::Method;
use serde_json::json;

use crate::common::{email, Server};

// Unknown routes, wrong methods and malformed bodies are checked in process
// (`inproc.rs`).

/// Declares an oversize body over a raw socket and reads the answer. (The server
/// answers before the body is sent, so a client that is still sending could see the
/// connection close first; a raw socket makes the test deterministic.)
fn declare_oversize(s: &Server, path: &str, key: Option<&str>) -> serde_json::Value {
    use std::io::{Read, Write};
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut sock = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        sock,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{}Content-Length: 1100000\r\nConnection: close\r\n\r\n",
        key.map_or(String::new(), |k| format!("x-api-key: {k}\r\n"))
    )
    .unwrap();
    let mut raw = String::new();
    let _ = sock.read_to_string(&mut raw);
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    let body = &raw[raw.find("\r\n\r\n").unwrap() + 4..];
    serde_json::from_str(body).unwrap()
}

#[tokio::test]
async fn oversize_bodies_get_413_in_the_envelope() {
    let s = Server::start().await;
    let key = s.verified_user(&email("oversize")).await;
    for path in ["/api/users/authenticate", "/api/404"] {
        // Without a key the anonymous limit applies (PLINTH_ANONYMOUS_BODY_LIMIT), with
        // one the route's.
        for (key, limit, max) in [
            (None, "64 KiB", 65536),
            (Some(key.as_str()), "1 MiB", 1 << 20),
        ] {
            let v = declare_oversize(&s, path, key);
            assert_eq!(v["error"], json!(true));
            assert!(v["message"].as_str().unwrap().contains(limit), "{v}");
            assert_eq!(v["max_bytes"], json!(max), "{v}");
            assert!(v["_usage"]["rate_limit"].is_object());
        }
    }
}

#[tokio::test]
async fn status_reports_every_adapter_and_aes_round_trips() {
    let s = Server::start().await;
    let r = s.get("/api/status", None).await;
    r.assert_ok();
    let services = &r.body["services"];
    let backend = if crate::common::pg_admin_url().is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(services["database"]["backend"], json!(backend));
    assert_eq!(services["database"]["ok"], json!(true));
    assert_eq!(services["queue"]["ok"], json!(true));
    assert_eq!(services["storage"]["ok"], json!(true));
    assert_eq!(services["mail"]["backend"], json!("outbox"));
    assert_eq!(r.body["ok"], json!(true));

    let r = s
        .post("/api/aes", None, json!({"text": "round trip"}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["matched"], json!(true));
    assert_eq!(r.body["keys"]["master"]["ok"], json!(true));
    // A self-test, never an encryption service (finding C1).
    assert!(r.body.get("ciphertext").is_none(), "{}", r.body);
    // A bare POST with no body works too.
    let r = Server::read(s.raw(Method::POST, "/api/aes").send().await.unwrap()).await;
    r.assert_ok();
    assert_eq!(r.body["success"], json!(true));
}

#[tokio::test]
async fn unauthenticated_and_authenticated_usage_differ_only_by_remaining_tokens() {
    let s = Server::start().await;
    let r = s.get("/api/status", None).await;
    assert!(r.body["_usage"]["tokens"].get("remaining").is_none());
    let (key, _) = s.signup(&email("usage")).await;
    let r = s.get("/api/status", Some(&key)).await;
    r.assert_ok();
    assert_eq!(r.body["_usage"]["tokens"]["remaining"], json!(0));
    assert_eq!(r.header("x-tokens-remaining").as_deref(), Some("0"));
}

#[tokio::test]
async fn request_ids_are_echoed_and_a_5xx_is_logged_once_with_its_id() {
    let s = Server::start_with(crate::common::Options::default().env("PLINTH_LOG_FORMAT", "json"))
        .await;
    let r = s.get("/api/status", None).await;
    let generated = r.header("x-request-id").expect("a generated request id");
    assert!(uuid::Uuid::parse_str(&generated).is_ok(), "{generated}");
    let r = s
        .raw(Method::GET, "/api/status")
        .header("x-request-id", "client-chosen-42")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "client-chosen-42");

    // Break a table a route reads: the client gets the envelope and a vague message;
    // the log gets one line with the request id, the route and the cause.
    let key = s.verified_user(&email("five-hundred")).await;
    let deck = s
        .post("/api/slides/create", Some(&key), json!({"markdown": "# x"}))
        .await;
    deck.assert_ok();
    s.sql("DROP TABLE slide_publications").await;
    let r = s
        .raw(
            Method::GET,
            &format!("/api/slides/{}", deck.body["id"].as_str().unwrap()),
        )
        .header("x-api-key", &key)
        .header("x-request-id", "req-500-check")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(r.headers()["x-request-id"], "req-500-check");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"], json!(true));
    assert_eq!(body["message"], json!("internal error"));
    assert!(!body.to_string().contains("slide_publications"), "{body}");
    assert!(body["_usage"].is_object());
    let log = std::fs::read_to_string(s.data_dir().join("server.log")).unwrap();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("req-500-check"))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one log line per failure:\n{}",
        lines.join("\n")
    );
    let line: serde_json::Value = serde_json::from_str(lines[0]).expect("a JSON log line");
    let text = line.to_string();
    assert!(
        text.contains("request failed") && text.contains("slide_publications"),
        "{text}"
    );
    assert!(
        text.contains("/api/slides/{id}"),
        "the route, not the raw path: {text}"
    );
}
