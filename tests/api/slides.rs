//! Slide decks over HTTP: versions and idempotency, revisions, assets validated by a job,
//! exports rendered by workers (PDF checked with poppler when installed), publication,
//! presentation, roles, cancellation, a crash during an export, and the S3 backend.

use std::time::Duration;

use serde_json::json;

use crate::common::{email, Server};
use crate::slide_helpers::*;

const MD: &str = "---\ntitle: Quarterly review\n---\n\n<!-- layout: title -->\n# Quarterly review\n\nNumbers and **plans**\n\n<!-- notes: SECRETNOTE greet everyone -->\n\n---\n\n## Highlights\n\n- Revenue up *12%*\n- Two new `regions`\n\n---\n\n<!-- hidden -->\n## HIDDENSLIDE backup\n\nOnly if asked\n\n---\n\n## Code\n\n```rust\nfn main() {}\n```\n";

#[tokio::test]
async fn versions_revisions_and_idempotency_keys() {
    let mut s = Server::start().await;
    let key = s.verified_user(&email("author")).await;
    let deck = create_md(&s, &key, MD).await;
    let d = id(&deck);
    assert_eq!(deck["version"], json!(1));
    assert_eq!(deck["title"], json!("Quarterly review"));
    assert_eq!(deck["content"]["slides"].as_array().unwrap().len(), 4);
    let pkey = deck["data"]["presentation_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(pkey.len() >= 16);

    let list = s.get("/api/slides", Some(&key)).await;
    assert!(list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["id"] == json!(d)));

    // A batch of operations at the right version.
    let ops = json!({"id": d, "expected_version": 1, "idempotency_key": "op-1", "operations": [
        {"op": "insert", "index": 1, "slide": {"title": "Agenda", "blocks": [{"type": "bullets", "items": ["a", "b"]}]}},
        {"op": "move", "slide_id": "s4", "index": 0},
        {"op": "set_notes", "slide_id": "s2", "notes": "remember"},
        {"op": "show", "slide_id": "s3"}
    ]});
    let r = s.post("/api/slides/update", Some(&key), ops.clone()).await;
    r.assert_ok();
    assert_eq!(r.body["version"], json!(2));
    let slides = r.body["content"]["slides"].as_array().unwrap();
    assert_eq!(slides.len(), 5);
    assert_eq!(slides[0]["id"], json!("s4"));
    assert_eq!(slides[2]["title"], json!("Agenda"));
    let rev2 = r.body["revision_id"].clone();

    // The same key and body replays the first answer; nothing new is saved.
    let again = s.post("/api/slides/update", Some(&key), ops.clone()).await;
    again.assert_ok();
    assert_eq!(again.body["revision_id"], rev2);
    assert_eq!(again.body["version"], json!(2));
    // The same key with another body is refused.
    let mut other = ops.clone();
    other["operations"] = json!([{"op": "hide", "slide_id": "s1"}]);
    s.post("/api/slides/update", Some(&key), other)
        .await
        .assert_error(422);

    // A stale version: 409 with the current one.
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 1, "markdown": "# x"}),
        )
        .await;
    r.assert_error(409);
    assert_eq!(r.body["current_version"], json!(2));

    // Revisions: both retained, newest first; restore makes a third.
    let revs = s
        .get(&format!("/api/slides/revisions?deck_id={d}"), Some(&key))
        .await;
    revs.assert_ok();
    let list = revs.body["data"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["version"], json!(2));
    let rev1 = list[1]["id"].as_str().unwrap().to_owned();
    let r1 = s
        .get(
            &format!("/api/slides/revisions/{rev1}?deck_id={d}"),
            Some(&key),
        )
        .await;
    r1.assert_ok();
    assert_eq!(r1.body["content"]["slides"].as_array().unwrap().len(), 4);
    let r = s
        .post(
            "/api/slides/revisions/restore",
            Some(&key),
            json!({"deck_id": d, "revision_id": rev1, "expected_version": 2, "idempotency_key": "restore-1"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["version"], json!(3));
    assert_eq!(r.body["content"], r1.body["content"]);
    assert_eq!(r.body["revision"]["restored_from"], json!(rev1));

    // Keys survive a restart.
    s.restart();
    let again = s.post("/api/slides/update", Some(&key), ops).await;
    again.assert_ok();
    assert_eq!(again.body["revision_id"], rev2);
    let g = s.get(&format!("/api/slides/{d}"), Some(&key)).await;
    g.assert_ok();
    assert_eq!(g.body["version"], json!(3));
    let revs = s
        .get(&format!("/api/slides/revisions?deck_id={d}"), Some(&key))
        .await;
    assert_eq!(revs.body["data"].as_array().unwrap().len(), 3);

    // Creation replays too (scoped to the caller).
    let body = json!({"template": "pitch", "idempotency_key": "new-deck"});
    let a = s.post("/api/slides/create", Some(&key), body.clone()).await;
    let b = s.post("/api/slides/create", Some(&key), body).await;
    a.assert_ok();
    assert_eq!(a.body["id"], b.body["id"]);
    assert_eq!(a.body["warnings"], json!([]));

    // `update` (and `create`) answer what the markdown sets that is not drawn, with lines.
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 3, "markdown": "# Launch :rocket:\n\nWhen $x^2$ :nosuchcode:\n"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["content"]["slides"][0]["title"], json!("Launch 🚀"));
    let warnings = r.body["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0]
        .as_str()
        .unwrap()
        .starts_with("line 3: `:nosuchcode:`"));
    // The maths is typeset, not warned about: stored as a formula, which names no asset.
    let text = r.body["content"]["slides"][0]["blocks"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("](maths:i:"), "{text}");
    let g = s.get(&format!("/api/slides/{d}"), Some(&key)).await;
    assert!(
        g.body.get("warnings").is_none(),
        "warnings belong to the change"
    );
    let job = export(&s, &key, &d, "png").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
}

