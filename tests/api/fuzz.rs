//! A deterministic fuzzer over every implemented route (issue 10): malformed and
//! non-object JSON, wrong types, huge and odd unicode strings, deep nesting, garbage path
//! and query parameters, oversized bodies and wrong content types. No answer may be a
//! 5xx, no connection may drop, and the server must still answer afterwards.

use plinth::http::routes::ROUTES;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{email, Server};

/// A small xorshift generator: the same cases on every run, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// Field names the API uses; the fuzzer sets them to values of the wrong shape.
const FIELDS: &[&str] = &[
    "id",
    "domain",
    "email",
    "password",
    "code",
    "token",
    "key",
    "name",
    "title",
    "data",
    "amount",
    "level",
    "limit",
    "offset",
    "deck_id",
    "asset_id",
    "revision_id",
    "job_id",
    "expected_version",
    "operations",
    "markdown",
    "document",
    "template",
    "format",
    "file",
    "type",
    "size",
    "sha256",
    "filename",
    "contentType",
    "idempotency_key",
    "payment_method",
    "source",
    "text",
    "subject",
    "items",
    "product_id",
    "event_name",
    "from",
    "to",
];

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |v, _| json!([v]))
}

/// Values of every JSON shape, including the ones that break naive code.
fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(0),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(-9.9e307),
        json!(1.5),
        json!(""),
        json!(" "),
        json!("\u{0}\u{1}\u{7f}"),
        json!("💥🚀 שלום مرحبا \u{202e}evil\u{200b}"),
        json!("<!-->"),
        json!("<!--"),
        json!("# t\n\n<!-->\n---\n```\n"),
        json!("../../etc/passwd"),
        json!("a".repeat(100_000)),
        json!("é".repeat(20_000)),
        json!([]),
        json!([1, "2", null]),
        json!({}),
        json!({"slides": [{"id": "", "blocks": [{"type": "image", "asset_id": "x"}]}]}),
        json!([{"op": "insert", "index": 18446744073709551615u64, "slide": {}}]),
        json!([{"op": "move", "slide_id": "s1", "index": -1}]),
        nested(40),
        nested(300),
    ]
}

fn path_values() -> Vec<String> {
    vec![
        "nonexistent".into(),
        "%2e%2e".into(),
        "%00".into(),
        "%F0%9F%92%A5".into(),
        "%FF%FE".into(),
        "x".repeat(3000),
        "00000000-0000-0000-0000-000000000000".into(),
        "-1".into(),
    ]
}

const QUERIES: &[&str] = &[
    "",
    "?limit=-1&offset=abc",
    "?limit=99999999999999999999&offset=-5",
    "?domain=%FF&deck_id=%00&id=",
    "?deck_id=../x&limit=0",
    "?from=not-a-date&to=2026-13-45",
    "?domain=a&domain=b&domain=",
];

