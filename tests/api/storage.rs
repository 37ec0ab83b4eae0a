//! Object storage through upload URLs: the local backend's signed URLs served by plinth,
//! and the S3 backend against a real S3-compatible server that checks signatures
//! (`s3s-fs`, when installed).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{email, Options, Server};

async fn org_member(s: &Server) -> (String, String) {
    let key = s.verified_user(&email("uploader")).await;
    let d = format!(
        "files-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    s.post(
        "/api/organizations/create",
        Some(&key),
        json!({"domain": d}),
    )
    .await
    .assert_ok();
    (key, d)
}

async fn upload_url(s: &Server, key: &str, domain: &str) -> Value {
    let r = s
        .post(
            "/api/data/generate-presigned-url",
            Some(key),
            json!({"domain": domain, "filename": "report 2026.pdf", "contentType": "application/pdf"}),
        )
        .await;
    r.assert_ok();
    r.body
}

fn tamper(url: &str, param: &str, value: &str) -> String {
    let (base, query) = url.split_once('?').unwrap();
    let q: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k == param => format!("{k}={value}"),
            _ => kv.to_owned(),
        })
        .collect();
    format!("{base}?{}", q.join("&"))
}

#[tokio::test]
async fn local_upload_urls_are_signed_and_enforced() {
    let s = Server::start().await;
    let (key, domain) = org_member(&s).await;
    let u = upload_url(&s, &key, &domain).await;
    let url = u["url"].as_str().unwrap();
    let get = u["download_url"].as_str().unwrap();
    assert_eq!(u["method"], json!("PUT"));
    assert_eq!(u["max_bytes"], json!(15 * 1024 * 1024));
    assert!(u["key"].as_str().unwrap().ends_with("/report-2026.pdf"));
    let http = reqwest::Client::new();

    // Nothing there yet; wrong content type and forged or re-purposed URLs are refused.
    assert_eq!(http.get(get).send().await.unwrap().status(), 404);
    let put = |u: String, ct: &'static str, body: Vec<u8>| {
        http.put(u).header("content-type", ct).body(body).send()
    };
    assert_eq!(
        put(url.to_owned(), "text/plain", b"x".to_vec())
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        put(tamper(url, "sig", "00"), "application/pdf", b"x".to_vec())
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        put(
            tamper(url, "expires", "9999999999"),
            "application/pdf",
            b"x".to_vec()
        )
        .await
        .unwrap()
        .status(),
        403
    );
    assert_eq!(
        put(
            tamper(url, "max", "999999999"),
            "application/pdf",
            b"x".to_vec()
        )
        .await
        .unwrap()
        .status(),
        403
    );
    let past = (chrono::Utc::now().timestamp() - 10).to_string();
    assert_eq!(
        put(
            tamper(url, "expires", &past),
            "application/pdf",
            b"x".to_vec()
        )
        .await
        .unwrap()
        .status(),
        403
    );
    assert_eq!(
        http.get(url).send().await.unwrap().status(),
        403,
        "a PUT URL does not read"
    );
    // Refused on its declared length, before the body is read (M3).
    let line = answer_before_body(url, "application/pdf", 15 * 1024 * 1024 + 1).await;
    assert!(
        line.as_deref().is_some_and(|l| l.contains(" 413")),
        "{line:?}"
    );

    let pdf = b"%PDF-1.7 test".to_vec();
    assert_eq!(
        put(url.to_owned(), "application/pdf", pdf.clone())
            .await
            .unwrap()
            .status(),
        200
    );
    let back = http.get(get).send().await.unwrap();
    assert_eq!(back.status(), 200);
    assert_eq!(back.bytes().await.unwrap().to_vec(), pdf);
    assert_eq!(
        http.put(get).body("x").send().await.unwrap().status(),
        403,
        "a GET URL does not write"
    );
}