#[tokio::test]
async fn bad_input_is_refused_clearly() {
    let s = Server::start().await;
    let key = s.verified_user(&email("careless")).await;
    let cases = [
        json!({}),
        json!({"markdown": "# a\n```\nnever closed"}),
        json!({"markdown": "![x](https://example.com/x.png)"}),
        json!({"markdown": "<script>alert(1)</script>"}),
        json!({"markdown": "# a", "template": "pitch"}),
        json!({"template": "no-such-template"}),
        json!({"document": {"slides": []}}),
        json!({"document": {"slides": [{"blocks": [{"type": "video"}]}]}}),
        json!({"document": "not an object"}),
    ];
    for body in cases {
        let r = s.post("/api/slides/create", Some(&key), body.clone()).await;
        assert_eq!(r.status, 400, "{body} → {}", r.body);
        assert!(r.body["message"].as_str().unwrap().len() > 5);
    }
    // An image of an asset that does not exist: a reference to nothing, 404.
    let r = s
        .post(
            "/api/slides/create",
            Some(&key),
            json!({"document": {"slides": [{"blocks": [{"type": "image", "asset_id": "7c0e5a52-5b5e-4c8e-9d0e-0d6c8f9b1a11"}]}]}}),
        )
        .await;
    r.assert_error(404);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("unknown image asset"));

    // What a reader would draw one obvious way is drawn, and said: an empty markdown is a
    // blank slide (as Marp draws it); a document's second slide with a taken id gets a
    // fresh one, a short table row is filled.
    let r = s
        .post("/api/slides/create", Some(&key), json!({"markdown": ""}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["content"]["slides"].as_array().unwrap().len(), 1);
    assert!(
        r.body["warnings"].to_string().contains("blank"),
        "{}",
        r.body
    );
    let r = s
        .post(
            "/api/slides/create",
            Some(&key),
            json!({"document": {"slides": [{"id": "a", "title": "One"}, {"id": "a", "title": "Two",
                "blocks": [{"type": "table", "header": ["x", "y"], "rows": [["1"]]}]}]}}),
        )
        .await;
    r.assert_ok();
    let slides = &r.body["content"]["slides"];
    assert_eq!(
        (&slides[0]["id"], &slides[1]["id"]),
        (&json!("a"), &json!("s1"))
    );
    assert_eq!(slides[1]["blocks"][0]["rows"], json!([["1", ""]]));
    let warnings = r.body["warnings"].to_string();
    assert!(
        warnings.contains("used by an earlier slide") && warnings.contains("filled"),
        "{warnings}"
    );
    let d = id(&create_md(&s, &key, "# one").await);
    for body in [
        json!({"id": d, "markdown": "# two"}),
        json!({"id": d, "expected_version": "1", "markdown": "# two"}),
        json!({"id": d, "expected_version": 1}),
        json!({"id": d, "expected_version": 1, "operations": [{"op": "delete", "slide_id": "s9"}]}),
        json!({"id": d, "expected_version": 1, "operations": [{"op": "delete", "slide_id": "s1"}]}),
        json!({"id": d, "expected_version": 1, "operations": [{"op": "explode"}]}),
    ] {
        let r = s.post("/api/slides/update", Some(&key), body.clone()).await;
        assert_eq!(r.status, 400, "{body} → {}", r.body);
    }
    let missing = "00000000-0000-4000-8000-000000000000";
    s.get(&format!("/api/slides/{missing}"), Some(&key))
        .await
        .assert_error(404);
    s.get("/api/slides/not-a-uuid", Some(&key))
        .await
        .assert_error(404);
    s.get(
        &format!("/api/slides/revisions/{missing}?deck_id={d}"),
        Some(&key),
    )
    .await
    .assert_error(404);
    s.get("/api/slides/revisions", Some(&key))
        .await
        .assert_error(400);
    for format in ["docx", ""] {
        s.post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": d, "format": format}),
        )
        .await
        .assert_error(400);
    }
    s.post(
        "/api/slides/exports/create",
        Some(&key),
        json!({"deck_id": d, "format": "pdf", "revision_id": missing}),
    )
    .await
    .assert_error(404);
    // Another user cannot see the deck; an anonymous caller is told to authenticate.
    let stranger = s.verified_user(&email("stranger")).await;
    s.get(&format!("/api/slides/{d}"), Some(&stranger))
        .await
        .assert_error(404);
    s.post(
        "/api/slides/update",
        Some(&stranger),
        json!({"id": d, "expected_version": 1, "markdown": "# mine"}),
    )
    .await
    .assert_error(404);
    s.get(&format!("/api/slides/{d}"), None)
        .await
        .assert_error(401);
    let caps = s.get("/api/slides/capabilities", None).await;
    caps.assert_ok();
    assert_eq!(caps.body["formats"], json!(["html", "pdf", "png"]));
    assert!(caps.body["templates"].as_array().unwrap().len() >= 3);
}

