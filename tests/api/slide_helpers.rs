//! What the slide tests share: decks from markdown, polling jobs and assets, uploads,
//! images made in the test, and reading exported PDFs.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::Server;

pub(crate) async fn create_md(s: &Server, key: &str, md: &str) -> Value {
    let r = s
        .post("/api/slides/create", Some(key), json!({ "markdown": md }))
        .await;
    r.assert_ok();
    r.body
}

pub(crate) fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

/// Polls `path` until `done(body)` holds.
pub(crate) async fn poll(
    s: &Server,
    path: &str,
    key: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = s.get(path, Some(key)).await;
        r.assert_ok();
        if done(&r.body) {
            return r.body;
        }
        assert!(
            Instant::now() < deadline,
            "timed out polling {path}: {}",
            r.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) fn ended(v: &Value) -> bool {
    ["succeeded", "failed", "cancelled"].contains(&v["status"].as_str().unwrap_or(""))
}

/// Queues an export; returns the job id.
pub(crate) async fn start_export(s: &Server, key: &str, deck: &str, format: &str) -> String {
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(key),
            json!({"deck_id": deck, "format": format}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["status"], json!("pending"));
    id(&r.body)
}

/// Exports and waits for the job to end.
pub(crate) async fn export(s: &Server, key: &str, deck: &str, format: &str) -> Value {
    let job = start_export(s, key, deck, format).await;
    poll(
        s,
        &format!("/api/slides/jobs/{job}?deck_id={deck}"),
        key,
        ended,
    )
    .await
}

/// A deck of `n` plain slides, slow enough to export that a test can act meanwhile.
pub(crate) async fn long_deck(s: &Server, key: &str, n: usize) -> String {
    let md: Vec<String> = (1..=n)
        .map(|i| {
            format!("## Slide {i}\n\n- point one of slide {i}\n- point two\n\n```\ncode {i}\n```\n")
        })
        .collect();
    id(&create_md(s, key, &md.join("\n---\n\n")).await)
}

/// Files under `dir` and its subdirectories (a job's artifacts sit under one directory
/// per attempt); 0 when it does not exist.
pub(crate) fn files_under(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => files_under(&e.path()),
                    _ => 1,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Where the local object store keeps a job's artifacts.
pub(crate) fn job_dir(s: &Server, deck_id: &str, job_id: &str) -> std::path::PathBuf {
    s.data_dir()
        .join("objects/slides")
        .join(deck_id)
        .join("jobs")
        .join(job_id)
}

/// Waits (30 s at most) until a cancelled job's worker has removed every artifact it
/// wrote.
pub(crate) async fn until_artifacts_removed(dir: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = files_under(dir);
        if left == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{left} artifacts left behind");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn download(url: &str) -> Vec<u8> {
    let r = reqwest::get(url).await.unwrap();
    assert_eq!(r.status(), 200, "{url}");
    r.bytes().await.unwrap().to_vec()
}

// ---- images made in the test ----

pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        let data: Vec<u8> = (0..width * height * 3).map(|i| (i % 251) as u8).collect();
        w.write_image_data(&data).unwrap();
    }
    out
}

pub(crate) fn crc32(bytes: &[u8]) -> u32 {
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

/// A PNG whose header claims 100000×100000 pixels: a decompression bomb.
pub(crate) fn png_bomb() -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend(100_000u32.to_be_bytes());
    ihdr.extend(100_000u32.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    out.extend(13u32.to_be_bytes());
    out.extend(&ihdr);
    out.extend(crc32(&ihdr).to_be_bytes());
    out.extend(png(4, 4)[33..].iter()); // the small image's IDAT and IEND
    out
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Reserves, uploads and completes an asset; returns its final state.
pub(crate) async fn upload_asset(
    s: &Server,
    key: &str,
    deck: &str,
    bytes: &[u8],
    mime: &str,
    declared_sha: Option<String>,
) -> Value {
    let r = s
        .post(
            "/api/slides/assets/create",
            Some(key),
            json!({"deck_id": deck, "file": "picture.png", "type": mime, "size": bytes.len(),
                   "sha256": declared_sha.unwrap_or_else(|| sha256_hex(bytes))}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["status"], json!("pending_upload"));
    let asset = id(&r.body);
    let put = reqwest::Client::new()
        .put(r.body["upload_url"].as_str().unwrap())
        .header("content-type", mime)
        .body(bytes.to_vec())
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "upload: {}", put.status());
    let r = s
        .post(
            "/api/slides/assets/complete",
            Some(key),
            json!({"deck_id": deck, "asset_id": asset}),
        )
        .await;
    r.assert_ok();
    poll(
        s,
        &format!("/api/slides/assets/{asset}?deck_id={deck}"),
        key,
        |v| v["status"] == json!("ready") || v["status"] == json!("rejected"),
    )
    .await
}

pub(crate) fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    (
        u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
    )
}

pub(crate) fn pdftotext(pdf: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deck.pdf");
    std::fs::write(&path, pdf).unwrap();
    match std::process::Command::new("pdftotext")
        .arg(&path)
        .arg("-")
        .output()
    {
        Ok(out) => {
            assert!(out.status.success(), "pdftotext failed: {out:?}");
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Err(_) => {
            eprintln!("skipped the PDF text check: pdftotext is not installed (apt-get install poppler-utils; .ci/run installs it)");
            None
        }
    }
}

// ---- tests ----
