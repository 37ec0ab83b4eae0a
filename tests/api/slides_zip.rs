//! A PNG export as one zip (issue 44): `exports/create` with `zip: true` adds a
//! `deck.zip` artifact holding the slide PNGs in order; without it nothing changes, and
//! a cancelled run leaves no zip behind.

use std::io::Read;

use serde_json::{json, Value};

use crate::common::{email, Server};
use crate::slide_helpers::*;

const MD: &str = "# Zip One\n\nfirst\n\n---\n\n<!-- hidden -->\n# Hidden\n\n---\n\n# Two\n\n$E = mc^2$\n\n---\n\n# Three\n\n- a\n- b\n";

async fn export_zip(s: &Server, key: &str, deck: &str, body: Value) -> Value {
    let mut body = body;
    body["deck_id"] = json!(deck);
    let r = s.post("/api/slides/exports/create", Some(key), body).await;
    r.assert_ok();
    let job = id(&r.body);
    let path = format!("/api/slides/jobs/{job}?deck_id={deck}");
    poll(s, &path, key, ended).await
}

/// The zip's entries, (name, bytes), in the archive's order.
fn entries(bytes: Vec<u8>) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut f = archive.by_index(i).unwrap();
            let mut data = Vec::new();
            f.read_to_end(&mut data).unwrap();
            (f.name().unwrap().into_owned(), data)
        })
        .collect()
}

#[tokio::test]
async fn a_png_export_can_come_as_one_zip() {
    let s = Server::start().await;
    let key = s.verified_user(&email("zipper")).await;
    let d = id(&create_md(&s, &key, MD).await);

    let job = export_zip(&s, &key, &d, json!({"format": "png", "zip": true})).await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    assert_eq!((&job["format"], &job["zip"]), (&json!("png"), &json!(true)));
    let arts = job["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), 4, "three PNGs and the zip: {job}");
    let zip = &arts[3];
    assert_eq!(zip["name"], json!("deck.zip"));
    assert_eq!(zip["content_type"], json!("application/zip"));
    assert_eq!(zip["slide"], Value::Null);
    let url = zip["url"].as_str().unwrap();
    let got = reqwest::get(url).await.unwrap();
    assert_eq!(
        got.headers()["content-disposition"],
        "attachment; filename=\"zip-one.zip\""
    );
    let bytes = got.bytes().await.unwrap().to_vec();
    assert_eq!(bytes.len() as u64, zip["size"].as_u64().unwrap());
    let inside = entries(bytes);
    let names: Vec<&str> = inside.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["slide-001.png", "slide-002.png", "slide-003.png"]);
    // Each entry is the PNG the export also offers on its own.
    for (png, (name, data)) in arts[..3].iter().zip(&inside) {
        assert_eq!(png["name"].as_str().unwrap(), name);
        assert_eq!(&download(png["url"].as_str().unwrap()).await, data);
        assert_eq!(png_size(data), (1920, 1080));
    }

    // Without the option: the PNGs alone, as before.
    let plain = export(&s, &key, &d, "png").await;
    assert_eq!(plain["status"], json!("succeeded"), "{plain}");
    assert_eq!(plain["zip"], json!(false));
    let arts = plain["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), 3, "{plain}");
    assert!(arts.iter().all(|a| a["content_type"] == json!("image/png")));
    let off = export_zip(&s, &key, &d, json!({"format": "png", "zip": false})).await;
    assert_eq!(off["artifacts"].as_array().unwrap().len(), 3, "{off}");
}

#[tokio::test]
async fn zip_is_for_png_exports_only() {
    let s = Server::start().await;
    let key = s.verified_user(&email("zipformats")).await;
    let d = id(&create_md(&s, &key, MD).await);
    for format in ["pdf", "html"] {
        let r = s
            .post(
                "/api/slides/exports/create",
                Some(&key),
                json!({"deck_id": d, "format": format, "zip": true}),
            )
            .await;
        r.assert_error(400);
        assert!(
            r.body["message"].as_str().unwrap().contains("`zip`"),
            "{}",
            r.body
        );
    }
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": d, "format": "png", "zip": "yes"}),
        )
        .await;
    r.assert_error(400);
    // A PDF export without `zip` says so.
    let pdf = export(&s, &key, &d, "pdf").await;
    assert_eq!(pdf["zip"], json!(false));
}

#[tokio::test]
async fn a_cancelled_zip_export_leaves_nothing() {
    let s = Server::start().await;
    let key = s.verified_user(&email("zipcancel")).await;
    let d = long_deck(&s, &key, 60).await;
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": d, "format": "png", "zip": true}),
        )
        .await;
    r.assert_ok();
    let job = id(&r.body);
    let path = format!("/api/slides/jobs/{job}?deck_id={d}");
    poll(&s, &path, &key, |v| {
        v["slides_done"].as_i64().unwrap_or(0) >= 2
    })
    .await;
    s.post(
        "/api/slides/jobs/cancel",
        Some(&key),
        json!({"deck_id": d, "job_id": job}),
    )
    .await
    .assert_ok();
    until_artifacts_removed(&job_dir(&s, &d, &job)).await;
    let j = s.get(&path, Some(&key)).await;
    assert_eq!(j.body["status"], json!("cancelled"));
    assert_eq!(j.body["artifacts"], json!([]));
}
