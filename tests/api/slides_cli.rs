//! `plinth slides render` and `plinth slides check` (issue 35): an author's deck on disk
//! to PDF, PNG or HTML with images beside it, no server or database; errors exit 1 with
//! the line, warnings go to stderr.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::BIN;
use crate::slide_helpers::{pdftotext, png, png_size};

fn plinth(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        // Nothing of a server's: no data directory may appear.
        .env_remove("PLINTH_DATA_DIR")
        .env_remove("PLINTH_DATABASE_URL")
        // Its index of the font directories in the test's folder, not the user's cache.
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const DECK: &str = "---\nmarp: true\npaginate: true\n---\n\n# Launch\n\n![w:400](img/chart.png)\n\n<!-- SPEAKNOTE say hello -->\n\n---\n\n## Plan\n\n- one\n- two\n\n---\n\n<!-- _class: lead -->\n\n## Thanks\n";

#[test]
fn render_writes_pdf_png_and_html_from_a_deck_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("img")).unwrap();
    std::fs::write(dir.path().join("img/chart.png"), png(320, 200)).unwrap();
    std::fs::write(dir.path().join("deck.md"), DECK).unwrap();

    // Format from the extension; the image is read relative to the deck.
    let o = plinth(
        dir.path(),
        &["slides", "render", "deck.md", "-o", "out.pdf"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let pdf = std::fs::read(dir.path().join("out.pdf")).unwrap();
    assert!(pdf.starts_with(b"%PDF"));
    assert!(
        !dir.path().join("data").exists(),
        "no data directory for an author"
    );
    if let Some(text) = pdftotext(&pdf) {
        assert!(text.contains("Launch") && text.contains("Plan") && text.contains("Thanks"));
        assert!(!text.contains("SPEAKNOTE"), "{text}");
        assert_eq!(text.matches('\u{c}').count(), 3, "{text}");
    }
    // With --notes, a notes page follows the slide with notes.
    let o = plinth(
        dir.path(),
        &["slides", "render", "deck.md", "-o", "notes.pdf", "--notes"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    if let Some(text) = pdftotext(&std::fs::read(dir.path().join("notes.pdf")).unwrap()) {
        assert!(text.contains("SPEAKNOTE say hello"), "{text}");
        assert_eq!(text.matches('\u{c}').count(), 4, "{text}");
    }
    // Default output: the deck's name with the format's extension.
    let o = plinth(
        dir.path(),
        &["slides", "render", "deck.md", "--format", "html", "--notes"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("deck.html")).unwrap();
    assert!(html.contains("data:image/png;base64,") && html.contains("id=\"presenter\""));
    // PNG: one file per slide, named after the output; its folder is made (the review
    // found "No such file or directory" for a `shots/` that did not exist yet).
    assert!(!dir.path().join("shots").exists());
    let o = plinth(
        dir.path(),
        &["slides", "render", "deck.md", "-o", "shots/talk.png"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for n in 1..=3 {
        let file = dir.path().join(format!("shots/talk.{n:03}.png"));
        assert_eq!(png_size(&std::fs::read(&file).unwrap()), (1920, 1080));
    }
    assert!(!dir.path().join("shots/talk.004.png").exists());
    let o = plinth(
        dir.path(),
        &["slides", "render", "deck.md", "-o", "x.png", "--notes"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--notes"), "{}", stderr(&o));
}

#[test]
fn errors_exit_1_with_the_line_and_warnings_go_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    // Raw HTML is refused, with its line.
    std::fs::write(dir.path().join("bad.md"), "# Title\n\ntext\n\n<p>raw</p>\n").unwrap();
    let o = plinth(dir.path(), &["slides", "render", "bad.md", "-o", "bad.pdf"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bad.md") && stderr(&o).contains("line 5"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("bad.pdf").exists());
    let o = plinth(dir.path(), &["slides", "check", "bad.md"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 5"), "{}", stderr(&o));
    // An image file that is not there.
    std::fs::write(dir.path().join("img.md"), "# T\n\n![](nothere.png)\n").unwrap();
    let o = plinth(dir.path(), &["slides", "check", "img.md"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
    // A file that is not an image.
    std::fs::write(dir.path().join("fake.png"), b"not a png").unwrap();
    std::fs::write(dir.path().join("fake.md"), "# T\n\n![](fake.png)\n").unwrap();
    let o = plinth(dir.path(), &["slides", "render", "fake.md"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("fake.png"), "{}", stderr(&o));
    // No such deck.
    let o = plinth(dir.path(), &["slides", "check", "missing.md"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("missing.md"), "{}", stderr(&o));

    // Warnings do not fail: a character no font has, a Marp setting without effect.
    std::fs::write(
        dir.path().join("warn.md"),
        "---\nmarp: true\nmath: katex\n---\n\n# Odd \u{378}\n\n---\n\n<!-- hidden -->\n# Backup\n",
    )
    .unwrap();
    let o = plinth(dir.path(), &["slides", "check", "warn.md"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: warn.md: slide 1: no installed font has"),
        "{err}"
    );
    assert!(err.contains("math"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("2 slides (1 hidden), 0 images: ok"), "{out}");
    let o = plinth(dir.path(), &["slides", "render", "warn.md"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("warn.pdf").exists());
}

/// `--zip` (or an output ending in `.zip`): the PNGs as one zip in the server's export
/// format (stored entries `slide-001.png`, … in slide order), the same bytes as the PNG
/// files a plain PNG render writes.
#[test]
fn render_zip_writes_the_pngs_as_one_zip() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("img")).unwrap();
    std::fs::write(dir.path().join("img/chart.png"), png(320, 200)).unwrap();
    std::fs::write(dir.path().join("deck.md"), DECK).unwrap();
    let o = plinth(dir.path(), &["slides", "render", "deck.md", "--zip"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("deck.zip (3 slides)"), "{}", stderr(&o));
    let bytes = std::fs::read(dir.path().join("deck.zip")).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let o = plinth(
        dir.path(),
        &["slides", "render", "deck.md", "-o", "shots/deck.png"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(archive.len(), 3);
    for i in 0..3 {
        let mut entry = archive.by_index(i).unwrap();
        assert_eq!(entry.name().unwrap(), format!("slide-{:03}.png", i + 1));
        assert_eq!(entry.compression(), zip::CompressionMethod::Stored);
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        assert_eq!(png_size(&data), (1920, 1080));
        let file = std::fs::read(dir.path().join(format!("shots/deck.{:03}.png", i + 1))).unwrap();
        assert!(data == file, "slide {} differs from its PNG file", i + 1);
    }
    // The extension asks for it too, into a folder that is made.
    let o = plinth(
        dir.path(),
        &["slides", "render", "deck.md", "-o", "out/talk.zip"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(dir.path().join("out/talk.zip")).unwrap();
    assert_eq!(
        zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .unwrap()
            .len(),
        3
    );
    // PNG only.
    for args in [
        &["slides", "render", "deck.md", "--zip", "--format", "pdf"][..],
        &["slides", "render", "deck.md", "--zip", "-o", "deck.html"][..],
    ] {
        let o = plinth(dir.path(), args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&o).contains("--zip applies to png"),
            "{}",
            stderr(&o)
        );
    }
}