#[tokio::test]
async fn upload_urls_need_membership_and_a_content_type() {
    let s = Server::start().await;
    let (key, domain) = org_member(&s).await;
    let outsider = s.verified_user(&email("outsider")).await;
    s.post(
        "/api/data/generate-presigned-url",
        Some(&outsider),
        json!({"domain": domain, "filename": "a.txt", "contentType": "text/plain"}),
    )
    .await
    .assert_error(403);
    for bad in [
        json!({"domain": domain, "filename": "a.txt", "contentType": "nonsense"}),
        json!({"domain": domain, "filename": "///", "contentType": "text/plain"}),
        json!({"domain": domain, "filename": "a.txt"}),
    ] {
        s.post("/api/data/generate-presigned-url", Some(&key), bad)
            .await
            .assert_error(400);
    }
    let st = s.get("/api/status", None).await;
    assert_eq!(st.body["services"]["storage"]["backend"], json!("local"));
}

/// Starts `s3s-fs` on a free port over a temp dir with one bucket.
pub(crate) struct S3Peer {
    child: std::process::Child,
    pub endpoint: String,
    _dir: tempfile::TempDir,
}

impl S3Peer {
    /// The directory s3s-fs keeps the bucket in (`<root>/plinth/<key>`).
    pub fn root(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// Server options that select this S3 backend.
    pub fn options(&self) -> Options {
        Options::default()
            .env("PLINTH_S3_BUCKET", "plinth")
            .env("PLINTH_S3_ENDPOINT", &self.endpoint)
            .env("PLINTH_S3_ACCESS_KEY_ID", "AKTEST")
            .env("PLINTH_S3_SECRET_ACCESS_KEY", "SKTEST")
    }
}

impl Drop for S3Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn s3_peer() -> Option<S3Peer> {
    let found = Command::new("s3s-fs")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if found.is_err() {
        eprintln!("skipped: s3s-fs is not installed (cargo install s3s-fs --version 0.14.1 --features binary --locked; .ci/run installs it)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("plinth")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("s3s-fs")
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--access-key",
            "AKTEST",
            "--secret-key",
            "SKTEST",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "s3s-fs did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(S3Peer {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
        _dir: dir,
    })
}

#[tokio::test]
async fn s3_backend_presigned_urls_against_a_signature_checking_server() {
    let Some(peer) = s3_peer() else { return };
    let s = Server::start_with(peer.options()).await;
    let st = s.get("/api/status", None).await;
    assert_eq!(st.body["services"]["storage"]["backend"], json!("s3"));
    assert_eq!(st.body["services"]["storage"]["ok"], json!(true));
    let (key, domain) = org_member(&s).await;
    let pdf = b"%PDF-1.7 s3".to_vec();
    // S3 bounds a presigned PUT only by an exact signed length: `size` is required.
    s.post(
        "/api/data/generate-presigned-url",
        Some(&key),
        json!({"domain": domain, "filename": "report.pdf", "contentType": "application/pdf"}),
    )
    .await
    .assert_error(400);
    let r = s
        .post(
            "/api/data/generate-presigned-url",
            Some(&key),
            json!({"domain": domain, "filename": "report 2026.pdf", "contentType": "application/pdf", "size": pdf.len()}),
        )
        .await;
    r.assert_ok();
    let u = r.body;
    let url = u["url"].as_str().unwrap();
    assert!(url.starts_with(&peer.endpoint));
    let http = reqwest::Client::new();
    // A forged signature is refused by the server.
    let forged = tamper(url, "X-Amz-Signature", &"0".repeat(64));
    let r = http
        .put(forged)
        .header("content-type", "application/pdf")
        .body(pdf.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = http
        .put(url)
        .header("content-type", "application/pdf")
        .body(pdf.clone())
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let back = http
        .get(u["download_url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), 200);
    assert_eq!(back.bytes().await.unwrap().to_vec(), pdf);

    // With an exact `size` the URL signs Content-Length: S3 refuses any other size.
    let r = s
        .post(
            "/api/data/generate-presigned-url",
            Some(&key),
            json!({"domain": domain, "filename": "exact.pdf", "contentType": "application/pdf", "size": pdf.len()}),
        )
        .await;
    r.assert_ok();
    let exact = r.body["url"].as_str().unwrap();
    let mut longer = pdf.clone();
    longer.extend_from_slice(b" and more");
    let refused = http
        .put(exact)
        .header("content-type", "application/pdf")
        .body(longer)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403, "{}", refused.text().await.unwrap());
    let ok = http
        .put(exact)
        .header("content-type", "application/pdf")
        .body(pdf.clone())
        .send()
        .await
        .unwrap();
    assert!(ok.status().is_success());
}

/// Sends a PUT whose headers promise `declared` bytes but only writes a few, and returns
/// the status line the server answers with while the body is still incomplete (`None`
/// if it waits for the body: it would then have read it before checking).
async fn answer_before_body(url: &str, content_type: &str, declared: u64) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut sock = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {content_type}\r\nContent-Length: {declared}\r\n\r\n0123456789"
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 512];
    match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => Some(
            String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        ),
        _ => None,
    }
}