#[tokio::test]
async fn assets_are_validated_by_a_background_job() {
    let s = Server::start().await;
    let key = s.verified_user(&email("photographer")).await;
    let d = id(&create_md(&s, &key, "# Photos").await);

    let img = png(64, 48);
    let ok = upload_asset(&s, &key, &d, &img, "image/png", None).await;
    assert_eq!(ok["status"], json!("ready"), "{ok}");
    assert_eq!(
        (ok["width"].clone(), ok["height"].clone()),
        (json!(64), json!(48))
    );
    let fetched = download(ok["url"].as_str().unwrap()).await;
    assert_eq!(fetched, img);

    let wrong_sha = upload_asset(&s, &key, &d, &img, "image/png", Some("ab".repeat(32))).await;
    assert_eq!(wrong_sha["status"], json!("rejected"));
    assert!(
        wrong_sha["reason"].as_str().unwrap().contains("sha256"),
        "{wrong_sha}"
    );

    let bomb = upload_asset(&s, &key, &d, &png_bomb(), "image/png", None).await;
    assert_eq!(bomb["status"], json!("rejected"));
    assert!(
        bomb["reason"].as_str().unwrap().contains("pixels"),
        "{bomb}"
    );

    let gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec();
    let not_png = upload_asset(&s, &key, &d, &gif, "image/png", None).await;
    assert_eq!(not_png["status"], json!("rejected"), "{not_png}");

    // Refused before any upload: too large, wrong type, malformed hash.
    for (size, mime, sha) in [
        (11 * 1024 * 1024, "image/png", "ab".repeat(32)),
        (100, "image/gif", "ab".repeat(32)),
        (100, "image/png", "xyz".to_owned()),
    ] {
        s.post(
            "/api/slides/assets/create",
            Some(&key),
            json!({"deck_id": d, "file": "x.png", "type": mime, "size": size, "sha256": sha}),
        )
        .await
        .assert_error(400);
    }

    // A rejected asset cannot be used; a ready one can, and then cannot be deleted.
    let bad = id(&bomb);
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 1,
                   "markdown": format!("# Photos\n\n![bomb](asset:{bad})")}),
        )
        .await;
    // The asset exists, in a state that cannot be drawn: 409.
    r.assert_error(409);
    let good = id(&ok);
    s.post(
        "/api/slides/update",
        Some(&key),
        json!({"id": d, "expected_version": 1,
               "markdown": format!("# Photos\n\n![ok](asset:{good})")}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/slides/assets/delete",
        Some(&key),
        json!({"deck_id": d, "asset_id": good}),
    )
    .await
    .assert_error(409);
    s.post(
        "/api/slides/assets/delete",
        Some(&key),
        json!({"deck_id": d, "asset_id": bad}),
    )
    .await
    .assert_ok();
    s.get(&format!("/api/slides/assets/{bad}?deck_id={d}"), Some(&key))
        .await
        .assert_error(404);
}

