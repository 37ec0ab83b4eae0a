//! Renders a markdown deck to PNGs, a PDF and an HTML file, with timings.
//!
//! cargo run --release -p plinth-render --example render_deck -- deck.md out/ [asset_id=path ...]
//!
//! Images the deck names by file (`![](chart.png)`, Marp's `![bg](photo.jpg)`) are read
//! from paths relative to the deck, as `plinth slides render` would; what the deck sets
//! but plinth does not draw is printed as warnings.

use std::time::Instant;

use plinth_render::{
    deck_html, deck_pdf, inspect_image, slide_png, visible, Budget, Image, Images, Size,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let budget = Budget::unlimited();
    if args.len() < 2 {
        eprintln!("usage: render_deck DECK.md OUT_DIR [asset_id=path ...]");
        std::process::exit(2);
    }
    let source = std::fs::read_to_string(&args[0])?;
    let base = std::path::Path::new(&args[0])
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .to_owned();
    // File names become stand-in asset ids; their bytes are loaded below.
    let files = std::cell::RefCell::new(Vec::<(String, std::path::PathBuf)>::new());
    let resolve = |name: &str| -> Option<String> {
        let path = base.join(name);
        if !path.is_file() {
            return None;
        }
        let mut files = files.borrow_mut();
        let n = match files.iter().position(|(_, p)| *p == path) {
            Some(n) => n,
            None => {
                let id = format!("00000000-0000-4000-8000-{:012}", files.len() + 1);
                files.push((id, path));
                files.len() - 1
            }
        };
        Some(files[n].0.clone())
    };
    let opts = plinth_slides::ParseOptions {
        resolve_image: Some(&resolve),
        ..Default::default()
    };
    let (deck, warnings) = plinth_slides::parse_markdown_report(&source, &opts)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let out = std::path::Path::new(&args[1]);
    std::fs::create_dir_all(out)?;

    let mut images = Images::new();
    for (id, path) in files.borrow().iter() {
        let bytes = std::fs::read(path)?;
        let info =
            inspect_image(&bytes, &budget).map_err(|e| format!("{}: {e}", path.display()))?;
        images.insert(
            id.clone(),
            Image {
                mime: info.mime.to_owned(),
                bytes,
            },
        );
    }
    for pair in &args[2..] {
        let (id, path) = pair.split_once('=').ok_or("images are asset_id=path")?;
        let bytes = std::fs::read(path)?;
        let info = inspect_image(&bytes, &budget).map_err(|e| format!("{path}: {e}"))?;
        images.insert(
            id.to_owned(),
            Image {
                mime: info.mime.to_owned(),
                bytes,
            },
        );
    }

    let size = Size::default();
    let slides = visible(&deck);
    let mut total_ms = 0.0;
    for (i, slide) in slides.iter().enumerate() {
        let t = Instant::now();
        let png = slide_png(&deck, slide, &images, size, &budget)?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        total_ms += ms;
        std::fs::write(out.join(format!("slide-{:02}.png", i + 1)), &png)?;
        println!(
            "png  slide {:>2}: {ms:6.1} ms  {:>7} bytes",
            i + 1,
            png.len()
        );
    }
    if !slides.is_empty() {
        println!(
            "png  {} slides: {:.1} ms per slide",
            slides.len(),
            total_ms / slides.len() as f64
        );
    }

    let t = Instant::now();
    let pdf = deck_pdf(&deck, &images, size, &budget)?;
    println!(
        "pdf  {} pages: {:.1} ms total, {} bytes",
        slides.len(),
        t.elapsed().as_secs_f64() * 1000.0,
        pdf.len()
    );
    std::fs::write(out.join("deck.pdf"), &pdf)?;

    let t = Instant::now();
    let html = deck_html(&deck, &images, &budget)?;
    println!(
        "html {:.1} ms, {} bytes",
        t.elapsed().as_secs_f64() * 1000.0,
        html.len()
    );
    std::fs::write(out.join("deck.html"), html)?;
    Ok(())
}