/// PUTs `total` bytes with chunked encoding; the status line of the answer.
async fn chunked_put(url: &str, total: usize) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut sock = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/pdf\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0;
    while sent < total {
        let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
        if sock.write_all(&frame).await.is_err() {
            break; // the server answered and closed
        }
        sent += chunk.len();
    }
    let _ = sock.write_all(b"0\r\n\r\n").await;
    let mut buf = vec![0u8; 512];
    match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => String::from_utf8_lossy(&buf[..n])
            .lines()
            .next()
            .map(str::to_owned),
        _ => None,
    }
}

#[tokio::test]
async fn m3_object_uploads_are_checked_before_the_body_and_rate_limited() {
    let s = Server::start_with(Options::default().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")).await;
    let (key, domain) = org_member(&s).await;
    let u = upload_url(&s, &key, &domain).await;
    let url = u["url"].as_str().unwrap();

    // A forged signature is refused with 60 MB still to come; so is a declared size
    // over the signed limit on a genuine URL.
    let forged = tamper(url, "sig", &"0".repeat(64));
    let line = answer_before_body(&forged, "application/pdf", 60_000_000).await;
    assert!(
        line.as_deref().is_some_and(|l| l.contains(" 403")),
        "{line:?}"
    );
    let line = answer_before_body(url, "application/pdf", 60_000_000).await;
    assert!(
        line.as_deref().is_some_and(|l| l.contains(" 413")),
        "{line:?}"
    );

    // A chunked body (no length declared) is cut off once it passes the signed limit,
    // and nothing is stored.
    assert_eq!(
        chunked_put(url, 16 << 20).await.as_deref(),
        Some("HTTP/1.1 413 Payload Too Large")
    );
    let http = reqwest::Client::new();
    let get = u["download_url"].as_str().unwrap();
    assert_eq!(http.get(get).send().await.unwrap().status(), 404);

    // One address may replay a URL only so often (60 a minute at multiplier 1).
    let mut statuses = Vec::new();
    for _ in 0..64 {
        let r = http
            .put(url)
            .header("content-type", "application/pdf")
            .body(b"%PDF-1.7".to_vec())
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(statuses.contains(&200), "{statuses:?}");
}

#[tokio::test]
async fn l4_uploads_of_types_a_browser_would_run_are_refused() {
    let s = Server::start().await;
    let (key, domain) = org_member(&s).await;
    for ct in [
        "text/html",
        "image/svg+xml",
        "application/xhtml+xml",
        "text/javascript",
        "application/xml",
        "TEXT/HTML; charset=utf-8",
    ] {
        let r = s
            .post(
                "/api/data/generate-presigned-url",
                Some(&key),
                json!({"domain": domain, "filename": "x", "contentType": ct}),
            )
            .await;
        r.assert_error(400);
    }
    for ct in [
        "image/png",
        "application/pdf",
        "text/csv; charset=utf-8",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ] {
        s.post(
            "/api/data/generate-presigned-url",
            Some(&key),
            json!({"domain": domain, "filename": "x", "contentType": ct}),
        )
        .await
        .assert_ok();
    }
}
