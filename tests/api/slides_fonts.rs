//! Every script in exports (issue 35): `capabilities` lists the font families (the
//! operator's `PLINTH_FONTS_DIR` among them), an export of text no font has succeeds
//! with `warnings` naming the slide, the text and the missing characters (logged once),
//! and with Debian's Noto fonts installed Japanese, Arabic and emoji draw and the PDF's
//! text keeps the Japanese.

use serde_json::{json, Value};

use crate::common::{email, Options, Server};
use crate::slide_helpers::*;

/// U+0378 is unassigned: no font has it, whatever is installed.
const NOBODY: char = '\u{378}';

fn families(caps: &Value) -> Vec<String> {
    caps["fonts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["family"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether the server found the Noto families the fallback checks need; prints why
/// those checks are skipped when it did not.
fn noto(caps: &Value) -> bool {
    let have = families(caps);
    let absent: Vec<&str> = ["Noto Sans CJK JP", "Noto Sans Arabic", "Noto Color Emoji"]
        .into_iter()
        .filter(|f| !have.iter().any(|h| h == f))
        .collect();
    if !absent.is_empty() {
        eprintln!(
            "skipped the fallback checks: {absent:?} not installed \
             (apt-get install fonts-noto-cjk fonts-noto-color-emoji fonts-noto-core)"
        );
    }
    absent.is_empty()
}

#[tokio::test]
async fn exports_report_characters_no_font_has() {
    let s = Server::start().await;
    let key = s.verified_user(&email("fonts")).await;
    let caps = s.get("/api/slides/capabilities", None).await;
    caps.assert_ok();
    let fonts = caps.body["fonts"].as_array().unwrap();
    assert_eq!(fonts[0]["family"], json!("DejaVu Sans"));
    assert_eq!(fonts[0]["source"], json!("bundled"));
    assert_eq!(fonts[1]["use"], json!("code"));

    let md = format!(
        "# Plain\n\nnothing missing here\n\n---\n\n<!-- hidden -->\n# Hidden {NOBODY}\n\n---\n\n# 日本語のスライド\n\n- مرحبا 🍎\n- odd {NOBODY} one\n"
    );
    let d = id(&create_md(&s, &key, &md).await);
    let job = export(&s, &key, &d, "pdf").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let warnings = job["warnings"].as_array().unwrap();
    // The hidden slide is not exported, so not reported; the third slide is the
    // second exported one.
    let odd = warnings
        .iter()
        .find(|w| w["missing"].as_str().unwrap().contains(NOBODY))
        .unwrap_or_else(|| panic!("{NOBODY:?} not reported: {job}"));
    assert_eq!(odd["slide"], json!(2), "{job}");
    assert_eq!(odd["text"], json!(format!("odd {NOBODY} one")));
    assert!(warnings.iter().all(|w| w["slide"] == json!(2)), "{job}");

    // Logged once for the run, with the characters.
    let log = std::fs::read_to_string(s.dir.path().join("server.log")).unwrap();
    let job_id = job["id"].as_str().unwrap();
    let lines = log
        .lines()
        .filter(|l| l.contains("no installed font has") && l.contains(job_id))
        .count();
    assert_eq!(lines, 1, "{log}");

    if noto(&caps.body) {
        // Everything but the unassigned character has a font.
        assert_eq!(warnings.len(), 1, "{job}");
        assert_eq!(odd["missing"], json!(NOBODY.to_string()));
        let pdf = download(job["artifacts"][0]["url"].as_str().unwrap()).await;
        match pdftotext(&pdf) {
            Some(text) => assert!(text.contains("日本語のスライド"), "{text}"),
            None => eprintln!("pdftotext not installed: the PDF's text is unchecked"),
        }
        // The PNG draws the Japanese: two decks differing only in one kanji differ.
        let png_of = |md: String| {
            let (s, key) = (&s, &key);
            async move {
                let d = id(&create_md(s, key, &md).await);
                let job = export(s, key, &d, "png").await;
                assert_eq!(job["warnings"], json!([]), "{job}");
                download(job["artifacts"][0]["url"].as_str().unwrap()).await
            }
        };
        let a = png_of("# 日本\n".into()).await;
        let b = png_of("# 本日\n".into()).await;
        assert_ne!(a, b, "two CJK titles render alike: missing-glyph boxes");
    }

    // A deck whose text all draws has no warnings.
    let plain = id(&create_md(&s, &key, "# Plain\n\n- Ελληνικά, Русский\n").await);
    let job = export(&s, &key, &plain, "html").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    assert_eq!(job["warnings"], json!([]), "{job}");
}

/// `PLINTH_FONTS_DIR`: the operator's faces are listed first among the fallbacks.
#[tokio::test]
async fn an_operator_font_directory_is_listed() {
    let candidates = [
        "/usr/share/fonts/truetype/noto/NotoSansThai-Regular.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    ];
    let Some(src) = candidates
        .iter()
        .find(|p| std::path::Path::new(p).is_file())
    else {
        eprintln!("skipped: no font file to copy (apt-get install fonts-noto-core)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(src, dir.path().join("operator.ttf")).unwrap();
    let s = Server::start_with(
        Options::default().env("PLINTH_FONTS_DIR", dir.path().to_str().unwrap()),
    )
    .await;
    let caps = s.get("/api/slides/capabilities", None).await;
    caps.assert_ok();
    let third = &caps.body["fonts"][2];
    assert_eq!(third["source"], json!("operator"), "{}", caps.body["fonts"]);
    assert_eq!(third["use"], json!("fallback"));
}
