//! An image in one request (issue 35): `POST /api/slides/assets/upload?deck_id=&file=`
//! with the file as the body, answered once the image queue has checked it; the deck's
//! markdown then names it by its file name.

use serde_json::json;

use crate::common::{email, Server};
use crate::slide_helpers::*;

/// A PNG of noise: it does not compress, so its size is about `3 * width * height`.
fn noisy_png(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        let mut x = 0x2545_f491_u32;
        let data: Vec<u8> = (0..width * height * 3)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        w.write_image_data(&data).unwrap();
    }
    out
}

async fn upload(
    s: &Server,
    key: Option<&str>,
    query: &str,
    mime: &str,
    bytes: Vec<u8>,
) -> crate::common::Resp {
    let mut req = s
        .raw(
            reqwest::Method::POST,
            &format!("/api/slides/assets/upload?{query}"),
        )
        .header("content-type", mime)
        .body(bytes);
    if let Some(k) = key {
        req = req.header("x-api-key", k);
    }
    Server::read(req.send().await.unwrap()).await
}

/// Declares a body of `len` bytes over a raw socket and reads the answer (a 413).
fn declare(s: &Server, key: &str, query: &str, len: usize) -> serde_json::Value {
    use std::io::{Read, Write};
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut sock = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        sock,
        "POST /api/slides/assets/upload?{query} HTTP/1.1\r\nHost: {addr}\r\nx-api-key: {key}\r\n\
         Content-Type: image/png\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    let _ = sock.read_to_string(&mut raw);
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    serde_json::from_str(&raw[raw.find("\r\n\r\n").unwrap() + 4..]).unwrap()
}

#[tokio::test]
async fn one_request_uploads_checks_and_names_an_image() {
    let s = Server::start().await;
    let key = s.verified_user(&email("upload")).await;
    let d = id(&create_md(&s, &key, "# Chart\n").await);

    // Larger than a JSON body may be (1 MiB), within the image limit (10 MiB).
    let big = noisy_png(700, 600);
    assert!(big.len() > 1 << 20, "{} bytes", big.len());
    let r = upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=chart.png"),
        "image/png",
        big.clone(),
    )
    .await;
    r.assert_ok();
    let a = &r.body;
    assert_eq!(a["status"], json!("ready"), "answered after the check: {a}");
    assert_eq!(a["file"], json!("chart.png"));
    assert_eq!(a["deck_id"], json!(d));
    assert_eq!(a["type"], json!("image/png"));
    assert_eq!(a["size"], json!(big.len()));
    assert_eq!(a["sha256"], json!(sha256_hex(&big)));
    assert_eq!(
        (a["width"].clone(), a["height"].clone()),
        (json!(700), json!(600))
    );
    let asset = id(a);
    // The same asset as the asset flow shows it.
    let got = s
        .get(
            &format!("/api/slides/assets/{asset}?deck_id={d}"),
            Some(&key),
        )
        .await;
    got.assert_ok();
    assert_eq!(got.body["status"], json!("ready"));
    assert_eq!(download(got.body["url"].as_str().unwrap()).await, big);

    // The markdown names it, and the export carries it.
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 1, "markdown": "# Chart\n\n![](chart.png)\n"}),
        )
        .await;
    r.assert_ok();
    let job = export(&s, &key, &d, "pdf").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let pdf = download(job["artifacts"][0]["url"].as_str().unwrap()).await;
    // Noise does not compress: the PDF is as large as the image only if it carries it.
    assert!(
        pdf.len() > big.len() / 2,
        "the image is in the PDF: {} bytes",
        pdf.len()
    );

    // A file that is not the image its type says: 422 with the reason, nothing kept.
    let before = s.sql_count("SELECT COUNT(*) FROM slide_assets").await;
    let r = upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=bad.png"),
        "image/png",
        b"not a png at all".to_vec(),
    )
    .await;
    r.assert_error(422);
    assert!(
        r.body["reason"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        r.body
    );
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM slide_assets").await,
        before
    );
    let r = upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=bomb.png"),
        "image/png",
        png_bomb(),
    )
    .await;
    r.assert_error(422);

    // `application/octet-stream` (what a generated client sends): the extension says.
    let r = upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=small.png"),
        "application/octet-stream",
        png(8, 8),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["type"], json!("image/png"));
    assert_eq!(r.body["status"], json!("ready"));
    upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=small.bin"),
        "application/octet-stream",
        png(8, 8),
    )
    .await
    .assert_error(400);
    let before = s.sql_count("SELECT COUNT(*) FROM slide_assets").await;

    // Otherwise the type comes from Content-Type and must be an image type.
    for mime in ["text/plain", "application/json", "image/gif"] {
        let r = upload(
            &s,
            Some(&key),
            &format!("deck_id={d}&file=x.png"),
            mime,
            png(8, 8),
        )
        .await;
        r.assert_error(415);
    }
    // Bad query, empty body, over the limit (413 naming it).
    upload(&s, Some(&key), "file=x.png", "image/png", png(8, 8))
        .await
        .assert_error(400);
    upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=%20"),
        "image/png",
        png(8, 8),
    )
    .await
    .assert_error(400);
    upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=e.png"),
        "image/png",
        Vec::new(),
    )
    .await
    .assert_error(400);
    // Declared over the limit: refused before the body is read (a raw socket, as in
    // `envelope.rs`: the answer comes while a client would still be sending).
    let r = declare(
        &s,
        &key,
        &format!("deck_id={d}&file=huge.png"),
        (10 << 20) + 1,
    );
    assert_eq!(r["error"], json!(true), "{r}");
    assert!(r["message"].as_str().unwrap().contains("10 MiB"), "{r}");
    assert_eq!(r["max_bytes"], json!(10 << 20), "{r}");
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM slide_assets").await,
        before
    );

    // A paused image queue: the answer still comes before the request deadline, the
    // asset `validating`; it is checked once the queue resumes.
    let admin = s.admin(&email("upload-admin")).await;
    let queue = |path: &'static str| {
        let (s, admin) = (&s, admin.clone());
        async move {
            s.post(path, Some(&admin), json!({"queue": "images"}))
                .await
                .assert_ok()
        }
    };
    queue("/api/admin/queues/pause").await;
    // Workers read the paused queues every second.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let r = upload(
        &s,
        Some(&key),
        &format!("deck_id={d}&file=later.png"),
        "image/png",
        png(16, 16),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["status"], json!("validating"), "{}", r.body);
    queue("/api/admin/queues/resume").await;
    let later = id(&r.body);
    let done = poll(
        &s,
        &format!("/api/slides/assets/{later}?deck_id={d}"),
        &key,
        |v| v["status"] != json!("validating"),
    )
    .await;
    assert_eq!(done["status"], json!("ready"), "{done}");
    let before = s.sql_count("SELECT COUNT(*) FROM slide_assets").await;

    // Only the deck's editors: no key is a 401, another account's deck a 404.
    upload(
        &s,
        None,
        &format!("deck_id={d}&file=x.png"),
        "image/png",
        png(8, 8),
    )
    .await
    .assert_error(401);
    let stranger = s.verified_user(&email("upload-stranger")).await;
    upload(
        &s,
        Some(&stranger),
        &format!("deck_id={d}&file=x.png"),
        "image/png",
        png(8, 8),
    )
    .await
    .assert_error(404);
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM slide_assets").await,
        before
    );
}