fn concrete(path: &str, value: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with('{') { value } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

enum Body {
    Json(Value),
    Raw(&'static str, Vec<u8>),
}

fn bodies(rng: &mut Rng) -> Vec<Body> {
    let odd = odd_values();
    let mut out = vec![
        Body::Raw("application/json", b"{".to_vec()),
        Body::Raw("application/json", b"{\"a\":1,}".to_vec()),
        Body::Raw("application/json", vec![0xff, 0xfe, b'{', b'}']),
        Body::Raw("application/json", b"".to_vec()),
        Body::Raw("text/plain", b"{}".to_vec()),
        Body::Raw("application/json", b"{\"id\":\"\\ud800\"}".to_vec()),
        Body::Raw("application/json", vec![b'['; 100_000]),
        Body::Raw("application/json", {
            let mut b = b"{\"x\":\"".to_vec();
            b.extend(std::iter::repeat_n(b'a', 2 << 20));
            b.extend(b"\"}");
            b
        }),
        Body::Json(json!([])),
        Body::Json(json!(1)),
        Body::Json(json!("string")),
        Body::Json(Value::Null),
    ];
    // Every field once with a wrong-shaped value, then random mixes.
    for (i, field) in FIELDS.iter().enumerate() {
        let mut o = serde_json::Map::new();
        o.insert((*field).to_owned(), odd[i % odd.len()].clone());
        out.push(Body::Json(Value::Object(o)));
    }
    for _ in 0..12 {
        let mut o = serde_json::Map::new();
        for _ in 0..(1 + rng.next() % 6) {
            o.insert((*rng.pick(FIELDS)).to_owned(), rng.pick(&odd).clone());
        }
        out.push(Body::Json(Value::Object(o)));
    }
    out
}

#[tokio::test]
async fn no_input_gets_a_5xx_or_drops_the_connection() {
    let s = Server::start_with(
        crate::common::Options::default().env("PLINTH_AUTH_TOKEN_KEY", &"ab".repeat(32)),
    )
    .await;
    let mut admin = s.admin(&email("fuzzadmin")).await;
    let verified = s.verified_user(&email("fuzzuser")).await;
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let paths = path_values();
    let mut failures = Vec::new();
    let mut calls = 0usize;
    let started = std::time::Instant::now();

    for route in ROUTES.iter().filter(|r| r.implemented()) {
        let method = Method::from_bytes(route.method.as_bytes()).unwrap();
        // Self-destructive routes get only bodies that cannot be a valid request.
        let destructive = route.path == "/api/users/delete";
        for (n, body) in bodies(&mut rng).into_iter().enumerate() {
            if destructive && matches!(body, Body::Json(Value::Object(_))) {
                continue;
            }
            let path_value = if route.path.contains('{') {
                paths[n % paths.len()].clone()
            } else {
                String::new()
            };
            let url = format!(
                "{}{}{}",
                s.base,
                concrete(route.path, &path_value),
                QUERIES[n % QUERIES.len()]
            );
            // Alternate callers: the administrator reaches the deepest code, a verified
            // user the ownership checks, and no key the access checks.
            let key = match n % 3 {
                0 => Some(admin.clone()),
                1 => Some(verified.clone()),
                _ => None,
            };
            let mut req = client.request(method.clone(), &url);
            if let Some(k) = &key {
                req = req.header("x-api-key", k);
            }
            req = match &body {
                Body::Json(v) => req.json(v),
                Body::Raw(ct, bytes) => req.header("content-type", *ct).body(bytes.clone()),
            };
            calls += 1;
            let oversized = matches!(&body, Body::Raw(_, b) if b.len() > plinth::BODY_LIMIT);
            if oversized {
                // Refused from its head before it is read, on a connection the server
                // then closes: a 413 (or, without a key, the 401/403 that the head alone
                // decides), or a write the server stopped reading.
                let one_shot = reqwest::Client::builder()
                    .pool_max_idle_per_host(0)
                    .build()
                    .unwrap();
                let mut req = one_shot.request(method.clone(), &url);
                if let Body::Raw(ct, bytes) = &body {
                    req = req.header("content-type", *ct).body(bytes.clone());
                }
                if let Ok(res) = req.send().await {
                    let head_refusal =
                        [401, 403, 404, 405, 413, 429].contains(&res.status().as_u16());
                    if !head_refusal {
                        failures.push(format!(
                            "{} {url}: oversized body got {}",
                            route.method,
                            res.status()
                        ));
                    }
                }
                continue;
            }
            match req.send().await {
                Err(e) => failures.push(format!(
                    "{} {url} (case {n}): connection failed: {:?}",
                    route.method,
                    std::error::Error::source(&e)
                )),
                Ok(res) => {
                    let status = res.status();
                    let text = res.text().await.unwrap_or_default();
                    // A feature this server does not offer is a 404; any 5xx is a bug.
                    if status.is_server_error() {
                        failures.push(format!(
                            "{} {url}: {status} {}",
                            route.method,
                            &text[..text.len().min(300)]
                        ));
                    }
                    if serde_json::from_str::<Value>(&text).is_err() {
                        failures.push(format!("{} {url}: {status}, not JSON", route.method));
                    }
                    // A regenerated key replaces the administrator's.
                    if status.is_success() && n % 3 == 0 {
                        if let Some(k) = serde_json::from_str::<Value>(&text)
                            .ok()
                            .and_then(|v| v["key"].as_str().map(str::to_owned))
                        {
                            admin = k;
                        }
                    }
                }
            }
        }
    }
    let alive = s.get("/api/status", None).await;
    assert!(
        alive.status.is_success(),
        "server not answering after the fuzz"
    );
    eprintln!(
        "fuzz: {calls} calls over {} routes in {:.1} s",
        ROUTES.iter().filter(|r| r.implemented()).count(),
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        // What the server said about it: panics and 5xx causes.
        let log = std::fs::read_to_string(s.data_dir().join("server.log")).unwrap_or_default();
        for line in log
            .lines()
            .filter(|l| l.contains("panicked") || l.contains("ERROR"))
        {
            eprintln!("server: {line}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Markdown nested `depth` constructs deep in one of four ways: block quotes, bullet
/// lists, a mix of quotes and bullet and numbered lists on one line, or inline emphasis,
/// strong, strikethrough and links around one word.
fn deep_markdown(rng: &mut Rng, style: usize, depth: usize) -> String {
    const MIXED: &[&str] = &["> ", "- ", "1. ", "* ", ">- "];
    const INLINE: &[(&str, &str)] = &[
        ("*", "*"),
        ("_", "_"),
        ("**", "**"),
        ("~~", "~~"),
        ("[", "](/x)"),
        ("[", "](javascript:x)"),
    ];
    match style % 4 {
        0 => format!("{} x", ">".repeat(depth)),
        1 => format!("{}x", "- ".repeat(depth)),
        2 => {
            let mut t: String = (0..depth).map(|_| *rng.pick(MIXED)).collect();
            t.push('x');
            t
        }
        _ => {
            let inline: Vec<&(&str, &str)> = (0..depth).map(|_| rng.pick(INLINE)).collect();
            let mut t = String::new();
            inline.iter().for_each(|(open, _)| t.push_str(open));
            t.push_str("deep");
            inline.iter().rev().for_each(|(_, close)| t.push_str(close));
            t
        }
    }
}

/// JSON text nested `depth` levels, arrays and objects mixed, keys the API reads (text,
/// not a `Value`: building, serialising or dropping a deep `Value` would itself recurse).
fn deep_json(rng: &mut Rng, depth: usize) -> String {
    let (mut open, mut close) = (String::new(), Vec::new());
    for _ in 1..depth {
        if rng.next().is_multiple_of(2) {
            open.push('[');
            close.push("]");
        } else {
            open.push_str(&format!("{{\"{}\":", rng.pick(FIELDS)));
            close.push("}");
        }
    }
    close.reverse();
    format!("{open}\"deep\"{}", close.concat())
}

/// Issue 32: every body a handler walks (markdown turned into nodes, `data` merged deep,
/// slide documents, analytics and KV values, ...) gets nesting at the bound and far past
/// it, in every field, on every route, with the fields most routes need filled in. No
/// answer may be a 5xx or a dropped connection, and the server must keep answering: one
/// stack overflow would abort the whole process.
#[tokio::test]
async fn deep_nesting_in_every_body_never_stops_the_server() {
    let s = Server::start().await;
    let admin = s.admin(&email("deepadmin")).await;
    let (domain, _) = s.organization(&admin, "deep").await;
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut failures = Vec::new();
    let mut calls = 0usize;
    // Fields that take text (markdown) and fields that take objects or arrays.
    let texts = ["markdown", "text", "body"];
    let objects = [
        "fields",
        "data",
        "updates",
        "value",
        "document",
        "operations",
        "events",
        "items",
        "metadata",
        "properties",
    ];
    for route in ROUTES.iter().filter(|r| r.implemented()) {
        // Routes that would take the caller's key or organization away from the rest.
        if matches!(
            route.path,
            "/api/users/delete" | "/api/users/regenerate-key" | "/api/organizations/delete"
        ) {
            continue;
        }
        let method = Method::from_bytes(route.method.as_bytes()).unwrap();
        let path = concrete(route.path, "00000000-0000-0000-0000-000000000000");
        let text = |s: String| Value::String(s).to_string();
        let mut cases: Vec<(&str, String)> = Vec::new();
        for field in texts {
            for style in 0..4 {
                cases.push((field, text(deep_markdown(&mut rng, style, 20_000))));
                cases.push((field, text(deep_markdown(&mut rng, style, 200))));
            }
        }
        for field in objects {
            cases.push((field, deep_json(&mut rng, 97)));
            cases.push((field, deep_json(&mut rng, 101)));
            cases.push((field, deep_json(&mut rng, 5_000)));
            cases.push((
                field,
                format!(
                    "{{\"markdown\":{},\"nested\":{}}}",
                    text(deep_markdown(&mut rng, 2, 2_000)),
                    deep_json(&mut rng, 60)
                ),
            ));
        }
        // What most routes require, so the deep field reaches the handler's walk.
        let base = json!({"type": "NOTE", "domain": domain, "title": "t",
                          "name": "deep", "key": "deep", "namespace": "deep"})
        .to_string();
        for (case, (field, deep)) in cases.into_iter().enumerate() {
            let raw = format!("{},\"{field}\":{deep}}}", &base[..base.len() - 1]);
            let url = format!("{}{path}", s.base);
            let res = client
                .request(method.clone(), &url)
                .header("x-api-key", &admin)
                .header("content-type", "application/json")
                .body(raw)
                .send()
                .await;
            calls += 1;
            match res {
                Err(e) => failures.push(format!(
                    "{} {path} (case {case}, `{field}`): connection failed: {e}",
                    route.method
                )),
                Ok(r) if r.status().is_server_error() => {
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    failures.push(format!(
                        "{} {path} (case {case}, `{field}`): {status} {}",
                        route.method,
                        &text[..text.len().min(200)]
                    ));
                }
                Ok(_) => {}
            }
        }
        // Alive after every route's deep bodies, not only at the end.
        let alive = client.get(format!("{}/api/status", s.base)).send().await;
        if !alive.is_ok_and(|r| r.status().is_success()) {
            failures.push(format!("the server stopped answering after {}", route.path));
            break;
        }
    }
    eprintln!("deep fuzz: {calls} calls");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The class of security review N-H1, for every route: a request without a valid key
/// that declares a body over the anonymous limit is answered from its head alone, at
/// once, without a byte of its body sent. A route that buffered first, or waited for the
/// body before refusing, would keep this client waiting instead.
#[tokio::test]
async fn every_route_refuses_an_anonymous_oversized_body_from_its_head() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start().await;
    let host = s.base.trim_start_matches("http://").to_owned();
    let mut slow = Vec::new();
    for route in plinth::http::routes::all().filter(|r| r.implemented()) {
        // Past PLINTH_ANONYMOUS_BODY_LIMIT's default, or the route's own limit.
        let declared = route.anonymous_body.unwrap_or(64 * 1024) + 1;
        let path = concrete(route.path, "00000000-0000-4000-8000-000000000000");
        for key in [None, Some("not-a-key")] {
            let mut conn = tokio::net::TcpStream::connect(&host).await.unwrap();
            let key = key.map_or(String::new(), |k| format!("x-api-key: {k}\r\n"));
            let head = format!(
                "{} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
                 {key}content-length: {declared}\r\n\r\n",
                route.method
            );
            conn.write_all(head.as_bytes()).await.unwrap();
            let mut answer = [0u8; 12];
            let read = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                conn.read_exact(&mut answer),
            )
            .await;
            match read {
                Ok(Ok(_)) => {
                    let status = String::from_utf8_lossy(&answer[9..12]).into_owned();
                    if !status.starts_with('4') {
                        slow.push(format!("{} {path}: {status}", route.method));
                    }
                }
                _ => slow.push(format!(
                    "{} {path}: no answer before the body",
                    route.method
                )),
            }
        }
    }
    assert!(
        slow.is_empty(),
        "routes that wait for (or accept) an anonymous oversized body: {slow:#?}"
    );
}
