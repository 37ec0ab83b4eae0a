//! Speaker notes in exports (issue 35): `exports/create` with `notes: true` gives a PDF
//! with a notes page after each slide that has notes and an HTML file with a presenter
//! view (driven here in headless Chromium); without it, and in PNGs and what an audience
//! sees, there are no notes.

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::{email, Server};
use crate::slide_helpers::*;

const MD: &str = "# Opening\n\nhello\n\n<!-- notes: FIRSTNOTE thank the hosts -->\n\n---\n\n# Middle\n\nno notes\n\n---\n\n<!-- hidden -->\n# HIDDENSLIDE\n\n<!-- notes: HIDDENNOTE -->\n\n---\n\n# Closing\n\n<!-- notes: LASTNOTE take questions -->\n";

async fn export_with(s: &Server, key: &str, deck: &str, format: &str, notes: bool) -> Value {
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(key),
            json!({"deck_id": deck, "format": format, "notes": notes}),
        )
        .await;
    r.assert_ok();
    let job = r.body["id"].as_str().unwrap().to_owned();
    poll(
        s,
        &format!("/api/slides/jobs/{job}?deck_id={deck}"),
        key,
        ended,
    )
    .await
}

#[tokio::test]
async fn notes_only_in_the_exports_that_ask_for_them() {
    let s = Server::start().await;
    let key = s.verified_user(&email("notes")).await;
    let d = id(&create_md(&s, &key, MD).await);

    let job = export_with(&s, &key, &d, "pdf", true).await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    assert_eq!(
        (job["format"].clone(), job["notes"].clone()),
        (json!("pdf"), json!(true))
    );
    let pdf = download(job["artifacts"][0]["url"].as_str().unwrap()).await;
    if let Some(text) = pdftotext(&pdf) {
        let pages: Vec<&str> = text
            .split('\u{c}')
            .filter(|p| !p.trim().is_empty())
            .collect();
        // Opening, its notes, Middle, Closing, its notes; the hidden slide nowhere.
        assert_eq!(pages.len(), 5, "{text}");
        assert!(pages[1].contains("FIRSTNOTE thank the hosts"), "{text}");
        assert!(pages[4].contains("LASTNOTE"), "{text}");
        assert!(!text.contains("HIDDEN"), "{text}");
    }

    let job = export_with(&s, &key, &d, "pdf", false).await;
    assert_eq!(job["notes"], json!(false));
    let pdf = download(job["artifacts"][0]["url"].as_str().unwrap()).await;
    if let Some(text) = pdftotext(&pdf) {
        assert!(
            !text.contains("FIRSTNOTE") && !text.contains("LASTNOTE"),
            "{text}"
        );
    }

    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": d, "format": "png", "notes": true}),
        )
        .await;
    r.assert_error(400);
    assert!(r.body["message"].as_str().unwrap().contains("notes"));

    let plain = export_with(&s, &key, &d, "html", false).await;
    let plain = download(plain["artifacts"][0]["url"].as_str().unwrap()).await;
    let plain = String::from_utf8(plain).unwrap();
    assert!(!plain.contains("FIRSTNOTE") && !plain.contains("id=\"presenter\""));

    let job = export_with(&s, &key, &d, "html", true).await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let html = download(job["artifacts"][0]["url"].as_str().unwrap()).await;
    let html = String::from_utf8(html).unwrap();
    assert!(html.contains("FIRSTNOTE") && !html.contains("HIDDENNOTE"));

    // The presenter view in a browser: `p` opens it on the current slide with its
    // notes, the next slide beside it and a running timer; arrows move both.
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deck.html");
    std::fs::write(&file, &html).unwrap();
    browser.window(1600, 900).await;
    browser.goto(&format!("file://{}", file.display())).await;
    let state = r#"
        var p = document.getElementById("presenter");
        var shown = Array.prototype.filter.call(document.querySelectorAll("section.slide"),
            function (s) { return getComputedStyle(s).display !== "none"; });
        return {
            presenting: document.body.classList.contains("presenter"),
            panel: getComputedStyle(p).display,
            notes: p.querySelector(".notes-text").textContent,
            position: p.querySelector(".position").textContent,
            timer: p.querySelector(".timer").textContent,
            current: (document.querySelector("section.slide.current h1") || {}).textContent,
            next: (document.querySelector("section.slide.next h1") || {}).textContent,
            shown: shown.length
        };"#;
    let before = browser.exec(state).await;
    assert_eq!(before["presenting"], json!(false), "{before}");
    assert_eq!(before["panel"], json!("none"), "{before}");
    let key_press = |k: &str| {
        format!(
            "document.dispatchEvent(new KeyboardEvent('keydown', {{key: '{k}', bubbles: true}}));"
        )
    };
    browser.exec(&key_press("p")).await;
    let on = browser.exec(state).await;
    assert_eq!(on["presenting"], json!(true), "{on}");
    assert_eq!(on["panel"], json!("flex"), "{on}");
    assert_eq!(on["current"], json!("Opening"), "{on}");
    assert_eq!(on["next"], json!("Middle"), "{on}");
    assert_eq!(on["shown"], json!(2), "{on}");
    assert_eq!(on["notes"], json!("FIRSTNOTE thank the hosts"), "{on}");
    assert_eq!(on["position"], json!("Slide 1 of 3"), "{on}");
    tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
    let later = browser.exec(state).await;
    assert_eq!(later["timer"], json!("00:01"), "the timer runs: {later}");
    browser.exec(&key_press("ArrowRight")).await;
    browser.exec(&key_press("ArrowRight")).await;
    let last = browser.exec(state).await;
    assert_eq!(last["current"], json!("Closing"), "{last}");
    assert_eq!(last["notes"], json!("LASTNOTE take questions"), "{last}");
    assert_eq!(
        last["shown"],
        json!(1),
        "no next slide after the last: {last}"
    );
    browser.exec(&key_press("p")).await;
    let off = browser.exec(state).await;
    assert_eq!(off["presenting"], json!(false), "{off}");
    browser.quit().await;
}
