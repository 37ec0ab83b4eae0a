//! Hostile clients against one server (issue 41): slow heads, slow bodies, half-sent
//! anonymous uploads, a decompression bomb, deeply nested JSON and Markdown, a page that
//! would multiply its images and an SVG that would burn CPU, all at once, while a normal
//! client reads `/api/users/viewer`. The normal client stays fast, the server's memory
//! stays bounded, the costly work stops, and nothing is lost.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{email, Options, Server};

/// Anonymous memory of a process (heap and stacks, not the mapped binary or fonts).
pub fn rss_anon(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn host(s: &Server) -> String {
    s.base.trim_start_matches("http://").to_owned()
}

/// The status of the answer on `conn`, read within `within`; None when the connection
/// closed or stayed silent.
async fn status_within(conn: &mut TcpStream, within: Duration) -> Option<u16> {
    let mut head = [0u8; 12];
    match tokio::time::timeout(within, conn.read_exact(&mut head)).await {
        Ok(Ok(_)) => String::from_utf8_lossy(&head[9..12]).parse().ok(),
        _ => None,
    }
}

/// Whether the server closed `conn` within `within` (reads to its end).
async fn closed_within(conn: &mut TcpStream, within: Duration) -> bool {
    let mut sink = Vec::new();
    matches!(
        tokio::time::timeout(within, conn.read_to_end(&mut sink)).await,
        Ok(Ok(_)) | Ok(Err(_))
    )
}

/// A PNG that declares 50,000 × 50,000 pixels in a few bytes (its pixel data never comes).
fn png_bomb() -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&50_000u32.to_be_bytes());
    ihdr.extend_from_slice(&50_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut chunk = b"IHDR".to_vec();
    chunk.extend_from_slice(&ihdr);
    out.extend_from_slice(&(ihdr.len() as u32).to_be_bytes());
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&crc32(&chunk).to_be_bytes());
    // One IDAT with an empty zlib stream: the rows would inflate to 7.5 GB.
    let idat = b"IDAT\x78\x9c\x03\x00\x00\x00\x00\x01";
    out.extend_from_slice(&((idat.len() - 4) as u32).to_be_bytes());
    out.extend_from_slice(idat);
    out.extend_from_slice(&crc32(idat).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(b"IEND");
    out.extend_from_slice(&crc32(b"IEND").to_be_bytes());
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[tokio::test]
async fn hostile_clients_leave_a_normal_client_fast_and_memory_bounded() {
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_HEADER_TIMEOUT", "2")
            .env("PLINTH_BODY_TIMEOUT", "2")
            .env("PLINTH_RATE_LIMIT_MULTIPLIER", "100"),
    )
    .await;
    let key = s.verified_user(&email("hostile-normal")).await;
    let pid = s.pid();
    let anon_before = rss_anon(pid);

    // The normal client: one viewer read every 20 ms while the others do their worst.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let normal = {
        let (base, key, stop) = (s.base.clone(), key.clone(), stop.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut took = Vec::new();
            let mut failed = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                let r = client
                    .get(format!("{base}/api/users/viewer"))
                    .header("x-api-key", &key)
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status().is_success() => took.push(t.elapsed()),
                    _ => failed += 1,
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (took, failed)
        })
    };
    let peak = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_anon(pid));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            peak
        })
    };
    let h = host(&s);

    // 30 anonymous uploads that declare 10 MiB and send part of it: refused from the
    // head (no key), at once, with nothing buffered.
    let mut uploads = Vec::new();
    for _ in 0..30 {
        let mut c = TcpStream::connect(&h).await.unwrap();
        let head = format!(
            "POST /api/slides/assets/upload?deck_id=x&file=a.png HTTP/1.1\r\nhost: {h}\r\n\
             content-type: application/octet-stream\r\ncontent-length: {}\r\n\r\n",
            10 << 20
        );
        c.write_all(head.as_bytes()).await.unwrap();
        let _ = c.write_all(&vec![b'A'; 256 * 1024]).await;
        uploads.push(c);
    }
    for c in &mut uploads {
        assert_eq!(status_within(c, Duration::from_secs(3)).await, Some(401));
    }

    // Heads that never end, and a keep-alive connection left idle: closed after the
    // header timeout (2 s here).
    let mut heads = Vec::new();
    for _ in 0..20 {
        let mut c = TcpStream::connect(&h).await.unwrap();
        c.write_all(format!("GET /api/users/viewer HTTP/1.1\r\nhost: {h}\r\nx-api").as_bytes())
            .await
            .unwrap();
        heads.push(c);
    }
    // Bodies that stop, and bodies that trickle: 408 after the body timeout.
    let stalled = async {
        let mut c = TcpStream::connect(&h).await.unwrap();
        let head = format!(
            "POST /api/posts/create HTTP/1.1\r\nhost: {h}\r\nx-api-key: {key}\r\n\
             content-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"title\""
        );
        c.write_all(head.as_bytes()).await.unwrap();
        status_within(&mut c, Duration::from_secs(6)).await
    };
    let trickle = async {
        let mut c = TcpStream::connect(&h).await.unwrap();
        let head = format!(
            "POST /api/posts/create HTTP/1.1\r\nhost: {h}\r\nx-api-key: {key}\r\n\
             content-type: application/json\r\ncontent-length: 100000\r\n\r\n"
        );
        c.write_all(head.as_bytes()).await.unwrap();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if c.write_all(b" ").await.is_err() {
                break;
            }
            let mut b = [0u8; 12];
            if let Ok(Ok(_)) =
                tokio::time::timeout(Duration::from_millis(200), c.read_exact(&mut b)).await
            {
                return String::from_utf8_lossy(&b[9..12]).parse::<u16>().ok();
            }
        }
        None
    };
    let (stalled, trickled) = tokio::join!(stalled, trickle);
    assert_eq!(stalled, Some(408), "a body that stopped arriving");
    assert_eq!(
        trickled,
        Some(408),
        "a body that trickles at 5 bytes a second"
    );
    for c in &mut heads {
        assert!(
            closed_within(c, Duration::from_secs(4)).await,
            "a half-sent head is closed after the header timeout"
        );
    }

    // A decompression bomb: refused with a 4xx that names the limit.
    let deck: Value = s
        .post(
            "/api/slides/create",
            Some(&key),
            json!({"markdown": "# Bomb\n"}),
        )
        .await
        .body;
    let deck_id = deck["id"].as_str().unwrap().to_owned();
    let r = s
        .raw(
            reqwest::Method::POST,
            &format!("/api/slides/assets/upload?deck_id={deck_id}&file=bomb.png"),
        )
        .header("x-api-key", &key)
        .header("content-type", "image/png")
        .body(png_bomb())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert!((400..500).contains(&status), "{status} {text}");
    assert!(text.contains("16384") || text.contains("pixels"), "{text}");

    // Deeply nested JSON and Markdown: refused or stored, never a crash.
    let deep_json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let r = s
        .raw(reqwest::Method::POST, "/api/posts/create")
        .header("x-api-key", &key)
        .header("content-type", "application/json")
        .body(deep_json)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let deep_md = ">".repeat(200_000);
    let r = s
        .post(
            "/api/posts/create",
            Some(&key),
            json!({"type": "GENERAL", "fields": {"title": "deep"}, "markdown": deep_md}),
        )
        .await;
    assert!(r.status.as_u16() < 500, "{:?}", r.body);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut took, failed) = normal.await.unwrap();
    let peak = peak.await.unwrap();
    took.sort();
    let p99 = took[(took.len() * 99 / 100).min(took.len() - 1)];
    eprintln!(
        "hostile: normal client {} reads, p99 {p99:?}, {failed} failed; RssAnon {} MB before, peak {} MB",
        took.len(),
        anon_before >> 20,
        peak >> 20
    );
    assert_eq!(failed, 0, "the normal client's reads all succeed");
    assert!(p99 < Duration::from_millis(250), "p99 {p99:?}");
    assert!(
        peak < 150 << 20,
        "anonymous memory peaked at {} MB",
        peak >> 20
    );
    // Everything still answers.
    s.get("/api/users/viewer", Some(&key)).await.assert_ok();
}