/// The upload one-liner of docs/slides.md, run as pasted (`curl --data-binary` sends
/// `application/x-www-form-urlencoded` when no type is given): the image is stored and
/// checked. A Marp deck's `img/…` paths work unchanged: the file name keeps its folder
/// and `![](img/chart.png)` names it; `..` is refused.
#[tokio::test]
async fn documented_one_liner_and_folders_work_as_written() {
    let s = Server::start().await;
    let key = s.verified_user(&email("oneliner")).await;
    let d = id(&create_md(&s, &key, "# Chart\n").await);

    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/slides.md")).unwrap();
    let line = docs
        .lines()
        .find_map(|l| {
            let start = l.find("`curl --data-binary")?;
            let rest = &l[start + 1..];
            Some(rest[..rest.find('`')?].to_owned())
        })
        .expect("docs/slides.md has the upload one-liner");
    assert!(!line.contains("Content-Type"), "{line}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    std::fs::create_dir_all(dir.join("img")).unwrap();
    let bytes = png(40, 30);
    std::fs::write(dir.join("chart.png"), &bytes).unwrap();
    std::fs::write(dir.join("img/chart.png"), png(20, 10)).unwrap();
    let run = |cmd: &str| {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{cmd} --silent --show-error --write-out '\\n%{{http_code}}'"
            ))
            .current_dir(&dir)
            .env("KEY", &key)
            .env("URL", &s.base)
            .env("DECK", &d)
            .output()
            .expect("curl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (
            code.to_owned(),
            serde_json::from_str::<serde_json::Value>(body).unwrap(),
        )
    };
    let (code, a) = run(&line);
    assert_eq!(code, "200", "{line}: {a}");
    assert_eq!(a["status"], json!("ready"), "{a}");
    assert_eq!(a["file"], json!("chart.png"));
    assert_eq!(a["type"], json!("image/png"));
    assert_eq!(a["sha256"], json!(sha256_hex(&bytes)));

    // The same line for a file in a folder, as a Marp deck keeps its images.
    let (code, a) = run(&line.replace("chart.png", "img/chart.png"));
    assert_eq!(code, "200", "{a}");
    assert_eq!(a["file"], json!("img/chart.png"));
    assert_eq!(
        (a["width"].clone(), a["height"].clone()),
        (json!(20), json!(10))
    );
    let in_folder = id(&a);
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 1,
                   "markdown": "# Chart\n\n![](img/chart.png)\n\n---\n\n![](./img/chart.png)\n"}),
        )
        .await;
    r.assert_ok();
    let deck = s.get(&format!("/api/slides/{d}"), Some(&key)).await;
    deck.assert_ok();
    let text = deck.body.to_string();
    assert_eq!(
        text.matches(&in_folder).count(),
        2,
        "both name the folder's image: {text}"
    );

    // A name that climbs out of its folder is refused, and nothing is kept.
    let (code, e) = run(&line.replace("file=chart.png", "file=../chart.png"));
    assert_eq!(code, "400", "{e}");
    assert!(e["message"].as_str().unwrap().contains(".."), "{e}");
}