#[tokio::test]
async fn exports_render_pdf_png_and_html_without_hidden_slides_or_notes() {
    let s = Server::start().await;
    let key = s.verified_user(&email("presenter")).await;
    let d = id(&create_md(&s, &key, MD).await);
    let asset = upload_asset(&s, &key, &d, &png(320, 200), "image/png", None).await;
    let md = format!(
        "{MD}\n---\n\n## Picture\n\n![chart](asset:{})\n",
        id(&asset)
    );
    s.post(
        "/api/slides/update",
        Some(&key),
        json!({"id": d, "expected_version": 1, "markdown": md}),
    )
    .await
    .assert_ok();

    let job = export(&s, &key, &d, "pdf").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    assert_eq!(job["progress"], json!(1.0));
    let arts = job["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), 1);
    // Served as what the job says it is, named after the deck, dated today (issue 45).
    let got = reqwest::get(arts[0]["url"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(got.headers()["content-type"], "application/pdf");
    assert_eq!(
        got.headers()["content-disposition"],
        "attachment; filename=\"quarterly-review.pdf\""
    );
    let pdf = got.bytes().await.unwrap().to_vec();
    assert!(pdf.starts_with(b"%PDF"));
    let year = chrono::Utc::now().format("/CreationDate(D:%Y").to_string();
    let text = String::from_utf8_lossy(&pdf).replace("/CreationDate (", "/CreationDate(");
    assert!(text.contains(&year), "no creation date of this year");
    if let Some(text) = pdftotext(&pdf) {
        for needle in [
            "Quarterly review",
            "Highlights",
            "Revenue up",
            "fn main",
            "Picture",
        ] {
            assert!(text.contains(needle), "PDF text lacks {needle}: {text}");
        }
        assert!(
            !text.contains("SECRETNOTE") && !text.contains("HIDDENSLIDE"),
            "{text}"
        );
        assert_eq!(
            text.matches('\u{c}').count(),
            4,
            "one page per visible slide"
        );
    }

    let job = export(&s, &key, &d, "png").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let arts = job["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), 4, "one PNG per visible slide");
    let first = download(arts[0]["url"].as_str().unwrap()).await;
    assert_eq!(png_size(&first), (1920, 1080));

    let job = export(&s, &key, &d, "html").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let html =
        String::from_utf8(download(job["artifacts"][0]["url"].as_str().unwrap()).await).unwrap();
    assert!(html.contains("Highlights") && html.contains("data:image/png;base64,"));
    assert!(!html.contains("SECRETNOTE") && !html.contains("HIDDENSLIDE"));

    // The audience view carries a working URL for the image.
    let deck = s.get(&format!("/api/slides/{d}"), Some(&key)).await.body;
    let p = s
        .post(
            "/api/slides/publish",
            Some(&key),
            json!({"deck_id": d, "revision_id": deck["revision_id"], "expected_version": 2}),
        )
        .await;
    p.assert_ok();
    let public = s
        .get(&format!("/api/slides/public/{}", id(&p.body)), None)
        .await;
    let url = public.body["content"]["images"][id(&asset)]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(png_size(&download(&url).await), (320, 200));
}

#[tokio::test]
async fn publication_presentation_and_deletion() {
    let s = Server::start().await;
    let key = s.verified_user(&email("publisher")).await;
    let deck = create_md(&s, &key, MD).await;
    let d = id(&deck);
    let rev = deck["revision_id"].as_str().unwrap().to_owned();
    let pkey = deck["data"]["presentation_key"]
        .as_str()
        .unwrap()
        .to_owned();

    let publish = json!({"deck_id": d, "revision_id": rev, "expected_version": 1});
    s.post("/api/slides/publish", Some(&key), publish.clone())
        .await
        .assert_error(409); // not rendered yet
    assert_eq!(
        export(&s, &key, &d, "html").await["status"],
        json!("succeeded")
    );
    let p = s.post("/api/slides/publish", Some(&key), publish).await;
    p.assert_ok();
    assert_eq!(p.body["status"], json!("active"));
    let pid = id(&p.body);

    let public = s.get(&format!("/api/slides/public/{pid}"), None).await;
    public.assert_ok();
    let text = public.body.to_string();
    assert!(text.contains("Highlights"));
    assert!(
        !text.contains("SECRETNOTE") && !text.contains("HIDDENSLIDE") && !text.contains("notes")
    );
    assert_eq!(
        public.body["content"]["slides"].as_array().unwrap().len(),
        3
    );

    let present = s
        .post("/api/slides/present", None, json!({"id": d, "key": pkey}))
        .await;
    present.assert_ok();
    assert_eq!(present.body["version"], json!(1));
    assert!(!present.body.to_string().contains("SECRETNOTE"));
    s.post(
        "/api/slides/present",
        None,
        json!({"id": d, "key": "wrong"}),
    )
    .await
    .assert_error(403);

    // Unpublish revokes; a second unpublish finds nothing.
    let un = json!({"deck_id": d, "expected_version": 1});
    s.post("/api/slides/unpublish", Some(&key), un.clone())
        .await
        .assert_ok();
    s.get(&format!("/api/slides/public/{pid}"), None)
        .await
        .assert_error(404);
    s.post("/api/slides/unpublish", Some(&key), un)
        .await
        .assert_error(404);

    // Delete revokes the publication and removes the deck.
    let p = s
        .post(
            "/api/slides/publish",
            Some(&key),
            json!({"deck_id": d, "revision_id": rev, "expected_version": 1}),
        )
        .await;
    p.assert_ok();
    let pid = id(&p.body);
    s.post(
        "/api/slides/delete",
        Some(&key),
        json!({"id": d, "expected_version": 7}),
    )
    .await
    .assert_error(409);
    s.post(
        "/api/slides/delete",
        Some(&key),
        json!({"id": d, "expected_version": 1}),
    )
    .await
    .assert_ok();
    s.get(&format!("/api/slides/public/{pid}"), None)
        .await
        .assert_error(404);
    s.get(&format!("/api/slides/{d}"), Some(&key))
        .await
        .assert_error(404);
    s.post("/api/slides/present", None, json!({"id": d, "key": pkey}))
        .await
        .assert_error(404);
}

#[tokio::test]
async fn organization_decks_follow_membership_roles() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("orgowner")).await;
    let member_email = email("orgmember");
    let member = s.verified_user(&member_email).await;
    let outsider = s.verified_user(&email("outsider")).await;
    let domain = format!(
        "decks-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    s.post(
        "/api/organizations/create",
        Some(&owner),
        json!({"domain": domain}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/organizations/users/add",
        Some(&owner),
        json!({"domain": domain, "email": member_email}),
    )
    .await
    .assert_ok();

    s.post(
        "/api/slides/create",
        Some(&outsider),
        json!({"markdown": "# x", "domain": domain}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            "/api/slides/create",
            Some(&member),
            json!({"markdown": "# Team deck", "domain": domain}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["scope"], json!("organization"));
    let d = id(&r.body);

    // Members edit; only managers (org admins here) delete.
    s.post(
        "/api/slides/update",
        Some(&owner),
        json!({"id": d, "expected_version": 1, "markdown": "# Team deck v2"}),
    )
    .await
    .assert_ok();
    let listed = s.get("/api/slides", Some(&owner)).await;
    assert!(listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["id"] == json!(d)));
    s.get(&format!("/api/slides/{d}"), Some(&outsider))
        .await
        .assert_error(404);
    s.post(
        "/api/slides/delete",
        Some(&member),
        json!({"id": d, "expected_version": 2}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/slides/delete",
        Some(&owner),
        json!({"id": d, "expected_version": 2}),
    )
    .await
    .assert_ok();

    // Unverified accounts cannot create personal decks.
    let (raw, _) = s.signup(&email("unverified")).await;
    s.post("/api/slides/create", Some(&raw), json!({"markdown": "# x"}))
        .await
        .assert_error(403);
}

#[tokio::test]
async fn a_pending_job_can_be_cancelled_and_never_runs() {
    let mut s = Server::start().await;
    let key = s.verified_user(&email("canceller")).await;
    let d = id(&create_md(&s, &key, MD).await);
    // No workers: the job stays pending until cancelled.
    s.set_env("PLINTH_NO_WORKERS", "true");
    s.restart();
    let job = start_export(&s, &key, &d, "png").await;
    let cancel = json!({"deck_id": d, "job_id": job});
    let c = s
        .post("/api/slides/jobs/cancel", Some(&key), cancel.clone())
        .await;
    c.assert_ok();
    assert_eq!(c.body["status"], json!("cancelled"));
    s.post("/api/slides/jobs/cancel", Some(&key), cancel)
        .await
        .assert_error(409);

    // With workers back, the queued task is picked up and skipped.
    s.set_env("PLINTH_NO_WORKERS", "false");
    s.restart();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let j = s
        .get(&format!("/api/slides/jobs/{job}?deck_id={d}"), Some(&key))
        .await;
    assert_eq!(j.body["status"], json!("cancelled"));
    assert_eq!(j.body["artifacts"], json!([]));
    let dir = s
        .data_dir()
        .join("objects/slides")
        .join(&d)
        .join("jobs")
        .join(&job);
    assert!(!dir.exists(), "a cancelled job left artifacts");
}

#[tokio::test]
async fn an_export_interrupted_by_a_crash_completes_after_restart() {
    let mut s = Server::start().await;
    let key = s.verified_user(&email("crasher")).await;
    // Enough slides that the export is still running when the server dies.
    let d = long_deck(&s, &key, 120).await;
    let job = start_export(&s, &key, &d, "png").await;
    let path = format!("/api/slides/jobs/{job}?deck_id={d}");
    poll(&s, &path, &key, |v| {
        v["slides_done"].as_i64().unwrap_or(0) >= 2
    })
    .await;
    s.kill();
    s.restart();
    let done = poll(&s, &path, &key, ended).await;
    assert_eq!(done["status"], json!("succeeded"), "{done}");
    assert!(done["attempts"].as_i64().unwrap() >= 2, "{done}");
    let arts = done["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), 120);
    // The interrupted attempt's objects are cleared once the next one publishes.
    let files = files_under(
        &s.data_dir()
            .join("objects/slides")
            .join(&d)
            .join("jobs")
            .join(&job),
    );
    assert_eq!(files, 120, "no duplicate artifacts");
}

#[tokio::test]
async fn s3_backend_assets_and_exports() {
    let Some(peer) = crate::storage::s3_peer() else {
        return;
    };
    let s = Server::start_with(peer.options()).await;
    let key = s.verified_user(&email("s3author")).await;
    let d = id(&create_md(&s, &key, "# On S3").await);
    let asset = upload_asset(&s, &key, &d, &png(40, 30), "image/png", None).await;
    assert_eq!(asset["status"], json!("ready"), "{asset}");
    assert!(asset["url"].as_str().unwrap().starts_with(&peer.endpoint));
    s.post(
        "/api/slides/update",
        Some(&key),
        json!({"id": d, "expected_version": 1,
               "markdown": format!("# On S3\n\n![p](asset:{})", id(&asset))}),
    )
    .await
    .assert_ok();
    let job = export(&s, &key, &d, "pdf").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let url = job["artifacts"][0]["url"].as_str().unwrap();
    assert!(url.starts_with(&peer.endpoint));
    // The bucket answers with the type and name the URL was signed with.
    let got = reqwest::get(url).await.unwrap();
    assert_eq!(got.headers()["content-type"], "application/pdf");
    assert_eq!(
        got.headers()["content-disposition"],
        "attachment; filename=\"on-s3.pdf\""
    );
    assert!(got.bytes().await.unwrap().starts_with(b"%PDF"));
}

#[tokio::test]
async fn a_running_export_stops_when_cancelled_and_leaves_no_artifacts() {
    let s = Server::start().await;
    let key = s.verified_user(&email("stopper")).await;
    let d = long_deck(&s, &key, 80).await;
    let job = start_export(&s, &key, &d, "png").await;
    let path = format!("/api/slides/jobs/{job}?deck_id={d}");
    poll(&s, &path, &key, |v| {
        v["slides_done"].as_i64().unwrap_or(0) >= 2
    })
    .await;
    let c = s
        .post(
            "/api/slides/jobs/cancel",
            Some(&key),
            json!({"deck_id": d, "job_id": job}),
        )
        .await;
    c.assert_ok();
    assert_eq!(c.body["status"], json!("cancelled"));
    // The worker notices at its next slide and removes what it wrote.
    until_artifacts_removed(&job_dir(&s, &d, &job)).await;
    let j = s.get(&path, Some(&key)).await;
    assert_eq!(j.body["status"], json!("cancelled"));
    assert_eq!(j.body["artifacts"], json!([]));
    assert!(j.body["slides_done"].as_i64().unwrap() < 80);
}
