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
use crate::slide_helpers::{create_md, ended, export, id, poll};

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

    images_are_inlined_once(&s, &key).await;
    costly_svgs_are_refused_and_cancel_stops_the_cpu(&s, &key).await;

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

/// Uploads an image through `assets/upload`; its answer.
async fn upload(s: &Server, key: &str, deck: &str, file: &str, bytes: Vec<u8>) -> (u16, Value) {
    let r = s
        .raw(
            reqwest::Method::POST,
            &format!("/api/slides/assets/upload?deck_id={deck}&file={file}"),
        )
        .header("x-api-key", key)
        .header("content-type", "image/svg+xml")
        .body(bytes)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The review's N-H2: one 2 MiB SVG used 40 times. The public page carries it once
/// (about 2.8 MB), not 40 times (106 MiB).
async fn images_are_inlined_once(s: &Server, key: &str) {
    let deck = create_md(s, key, "# Big\n").await;
    let deck_id = id(&deck);
    let svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><!-- {} --><rect width="10" height="10"/></svg>"#,
        "x".repeat(2 << 20)
    );
    let (status, asset) = upload(s, key, &deck_id, "big.svg", svg.into_bytes()).await;
    assert_eq!(status, 200, "{asset}");
    let md = format!(
        "# Big\n\n{}",
        format!("![](asset:{})\n\n", id(&asset)).repeat(40)
    );
    let rev = s
        .post(
            "/api/slides/update",
            Some(key),
            json!({"id": deck_id, "expected_version": 1, "markdown": md}),
        )
        .await;
    rev.assert_ok();
    let job = export(s, key, &deck_id, "html").await;
    assert_eq!(job["status"], "succeeded", "{job}");
    let size = job["artifacts"][0]["size"].as_u64().unwrap();
    assert!(size < 4 << 20, "the HTML export is {size} bytes");
    let p = s
        .post(
            "/api/slides/publish",
            Some(key),
            json!({"deck_id": deck_id, "revision_id": rev.body["revision_id"],
                   "expected_version": rev.body["version"]}),
        )
        .await;
    p.assert_ok();
    let url = p.body["url"].as_str().unwrap();
    let path = &url[url.find("/api/").unwrap()..];
    for _ in 0..3 {
        let page = s
            .raw(reqwest::Method::GET, path)
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        assert_eq!(page.status().as_u16(), 200);
        let len = page.bytes().await.unwrap().len();
        assert!(len < 4 << 20, "the public page is {len} bytes");
    }
}

/// CPU time (user + system) the process has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// The review's N-H3: the blur-through-<use> SVG is refused at upload, naming the cost
/// limit; and an export of a deck that is slow but allowed stops burning CPU within a
/// second of `jobs/cancel`.
async fn costly_svgs_are_refused_and_cancel_stops_the_cpu(s: &Server, key: &str) {
    let deck_id = id(&create_md(s, key, "# Costly\n").await);
    let mut bomb = String::from(
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="4000" height="4000"><defs><filter id="f" x="-1" y="-1" width="3" height="3"><feGaussianBlur stdDeviation="50"/></filter><g id="a0" filter="url(#f)"><rect width="4000" height="4000" fill="red"/></g>"#,
    );
    bomb.push_str(&format!(
        r#"<g id="a1" filter="url(#f)">{}</g>"#,
        r##"<use xlink:href="#a0"/>"##.repeat(10)
    ));
    bomb.push_str(r##"</defs><use xlink:href="#a1"/></svg>"##);
    let started = Instant::now();
    let (status, body) = upload(s, key, &deck_id, "bomb.svg", bomb.into_bytes()).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("MAX_SVG_COST"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    // Allowed, but slow: a blurred square, forty times on each of 20 slides (seconds a
    // slide: a cancel must stop a slide midway).
    let slow = r#"<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="900"><defs><filter id="f"><feGaussianBlur stdDeviation="20"/></filter></defs><g filter="url(#f)"><rect x="100" y="100" width="700" height="350" fill="teal"/></g></svg>"#;
    let (status, asset) = upload(s, key, &deck_id, "slow.svg", slow.as_bytes().to_vec()).await;
    assert_eq!(status, 200, "{asset}");
    let image = format!("![](asset:{})\n\n", id(&asset));
    let md: Vec<String> = (1..=20)
        .map(|i| format!("# {i}\n\n{}", image.repeat(40)))
        .collect();
    s.post(
        "/api/slides/update",
        Some(key),
        json!({"id": deck_id, "expected_version": 1, "markdown": md.join("\n---\n\n")}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(key),
            json!({"deck_id": deck_id, "format": "png"}),
        )
        .await;
    r.assert_ok();
    let job = id(&r.body);
    let path = format!("/api/slides/jobs/{job}?deck_id={deck_id}");
    poll(s, &path, key, |v| v["status"] != "pending").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.post(
        "/api/slides/jobs/cancel",
        Some(key),
        json!({"deck_id": deck_id, "job_id": job}),
    )
    .await
    .assert_ok();
    // Within a second the renders stop; the next two seconds burn (almost) no CPU.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = cpu_seconds(s.pid());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let burned = cpu_seconds(s.pid()) - before;
    assert!(
        burned < 0.8,
        "{burned:.2} s of CPU in the 2 s after cancel + 1 s"
    );
    let v = poll(s, &path, key, ended).await;
    assert_eq!(v["status"], "cancelled", "{v}");
}
