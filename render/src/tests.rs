use std::collections::HashSet;
use std::io::Cursor;
use std::process::Command;

use plinth_slides::{Block, Deck, Layout, Slide, Theme};

use super::*;

const LOGO: &str = "6f1c2a3e-0000-4000-8000-000000000001";

fn slide(title: &str, blocks: Vec<Block>) -> Slide {
    Slide {
        id: String::new(),
        layout: Layout::Content,
        title: Some(title.to_owned()),
        blocks,
        notes: None,
        hidden: false,
        ..Slide::default()
    }
}

/// A 64×48 gradient, so the rendered image is visibly not flat.
fn png_bytes(w: u32, h: u32) -> Vec<u8> {
    let img = ::image::RgbImage::from_fn(w, h, |x, y| {
        ::image::Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, 160])
    });
    let mut out = Vec::new();
    img.write_to(&mut Cursor::new(&mut out), ::image::ImageFormat::Png)
        .unwrap();
    out
}

fn sample() -> (Deck, Images) {
    let mut deck = Deck {
        title: Some("Sample <deck> & co".into()),
        theme: Theme::Light,
        slides: vec![
            Slide {
                layout: Layout::Title,
                ..slide(
                    "Quarterly Review",
                    vec![Block::Text {
                        text: "Prepared by *the platform team*".into(),
                    }],
                )
            },
            slide(
                "Highlights",
                vec![
                    Block::Bullets {
                        items: vec![
                            "Revenue grew **forty percent** year over year".into(),
                            "Latency is *down* across regions".into(),
                            "Call `render_deck` to export".into(),
                        ],
                        ordered: false,
                        start: None,
                    },
                    Block::Bullets {
                        items: vec!["First step".into(), "Second step".into()],
                        ordered: true,
                        start: None,
                    },
                ],
            ),
            Slide {
                hidden: true,
                notes: Some("SECRETNOTE".into()),
                ..slide(
                    "Hidden Roadmap",
                    vec![Block::Text {
                        text: "internal only".into(),
                    }],
                )
            },
            Slide {
                notes: Some("SECRETNOTE as well".into()),
                ..slide(
                    "Code Sample",
                    vec![
                        Block::Code {
                            language: Some("rust".into()),
                            code: "fn main() {\n    println!(\"<hello & bye>\");\n}\n".into(),
                        },
                        Block::Image {
                            asset_id: LOGO.into(),
                            alt: Some("gradient".into()),
                            width: None,
                            height: None,
                        },
                    ],
                )
            },
        ],
        ..Deck::default()
    };
    deck.fill_ids();
    deck.validate().unwrap();
    let mut images = Images::new();
    images.insert(
        LOGO.into(),
        Image {
            mime: "image/png".into(),
            bytes: png_bytes(64, 48),
        },
    );
    (deck, images)
}

fn page_count(pdf: &[u8]) -> usize {
    let text = String::from_utf8_lossy(pdf);
    text.match_indices("/Type")
        .filter(|(i, _)| {
            let rest = text[i + 5..].trim_start();
            rest.starts_with("/Page") && !rest.starts_with("/Pages")
        })
        .count()
}

#[test]
fn sample_deck_renders_to_png_pdf_and_html() {
    let (deck, images) = sample();
    let shown = visible(&deck);
    assert_eq!(shown.len(), 3);

    let mut pngs = Vec::new();
    for slide in &shown {
        let png = slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap();
        let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!((img.width(), img.height()), (1920, 1080));
        let colours: HashSet<[u8; 3]> = img.pixels().map(|p| p.0).collect();
        assert!(colours.len() > 20, "slide {} looks blank", slide.id);
        pngs.push(png);
    }
    // The slide with the image has the gradient's colours in it.
    let img = ::image::load_from_memory(&pngs[2]).unwrap().to_rgb8();
    assert!(
        img.pixels()
            .filter(|p| p.0[2] == 160 && p.0[0] > 100)
            .count()
            > 1000
    );

    let svg = slide_svg(
        &deck,
        shown[2],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    assert!(svg.contains("&lt;hello &amp; bye&gt;"));
    assert!(!svg.contains("SECRETNOTE"));

    let mut seen = Vec::new();
    let pdf = deck_pdf_with(
        &deck,
        &images,
        Size::default(),
        Options::default(),
        &Budget::unlimited(),
        &mut |i| {
            seen.push(i);
            true
        },
    )
    .unwrap();
    assert!(pdf.starts_with(b"%PDF"));
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(page_count(&pdf), 3);
    assert!(
        pdf.len() < 200_000,
        "PDF is {} bytes: fonts not subset?",
        pdf.len()
    );

    match pdftotext(&pdf) {
        Some(text) => {
            for needle in [
                "Quarterly Review",
                "Highlights",
                "forty percent",
                "Latency is down across regions",
                "render_deck",
                "Second step",
                "Code Sample",
                "println!",
            ] {
                assert!(
                    text.contains(needle),
                    "{needle:?} missing from PDF text:\n{text}"
                );
            }
            assert!(!text.contains("SECRETNOTE"));
            assert!(!text.contains("Hidden Roadmap"));
            assert!(!text.contains("internal only"));
        }
        None => eprintln!("pdftotext not on PATH: skipping the PDF text check"),
    }

    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    assert_eq!(html.matches("<section").count(), 3);
    assert!(html.contains("Sample &lt;deck&gt; &amp; co"));
    assert!(html.contains("data:image/png;base64,"));
    assert_eq!(
        run_class(&html, "forty percent").as_deref(),
        Some("t f1"),
        "bold"
    );
    assert!(!html.contains("SECRETNOTE"));
    assert!(!html.contains("Hidden Roadmap"));
}

/// The HTML page's text runs: the class and the text of each `<span class="t …">`.
fn html_runs(html: &str) -> Vec<(String, String)> {
    html.split("<span class=\"t")
        .skip(1)
        .map(|part| {
            let class = format!("t{}", &part[..part.find('"').unwrap()]);
            let text = &part[part.find('>').unwrap() + 1..part.find("</span>").unwrap()];
            (class, unescape(text))
        })
        .collect()
}

/// The class of the HTML run whose text is `text` (the first such run).
fn run_class(html: &str, text: &str) -> Option<String> {
    html_runs(html)
        .into_iter()
        .find(|(_, t)| t == text)
        .map(|(c, _)| c)
}

/// The page's text as a copy reads it: tags dropped, `<br>` and the end of a part a
/// line break (the style sheet and script left out).
fn html_text(html: &str) -> String {
    let body = &html[html.find("<main>").unwrap()..html.rfind("</main>").unwrap()];
    let mut out = String::new();
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('>').unwrap();
        let tag = &rest[open + 1..close];
        let name = tag
            .trim_start_matches('/')
            .split([' ', '>'])
            .next()
            .unwrap_or("");
        let block = [
            "p",
            "li",
            "div",
            "pre",
            "header",
            "footer",
            "section",
            "blockquote",
        ]
        .contains(&name)
            || name.starts_with('h') && name.len() == 2;
        if tag == "br" || (tag.starts_with('/') && block) {
            out.push('\n');
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    unescape(&out)
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn pdftotext(pdf: &[u8]) -> Option<String> {
    // One directory per call: tests run in parallel threads of one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("plinth-render-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join("deck.pdf");
    std::fs::write(&path, pdf).ok()?;
    let Ok(out) = Command::new("pdftotext").arg(&path).arg("-").output() else {
        println!("pdftotext (poppler-utils) is not installed: its checks are skipped");
        let _ = std::fs::remove_dir_all(&dir);
        return None;
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "pdftotext failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn pdf_progress_can_cancel() {
    let (deck, images) = sample();
    let r = deck_pdf_with(
        &deck,
        &images,
        Size::default(),
        Options::default(),
        &Budget::unlimited(),
        &mut |i| i < 1,
    );
    assert!(matches!(r, Err(RenderError::Cancelled)));
}

#[test]
fn rendering_is_deterministic() {
    let (deck, images) = sample();
    for slide in visible(&deck) {
        let a = slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap();
        let b = slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap();
        assert!(a == b, "slide {} differs between runs", slide.id);
    }
    // The PDF too: fixed resource names, no timestamps.
    let a = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    let b = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    assert!(a == b, "PDF differs between runs");
}

#[test]
fn dark_theme_and_other_sizes() {
    let (mut deck, images) = sample();
    deck.theme = Theme::Dark;
    let size = Size {
        width: 1024,
        height: 768,
    };
    let png = slide_png(&deck, &deck.slides[1], &images, size, &Budget::unlimited()).unwrap();
    let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
    assert_eq!((img.width(), img.height()), (1024, 768));
    let corner = img.get_pixel(2, 2).0;
    assert!(
        corner.iter().all(|&c| c < 60),
        "dark background expected, got {corner:?}"
    );
}

#[test]
fn overflowing_content_shrinks_onto_the_page() {
    let items: Vec<plinth_slides::ListItem> = (1..=30)
        .map(|i| {
            format!("Point number {i} with **some** words to make it wrap a bit further").into()
        })
        .collect();
    let deck = Deck {
        title: None,
        theme: Theme::Light,
        slides: vec![slide(
            "Too much",
            vec![Block::Bullets {
                items,
                ordered: true,
                start: None,
            }],
        )],
        ..Deck::default()
    };
    let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
    assert!(!page.items.is_empty());
    for item in &page.items {
        if let layout::Item::Text { y, size, .. } = item {
            assert!(
                *y <= page.height && *y - size >= 0.0,
                "text at y={y} is off the page"
            );
        }
    }
    // Shrunk, not cut, as long as it fits at the floor scale.
    let first = deck_sizes(&page);
    assert!(first < 34.0, "text size {first} was not reduced");
}

fn deck_sizes(page: &layout::Page) -> f32 {
    page.items
        .iter()
        .filter_map(|i| match i {
            layout::Item::Text { size, .. } => Some(*size),
            _ => None,
        })
        .fold(f32::MAX, f32::min)
}

#[test]
fn svg_images_and_missing_images() {
    let svg_id = "6f1c2a3e-0000-4000-8000-000000000002";
    let missing = "6f1c2a3e-0000-4000-8000-000000000003";
    let deck = Deck {
        title: None,
        theme: Theme::Light,
        slides: vec![slide(
            "Pictures",
            vec![
                Block::Image {
                    asset_id: svg_id.into(),
                    alt: None,
                    width: None,
                    height: None,
                },
                Block::Image {
                    asset_id: missing.into(),
                    alt: Some("lost one".into()),
                    width: None,
                    height: None,
                },
            ],
        )],
        ..Deck::default()
    };
    let mut images = Images::new();
    images.insert(
        svg_id.into(),
        Image {
            mime: "image/svg+xml".into(),
            bytes: br##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 20"><rect width="40" height="20" fill="#e03030"/><text x="4" y="14" font-family="sans-serif" font-size="10">Hi</text></svg>"##.to_vec(),
        },
    );
    let png = slide_png(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
    assert!(img.pixels().filter(|p| p.0 == [0xe0, 0x30, 0x30]).count() > 10_000);
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    if let Some(text) = pdftotext(&pdf) {
        assert!(text.contains("[image: lost one]"), "{text}");
    }
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
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

pub(crate) fn png_with_header(w: u32, h: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = b"IHDR".to_vec();
    chunk.extend(w.to_be_bytes());
    chunk.extend(h.to_be_bytes());
    chunk.extend([8, 6, 0, 0, 0]);
    out.extend(13u32.to_be_bytes());
    out.extend(&chunk);
    out.extend(crc32(&chunk).to_be_bytes());
    // A little (bogus) pixel data and the end: a decoder that trusted the header
    // would try to allocate 40 GB here.
    let idat = b"IDAT\x78\x9c\x63\x00\x00\x00\x01\x00\x01";
    out.extend(((idat.len() - 4) as u32).to_be_bytes());
    out.extend(idat);
    out.extend(crc32(idat).to_be_bytes());
    out.extend(0u32.to_be_bytes());
    out.extend(b"IEND");
    out.extend(crc32(b"IEND").to_be_bytes());
    out
}

#[test]
fn inspect_accepts_the_four_formats() {
    let png = png_bytes(30, 20);
    let info = inspect_image(&png, &Budget::unlimited()).unwrap();
    assert_eq!(
        (info.format, info.mime, info.width, info.height),
        ("png", "image/png", 30, 20)
    );

    let rgb =
        ::image::RgbImage::from_fn(33, 17, |x, y| ::image::Rgb([x as u8 * 7, y as u8 * 9, 50]));
    let mut jpeg = Vec::new();
    rgb.write_to(&mut Cursor::new(&mut jpeg), ::image::ImageFormat::Jpeg)
        .unwrap();
    let info = inspect_image(&jpeg, &Budget::unlimited()).unwrap();
    assert_eq!((info.format, info.width, info.height), ("jpeg", 33, 17));

    let mut webp = Vec::new();
    rgb.write_to(&mut Cursor::new(&mut webp), ::image::ImageFormat::WebP)
        .unwrap();
    let info = inspect_image(&webp, &Budget::unlimited()).unwrap();
    assert_eq!(
        (info.format, info.mime, info.width, info.height),
        ("webp", "image/webp", 33, 17)
    );

    let svg = br#"<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><circle cx="60" cy="40" r="30"/></svg>"#;
    let info = inspect_image(svg, &Budget::unlimited()).unwrap();
    assert_eq!(
        (info.format, info.mime, info.width, info.height),
        ("svg", "image/svg+xml", 120, 80)
    );
    let viewbox_only = br#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 300 150"/>"#;
    let info = inspect_image(viewbox_only, &Budget::unlimited()).unwrap();
    assert_eq!((info.width, info.height), (300, 150));

    // Every accepted format also renders, in a slide and in the PDF.
    for bytes in [png, jpeg, webp, svg.to_vec()] {
        let mut images = Images::new();
        let info = inspect_image(&bytes, &Budget::unlimited()).unwrap();
        images.insert(
            LOGO.into(),
            Image {
                mime: info.mime.into(),
                bytes,
            },
        );
        let deck = Deck {
            title: None,
            theme: Theme::Light,
            slides: vec![slide(
                "Img",
                vec![Block::Image {
                    asset_id: LOGO.into(),
                    alt: None,
                    width: None,
                    height: None,
                }],
            )],
            ..Deck::default()
        };
        slide_png(
            &deck,
            &deck.slides[0],
            &images,
            Size::default(),
            &Budget::unlimited(),
        )
        .unwrap();
        let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
        assert!(pdf.starts_with(b"%PDF"), "{}", info.format);
    }
}

#[test]
fn inspect_refuses_bombs_and_junk() {
    let bomb = png_with_header(100_000, 100_000);
    let e = inspect_image(&bomb, &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(e.contains("100000x100000") && e.contains("40000000"), "{e}");
    let e = inspect_image(&png_with_header(20_000, 100), &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(e.contains("16384"), "{e}");

    let png = png_bytes(200, 200);
    let e = inspect_image(&png[..png.len() / 2], &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(e.contains("truncated or corrupt"), "{e}");

    let rgb =
        ::image::RgbImage::from_fn(64, 64, |x, y| ::image::Rgb([x as u8 * 3, y as u8 * 3, 9]));
    let mut jpeg = Vec::new();
    rgb.write_to(&mut Cursor::new(&mut jpeg), ::image::ImageFormat::Jpeg)
        .unwrap();
    assert!(inspect_image(&jpeg[..jpeg.len() - 40], &Budget::unlimited()).is_err());

    let mut seed = 0x1234_5678u32;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as u8
        })
        .collect();
    assert!(inspect_image(&random, &Budget::unlimited()).is_err());
    assert!(inspect_image(b"", &Budget::unlimited()).is_err());

    let gif = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
    let e = inspect_image(gif, &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(e.contains("GIF"), "{e}");

    assert!(inspect_image(b"<html><body>hi</body></html>", &Budget::unlimited()).is_err());
    assert!(inspect_image(
        b"<svg xmlns=\"http://www.w3.org/2000/svg\"><rect",
        &Budget::unlimited()
    )
    .is_err());
    let external = br#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10"><image href="/etc/passwd" width="10" height="10"/></svg>"#;
    let e = inspect_image(external, &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(e.contains("external"), "{e}");
    let huge_svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"/>"#;
    assert!(inspect_image(huge_svg, &Budget::unlimited()).is_err());
}

/// Every CommonMark + GFM construct a slide shows, through markdown, in all three
/// formats.
const EVERYTHING: &str = r#"---
title: Everything
---

## Lists and quotes

- one **bold**
  1. two
     - three *deep*
       - [x] ticked task
       - [ ] open task
  2. again
- four ~~struck~~

3. third
4. fourth

> Quoted wisdom
>
> > nested quote

---

## Table and links

| Format | 20 slides | Per *slide* |
|:-------|----------:|:-----------:|
| PDF    | 0.06 s    | `3 ms`      |
| PNG    | ~~0.58 s~~ | 29 ms      |

See [the docs](https://example.com/docs) and `inline code`.

***

Logo ![logo](asset:6f1c2a3e-0000-4000-8000-000000000001) inline.
"#;

#[test]
fn every_markdown_construct_renders_everywhere() {
    let deck = plinth_slides::parse_markdown(EVERYTHING).unwrap();
    let (_, images) = sample();
    for slide in visible(&deck) {
        let png = slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap();
        let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
        let colours: HashSet<[u8; 3]> = img.pixels().map(|p| p.0).collect();
        assert!(colours.len() > 20, "slide {} looks blank", slide.id);
    }
    // The inline image is drawn (the gradient's blue channel is 160).
    let png = slide_png(
        &deck,
        &deck.slides[1],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
    assert!(
        img.pixels()
            .filter(|p| p.0[2] == 160 && p.0[0] > 60)
            .count()
            > 50
    );

    let svg = slide_svg(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    for needle in ["•", "▪", "✓", "3.", "4.", "Quoted wisdom", "nested quote"] {
        assert!(svg.contains(needle), "{needle} missing from the SVG");
    }

    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    assert!(
        String::from_utf8_lossy(&pdf).contains("https://example.com/docs"),
        "no link annotation"
    );
    if let Some(text) = pdftotext(&pdf) {
        for needle in [
            "one bold",
            "two",
            "three deep",
            "ticked task",
            "open task",
            "four struck",
            "third",
            "Quoted wisdom",
            "nested quote",
            "Format",
            "20 slides",
            "Per slide",
            "0.06 s",
            "3 ms",
            "0.58 s",
            "the docs",
            "inline code",
        ] {
            assert!(
                text.contains(needle),
                "{needle:?} missing from PDF text:\n{text}"
            );
        }
    }

    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    for needle in [
        // Lists in lists, each item with its marker (not read out) and text.
        "<ul role=\"list\"><li role=\"listitem\"><span aria-hidden=\"true\"><span class=\"t f0\"",
        "<ol role=\"list\">",
        "<blockquote><span class=\"r\"",
        "<div role=\"table\"><div role=\"row\">",
        "<div role=\"columnheader\">",
        "<div role=\"cell\">",
        "<a href=\"https://example.com/docs\"><span class=\"t f0\"",
        "<a class=\"a\" href=\"https://example.com/docs\" tabindex=\"-1\" aria-hidden=\"true\"",
        " viewBox=\"0 0 64 48\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"logo\"><use href=\"#pic-0\"/></svg>",
        "<image id=\"pic-0\" width=\"64\" height=\"48\" preserveAspectRatio=\"none\" href=\"data:image/png;base64,",
    ] {
        assert!(html.contains(needle), "{needle:?} missing from HTML");
    }
    let text = html_text(&html);
    for needle in [
        "• one bold",
        "3.",
        "struck",
        "Quoted wisdom",
        "nested quote",
        "20 slides",
        "3 ms",
        "the docs",
        "✓",
        "ticked task",
    ] {
        assert!(
            text.contains(needle),
            "{needle:?} missing from the HTML's text:\n{text}"
        );
    }
    assert_eq!(run_class(&html, "bold").as_deref(), Some("t f1"));
    assert_eq!(run_class(&html, "deep").as_deref(), Some("t f2"));
    assert_eq!(run_class(&html, "3 ms").as_deref(), Some("t f3"));
}

/// The HTML draws every text run of the layout where the layout puts it (the numbers
/// the PDF and PNG draw from), in the layout's order: one layout, three formats.
#[test]
fn html_draws_every_run_where_the_layout_puts_it() {
    let deck = plinth_slides::parse_markdown(EVERYTHING).unwrap();
    let (_, images) = sample();
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    let var = |style: &str, name: &str| {
        let at = style.find(&format!("--{name}:")).unwrap() + name.len() + 3;
        style[at..at + style[at..].find(';').unwrap()].to_owned()
    };
    let drawn: Vec<(String, String, String, String)> = html
        .split("<span class=\"t")
        .skip(1)
        .map(|run| {
            let style = &run[run.find("style=\"").unwrap() + 7..];
            let style = &style[..style.find('"').unwrap()];
            let text = &run[run.find('>').unwrap() + 1..run.find("</span>").unwrap()];
            (
                var(style, "x"),
                var(style, "y"),
                var(style, "s"),
                unescape(text),
            )
        })
        .collect();
    let trees = image::SvgTrees::default();
    let mut laid_out = Vec::new();
    for slide in visible(&deck) {
        let naturals =
            image::natural_sizes(&deck, slide, &images, &trees, &Budget::unlimited()).unwrap();
        let page = layout::page(&deck, slide, &naturals, Size::default());
        for item in page.items {
            if let layout::Item::Text {
                x, y, size, text, ..
            } = item
            {
                laid_out.push((svg::num(x), svg::num(y), svg::num(size), text));
            }
        }
    }
    assert!(laid_out.len() > 30, "{laid_out:?}");
    for (i, (d, l)) in drawn.iter().zip(&laid_out).enumerate() {
        assert_eq!(d, l, "run {i}");
    }
    assert_eq!(drawn.len(), laid_out.len());
}

#[test]
fn deep_documents_render_without_recursing_past_the_limit() {
    // The deepest valid nesting renders everywhere.
    let md = format!(
        "# Deep\n\n{}x\n\n{}\n",
        "> ".repeat(plinth_slides::MAX_NESTING),
        (0..plinth_slides::MAX_NESTING)
            .map(|i| format!("{}- level {}\n", "  ".repeat(i), i + 1))
            .collect::<String>()
    );
    let deck = plinth_slides::parse_markdown(&md).unwrap();
    let images = Images::new();
    slide_png(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    if let Some(text) = pdftotext(&pdf) {
        assert!(text.contains("level 8"), "{text}");
    }
    assert!(deck_html(&deck, &images, &Budget::unlimited())
        .unwrap()
        .contains("level 8"));
}

const MARP_DECK: &str = r#"---
marp: true
theme: gaia
size: 4:3
paginate: true
header: "**Acme** roadmap"
footer: Confidential
---

<!-- _class: lead -->
<!-- _paginate: false -->

# Roadmap

---

## Split

![bg left:40%](6f1c2a3e-0000-4000-8000-000000000001)

- point

---

<!-- _class: invert -->

## Sized

![w:300](6f1c2a3e-0000-4000-8000-000000000001)
"#;

#[test]
fn marp_decks_render_with_their_settings() {
    let deck = plinth_slides::parse_markdown(MARP_DECK).unwrap();
    let (_, images) = sample();
    let png = slide_png(
        &deck,
        &deck.slides[1],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
    assert_eq!((img.width(), img.height()), (1440, 1080), "size: 4:3");
    // The split background: the gradient on the left, gaia's background on the right.
    assert_eq!(img.get_pixel(200, 540).0[2], 160);
    assert_eq!(img.get_pixel(1400, 540).0, [0xff, 0xf8, 0xe1]);
    // The inverted slide swaps gaia's colours.
    let png = slide_png(
        &deck,
        &deck.slides[2],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
    assert_eq!(img.get_pixel(2, 2).0, [0x45, 0x5a, 0x64]);

    let svg = slide_svg(
        &deck,
        &deck.slides[1],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    assert!(svg.contains(">Confidential<") && svg.contains("roadmap<") && svg.contains(">2<"));
    let first = slide_svg(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    assert!(!first.contains(">1<"), "_paginate: false");

    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    if let Some(text) = pdftotext(&pdf) {
        for needle in ["Acme roadmap", "Confidential", "Split", "3"] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
        }
    }
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    for needle in [
        "aspect-ratio: 4 / 3",
        "--u: calc(100cqw / 1440)",
        "<header><span class=\"t f1\"",
        "<footer><span class=\"t f0\"",
        // The split image covers the left 40% (of 1440), cropped to it.
        "<span class=\"c\" style=\"--x:0;--y:0;--w:576;--h:1080;\"><svg class=\"i\"",
        "viewBox=\"0 0 64 48\" preserveAspectRatio=\"none\" aria-hidden=\"true\"><use href=\"#pic-",
        "background: #455a64",
    ] {
        assert!(html.contains(needle), "{needle:?} missing from HTML");
    }
    // `w:300` (of a 1280-wide slide) of a 64×48 image: 450×337.5 of 1440.
    let sized: Vec<&str> = html
        .split("<svg class=\"i\" style=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert!(
        sized.iter().any(|s| s.contains("--w:450;--h:337.5;")),
        "{sized:?}"
    );
    assert_eq!(run_class(&html, "Acme").as_deref(), Some("t f1"));
    let text = html_text(&html);
    assert!(text.contains("Acme roadmap") && text.contains("Confidential"));
    // Slides 2 and 3 are numbered; the first is not (`_paginate: false`).
    assert_eq!(html.matches("<div class=\"page-number\">").count(), 2);
}

#[test]
fn code_is_highlighted_in_every_format() {
    let md = "# Code\n\n```rust\nfn main() {\n    let x = \"hi\"; // note\n}\n```\n\n```nosuchlang\nplain text\n```\n";
    for theme in ["light", "dark"] {
        let deck =
            plinth_slides::parse_markdown(&format!("---\ntheme: {theme}\n---\n{md}")).unwrap();
        let images = Images::new();
        let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
        let code_colours: HashSet<_> = page
            .items
            .iter()
            .filter_map(|i| match i {
                layout::Item::Text {
                    face: crate::fonts::Face::Mono,
                    fill,
                    ..
                } => Some(*fill),
                _ => None,
            })
            .collect();
        assert!(code_colours.len() >= 4, "{theme}: {code_colours:?}");
        let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
        let mono: HashSet<String> = html
            .split("<span class=\"t f3\" style=\"")
            .skip(1)
            .filter_map(|run| {
                let style = &run[..run.find('"').unwrap()];
                style.split("color:").nth(1).map(str::to_owned)
            })
            .collect();
        assert!(mono.len() >= 3, "{theme}: {mono:?}");
        let text = html_text(&html);
        assert!(
            text.contains("fn main() {\n    let x = \"hi\"; // note\n}"),
            "{text}"
        );
        assert!(text.contains("plain text"), "unknown languages stay plain");
        let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
        if let Some(text) = pdftotext(&pdf) {
            assert!(text.contains("let x = \"hi\"; // note"), "{text}");
        }
    }
}

/// Timings for `fixtures/decks/bench20-rich.md` (tables, nested lists, quotes, six
/// highlighted code slides, backgrounds, header, footer, page numbers). Run with
/// `cargo test --release -p plinth-render bench_rich_deck -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_rich_deck() {
    use std::time::Instant;
    let t = Instant::now();
    crate::highlight::highlight("x", Some("txt"), false);
    let load = t.elapsed();
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/decks/bench20-rich.md"
    ))
    .unwrap();
    let t = Instant::now();
    let deck = plinth_slides::parse_markdown(&src).unwrap();
    let parse = t.elapsed();
    assert_eq!(deck.slides.len(), 20);
    let mut images = Images::new();
    for (id, file) in [
        ("11111111-1111-4111-8111-111111111111", "chart.png"),
        ("22222222-2222-4222-8222-222222222222", "photo.jpg"),
    ] {
        let bytes = std::fs::read(format!(
            "{}/../fixtures/decks/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let info = inspect_image(&bytes, &Budget::unlimited()).unwrap();
        images.insert(
            id.into(),
            Image {
                mime: info.mime.into(),
                bytes,
            },
        );
    }
    // Highlighting alone: cold (each language's patterns compile on first use), then warm.
    let code: Vec<(String, Option<String>)> = deck
        .slides
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter_map(|b| match b {
            Block::Code { code, language } => Some((code.clone(), language.clone())),
            _ => None,
        })
        .collect();
    for (c, l) in &code {
        let t = Instant::now();
        crate::highlight::highlight(c, l.as_deref(), false).unwrap();
        eprintln!(
            "  {:?} cold {:.1} ms",
            l,
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
    let mut hl = Vec::new();
    for _ in 0..2 {
        let t = Instant::now();
        for (c, l) in &code {
            crate::highlight::highlight(c, l.as_deref(), false).unwrap();
        }
        hl.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    eprintln!(
        "highlighting {} code blocks again: {:.1} ms, {:.1} ms",
        code.len(),
        hl[0],
        hl[1]
    );
    let t = Instant::now();
    crate::highlight::warm_up();
    eprintln!(
        "warm_up (16 languages, 5 of them already compiled): {:.1} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let mut pdf_ms = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
        pdf_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(pdf.len() > 10_000);
    }
    let mut png_ms = Vec::new();
    for slide in visible(&deck) {
        let t = Instant::now();
        slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap();
        png_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let mut html_ms = Vec::new();
    let mut html = String::new();
    for _ in 0..7 {
        let t = Instant::now();
        html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
        html_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let html_ms = median(&mut html_ms);
    let first_pdf = pdf_ms[0];
    eprintln!(
        "syntax set + themes load {:.1} ms; parse {:.2} ms; PDF 20 pages first {:.1} ms, median {:.1} ms; PNG median {:.1} ms/slide, max {:.1}; HTML median {:.1} ms ({} bytes)",
        load.as_secs_f64() * 1000.0,
        parse.as_secs_f64() * 1000.0,
        first_pdf,
        median(&mut pdf_ms),
        median(&mut png_ms.clone()),
        png_ms.iter().cloned().fold(0.0, f64::max),
        html_ms,
        html.len()
    );
}

#[test]
fn list_items_with_blocks_render_in_their_column() {
    let md = "# Steps\n\n1. Install:\n   ```bash\n   cargo install plinth\n   ```\n   then run it\n2. Remember:\n   > small steps\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    let images = Images::new();
    let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
    let x_of = |needle: &str| {
        page.items.iter().find_map(|i| match i {
            layout::Item::Text { x, text, .. } if text.contains(needle) => Some(*x),
            _ => None,
        })
    };
    let (item_x, code_x) = (x_of("Install:").unwrap(), x_of("install").unwrap());
    assert!(code_x > item_x, "code sits in the item's column");
    slide_png(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    if let Some(text) = pdftotext(&pdf) {
        for needle in [
            "Install:",
            "cargo install plinth",
            "then run it",
            "small steps",
        ] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
        }
    }
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    // The item's blocks are in the item.
    let item = &html[html.find("<li role=\"listitem\">").unwrap()..];
    let item = &item[..item.find("</li>").unwrap()];
    assert!(
        item.contains("Install:") && item.contains("<pre>"),
        "{item}"
    );
    let quote = &html[html.find("<blockquote>").unwrap()..html.find("</blockquote>").unwrap()];
    assert!(
        quote.contains("<p>") && quote.contains(">small steps<"),
        "{quote}"
    );
}

/// A Marp-style deck that names its images by file, resolved the way a CLI or the
/// server would (a closure that borrows its own table).
#[test]
fn marp_style_fixture_renders_with_file_images() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/decks");
    let files = [
        ("chart.png", "6f1c2a3e-0000-4000-8000-00000000000a"),
        ("photo.jpg", "6f1c2a3e-0000-4000-8000-00000000000b"),
    ];
    let table: Vec<(String, String)> = files
        .iter()
        .map(|(f, id)| (f.to_string(), id.to_string()))
        .collect();
    let resolve = |name: &str| {
        table
            .iter()
            .find(|(f, _)| f == name)
            .map(|(_, id)| id.clone())
    };
    let opts = plinth_slides::ParseOptions {
        resolve_image: Some(&resolve),
        ..Default::default()
    };
    let src = std::fs::read_to_string(format!("{dir}/marp-style.md")).unwrap();
    let (deck, warnings) = plinth_slides::parse_markdown_report(&src, &opts).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut images = Images::new();
    for (file, id) in files {
        let bytes = std::fs::read(format!("{dir}/{file}")).unwrap();
        let mime = inspect_image(&bytes, &Budget::unlimited())
            .unwrap()
            .mime
            .to_owned();
        images.insert(id.into(), Image { mime, bytes });
    }
    assert_eq!(deck.asset_ids().len(), 2);
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    if let Some(text) = pdftotext(&pdf) {
        for needle in [
            "Roadmap 2027",
            "Split background",
            "Confidential",
            "nested point",
        ] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
        }
    }
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    // Two backgrounds and a chart without alt text, not announced; the photo is cropped
    // to its split (a clip box).
    assert_eq!(html.matches("aria-hidden=\"true\"><use href").count(), 3);
    assert!(html.contains("<span class=\"c\""));
}

/// Documents at the edges of what validation accepts render without panicking and
/// keep their text on the page.
#[test]
fn edge_documents_render() {
    let id = LOGO;
    let wide: Vec<String> = (0..30).map(|i| format!("column{i}withalongword")).collect();
    let item = |depth: usize| {
        (0..depth).fold(serde_json::json!("leaf"), |inner, _| {
            serde_json::json!({"text": "", "blocks": [{"type": "code", "code": "x"}],
                               "list": {"items": [inner]}})
        })
    };
    let docs = [
        serde_json::json!({"slides": [{"blocks": [{"type": "table", "header": wide, "rows": [wide.clone()]}]}]}),
        serde_json::json!({"slides": [{"blocks": [{"type": "table", "header": [""], "rows": [[""]]}]}]}),
        serde_json::json!({"slides": [{"blocks": [{"type": "bullets", "items": [item(7)]}]}]}),
        serde_json::json!({"aspect": "4:3", "paginate": true, "header": "h", "footer": "f", "slides": [
            {"backgrounds": [
                {"asset_id": id, "position": "left", "split": 90},
                {"asset_id": id, "position": "right", "split": 90},
                {"asset_id": id}, {"asset_id": id, "fit": "contain"}],
             "blocks": [{"type": "text", "text": "squeezed ![i](asset:6f1c2a3e-0000-4000-8000-000000000001) [l](https://x.y)"}]}]}),
        serde_json::json!({"slides": [{"layout": "title", "title": "[T](https://t.example) `c` ~~s~~", "blocks": [
            {"type": "image", "asset_id": id, "width": 8192, "height": 1},
            {"type": "image", "asset_id": "6f1c2a3e-0000-4000-8000-0000000000ff", "width": 10},
            {"type": "quote", "blocks": [{"type": "table", "header": ["a"], "rows": []}, {"type": "rule"}]},
            {"type": "code", "language": "rust", "code": "\t\u{7}fn x() {}\n".repeat(60)}]}]}),
    ];
    let (_, images) = sample();
    for doc in docs {
        let deck = Deck::from_json(doc.clone()).unwrap_or_else(|e| panic!("{e}: {doc}"));
        for slide in visible(&deck) {
            let size = deck_size(&deck, Size::default());
            let page = layout::page(
                &deck,
                slide,
                &image::natural_sizes(
                    &deck,
                    slide,
                    &images,
                    &image::SvgTrees::default(),
                    &Budget::unlimited(),
                )
                .unwrap(),
                size,
            );
            for item in &page.items {
                if let layout::Item::Text { y, x, .. } = item {
                    assert!(
                        *y <= page.height && *x >= 0.0 && *x <= page.width,
                        "{doc}: text at {x},{y}"
                    );
                }
            }
            slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap();
        }
        deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
        deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    }
}

/// Whether the Debian Noto fonts the fallback tests need are installed; prints why a
/// test is skipped when they are not.
pub(crate) fn noto_installed() -> bool {
    let names = crate::fonts::registry().family_names();
    let want = [
        "Noto Sans CJK JP",
        "Noto Sans Arabic",
        "Noto Sans Hebrew",
        "Noto Sans Devanagari",
        "Noto Sans Thai",
        "Noto Color Emoji",
    ];
    let absent: Vec<&str> = want
        .iter()
        .copied()
        .filter(|w| !names.contains(w))
        .collect();
    if !absent.is_empty() {
        eprintln!(
            "skipped: fonts {absent:?} are not installed \
             (apt-get install fonts-noto-cjk fonts-noto-color-emoji fonts-noto-core)"
        );
    }
    absent.is_empty()
}

fn pixels(png: &[u8]) -> ::image::RgbImage {
    ::image::load_from_memory(png).unwrap().to_rgb8()
}

/// Every script draws its own glyphs (two different characters never draw the same
/// "missing" box), emoji in colour, and the PDF keeps the text, emoji included.
#[test]
fn every_script_and_colour_emoji_render() {
    if !noto_installed() {
        return;
    }
    let images = Images::new();
    let render = |text: &str| {
        let deck = plinth_slides::parse_markdown(&format!("# {text}\n")).unwrap();
        slide_png(
            &deck,
            &deck.slides[0],
            &images,
            Size::default(),
            &Budget::unlimited(),
        )
        .unwrap()
    };
    for (a, b) in [
        ("日本", "本日"),
        ("مرحبا", "شكرا"),
        ("שלום", "תודה"),
        ("नमस्ते", "धन्यवाद"),
        ("สวัสดี", "ขอบคุณ"),
        ("🍎", "🚀"),
    ] {
        assert_ne!(
            pixels(&render(a)),
            pixels(&render(b)),
            "{a} and {b} draw alike"
        );
    }
    // The apple is red: colour glyphs, not a monochrome outline in the text colour.
    let apple = pixels(&render("🍎🍎🍎"));
    let red = apple
        .pixels()
        .filter(|p| p.0[0] > 180 && p.0[1] < 90 && p.0[2] < 90)
        .count();
    assert!(
        red > 500,
        "only {red} red pixels: the emoji is not in colour"
    );

    let md = "# 日本語のスライド\n\n- العربية: تصدير\n- हिन्दी और ไทย\n- Emoji 🍎 and 👨‍👩‍👧 inline\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    let body = String::from_utf8_lossy(&pdf);
    for font in [
        "NotoSansCJKJP-Bold",
        "NotoSansArabic",
        "NotoSansDevanagari",
        "NotoSansThai",
    ] {
        assert!(body.contains(font), "{font} is not embedded");
    }
    // The emoji is an image in the PDF: one image XObject, no asset images here.
    assert!(body.contains("/Subtype /Image") || body.contains("/Subtype/Image"));
    match pdftotext(&pdf) {
        Some(text) => {
            // (Devanagari's vowel sign i extracts where it is drawn, before its
            // consonant: pdftotext orders by position.)
            for needle in [
                "日本語のスライド",
                "न्दी",
                "ไทย",
                "تصدير",
                "Emoji 🍎 and 👨‍👩‍👧 inline",
            ] {
                assert!(text.contains(needle), "{needle:?} missing:\n{text}");
            }
        }
        None => eprintln!(
            "pdftotext not installed (apt-get install poppler-utils): text layer unchecked"
        ),
    }
    assert!(missing_glyphs(&deck).is_empty());
}

/// Joining scripts are measured shaped (medial forms are narrower than isolated ones),
/// and runs of a right-to-left paragraph stand in visual order.
#[test]
fn right_to_left_text_is_shaped_and_ordered() {
    if !noto_installed() {
        return;
    }
    let fonts = crate::fonts::registry();
    let arabic = fonts.pick(crate::fonts::Face::Regular, 'ب', None).unwrap();
    let m = crate::fonts::font_metrics(arabic);
    let shaped: f32 = m.shape("ببببب").iter().map(|g| g.advance).sum();
    assert!(
        shaped < m.width("ببببب") * 0.9,
        "{shaped} vs {}",
        m.width("ببببب")
    );

    let deck = plinth_slides::parse_markdown("# T\n\nשלום 2026 עולם\n").unwrap();
    let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
    let x_of = |needle: &str| {
        page.items
            .iter()
            .find_map(|i| match i {
                layout::Item::Text { x, text, .. } if text.contains(needle) => Some(*x),
                _ => None,
            })
            .unwrap()
    };
    // A number between two Hebrew words: the run of three reads right to left, so
    // the second word stands left of the number and the first right of it.
    assert!(x_of("עולם") < x_of("2026"));
    assert!(x_of("2026") < x_of("שלום"));
}

/// Speaker notes only when asked for: a notes page after each slide with notes in the
/// PDF, a presenter view in the HTML; never otherwise.
#[test]
fn notes_go_into_exports_only_when_asked() {
    let md = "# One\n\nfirst\n\n<!-- notes: SAYTHIS greet everyone -->\n\n---\n\n# Two\n\nno notes here\n\n---\n\n# Three\n\n<!-- notes: ALSOTHIS last point -->\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    assert!(deck.slides[0].notes.is_some(), "{:?}", deck.slides[0]);
    let images = Images::new();
    let with = Options {
        notes: true,
        ..Options::default()
    };
    let plain = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    let noted = deck_pdf_with(
        &deck,
        &images,
        Size::default(),
        with,
        &Budget::unlimited(),
        &mut |_| true,
    )
    .unwrap();
    assert_eq!(page_count(&plain), 3);
    assert_eq!(
        page_count(&noted),
        5,
        "a notes page after slides one and three"
    );
    if let Some(text) = pdftotext(&noted) {
        let pages: Vec<&str> = text.split('\u{c}').collect();
        assert!(
            pages[1].contains("Notes · 1: One") && pages[1].contains("SAYTHIS"),
            "{text}"
        );
        assert!(pages[4].contains("ALSOTHIS"), "{text}");
        assert!(
            pages[2].contains("Two") && !pages[3].contains("Notes"),
            "{text}"
        );
    }
    if let Some(text) = pdftotext(&plain) {
        assert!(
            !text.contains("SAYTHIS") && !text.contains("ALSOTHIS"),
            "{text}"
        );
    }

    let plain = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    assert!(!plain.contains("SAYTHIS") && !plain.contains("id=\"presenter\""));
    let noted = deck_html_with(&deck, &images, with, &Budget::unlimited()).unwrap();
    assert!(noted.contains("<aside class=\"notes\">SAYTHIS greet everyone</aside>"));
    assert!(noted.contains("id=\"presenter\"") && noted.contains("class=\"timer\""));
    // The audience copy has no notes to carry, whatever the option.
    let audience = deck_html_with(&deck.audience(), &images, with, &Budget::unlimited()).unwrap();
    assert!(!audience.contains("SAYTHIS") && !audience.contains("<aside"));
}

/// `<!-- column -->` splits a slide's blocks into columns side by side under the title,
/// in every format; a `![bg left:40%]` image fills the left 40% and the text reflows
/// into the rest.
#[test]
fn columns_and_split_images_place_text_where_the_author_asked() {
    let md = "---\nfooter: F\n---\n\n## Compare\n\nLEFTWORD before\n\n- one\n- two\n\n<!-- column -->\n\nRIGHTWORD after\n\n```rust\nfn main() {}\n```\n\n---\n\n## Split\n\n![bg left:40%](6f1c2a3e-0000-4000-8000-000000000001)\n\nREFLOWED text beside the picture\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    assert_eq!(
        deck.slides[0].blocks[2],
        Block::ColumnBreak,
        "{:?}",
        deck.slides[0].blocks
    );
    let (_, images) = sample();
    let sizes = one_image(LOGO, 64.0, 48.0);
    let text_at = |page: &layout::Page, needle: &str| {
        page.items
            .iter()
            .find_map(|i| match i {
                layout::Item::Text { x, y, text, .. } if text.contains(needle) => Some((*x, *y)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{needle} not drawn"))
    };
    let page = layout::page(&deck, &deck.slides[0], &sizes, Size::default());
    let (lx, ly) = text_at(&page, "LEFTWORD");
    let (rx, ry) = text_at(&page, "RIGHTWORD");
    let (tx, ty) = text_at(&page, "Compare");
    assert!(lx < 200.0, "left column starts at the margin: {lx}");
    assert!(
        (960.0..1100.0).contains(&rx),
        "right column starts past the middle: {rx}"
    );
    assert!((ly - ry).abs() < 1.0, "both columns start on one line");
    assert!(
        ty < ly && (tx - lx).abs() < 1.0,
        "the title spans above both"
    );
    // Nothing in the left column reaches into the right one.
    for item in &page.items {
        if let layout::Item::Text { x, text, .. } = item {
            if text.contains("one") || text.contains("two") {
                assert!(*x < 960.0, "{text} at {x}");
            }
        }
    }

    let page = layout::page(&deck, &deck.slides[1], &sizes, Size::default());
    let image = page
        .items
        .iter()
        .find_map(|i| match i {
            layout::Item::Image { clip, .. } => *clip,
            _ => None,
        })
        .unwrap();
    assert_eq!(image, [0.0, 0.0, 768.0, 1080.0], "the left 40% of 1920");
    let (x, _) = text_at(&page, "REFLOWED");
    assert!(x > 768.0, "text moves right of the image: {x}");
    for item in &page.items {
        if let layout::Item::Text { x, text, .. } = item {
            assert!(*x >= 768.0, "{text} at {x} overlaps the image");
        }
    }

    let svg = slide_svg(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    assert!(svg.contains("LEFTWORD") && svg.contains("RIGHTWORD"));
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    // Left column before the right one, in reading order.
    let text = html_text(&html);
    let (left, right) = (
        text.find("LEFTWORD").unwrap(),
        text.find("RIGHTWORD").unwrap(),
    );
    assert!(left < right && text[left..right].contains("two"), "{text}");
    // Beside the split image the footer moves with the content, as in the PNG.
    let footer = &html[html.rfind("<footer>").unwrap()..];
    let x: f32 = footer[footer.find("--x:").unwrap() + 4..footer.find(";--y").unwrap()]
        .parse()
        .unwrap();
    assert!(x > 0.4 * 1920.0, "footer at {x}");
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    if let Some(text) = pdftotext(&pdf) {
        assert!(
            text.contains("LEFTWORD") && text.contains("RIGHTWORD"),
            "{text}"
        );
    }
}

#[test]
fn column_breaks_out_of_place_are_refused_with_the_line() {
    let err = plinth_slides::parse_markdown("# T\n\n- item\n\n  <!-- column -->\n\n  more\n")
        .unwrap_err();
    assert!(
        err.0.contains("line 5") && err.0.contains("column"),
        "{err}"
    );
    let err = plinth_slides::parse_markdown(
        "# T\n\na\n\n<!-- column -->\n\nb\n\n<!-- column -->\n\nc\n\n<!-- column -->\n\nd\n",
    )
    .unwrap_err();
    assert!(
        err.0.contains("line 13") && err.0.contains("at most 3"),
        "{err}"
    );
}

/// A deck's brand colour replaces the accent and its logo sits in the top-right corner
/// of every slide, in every format.
#[test]
fn brand_colour_and_logo_on_every_slide() {
    let md = format!(
        "---\nbrand: \"#e4007c\"\nlogo: asset:{LOGO}\nheader: Team\n---\n\n# One\n\n- a\n\n---\n\n## Two\n\n[link](https://example.com)\n"
    );
    let deck = plinth_slides::parse_markdown(&md).unwrap();
    assert_eq!(deck.logo.as_deref(), Some(LOGO));
    assert_eq!(deck.asset_ids(), vec![LOGO.to_owned()]);
    let (_, images) = sample();
    for slide in &deck.slides {
        let sizes = image::natural_sizes(
            &deck,
            slide,
            &images,
            &image::SvgTrees::default(),
            &Budget::unlimited(),
        )
        .unwrap();
        let page = layout::page(&deck, slide, &sizes, Size::default());
        let logo = page
            .items
            .iter()
            .find_map(|i| match i {
                layout::Item::Image {
                    x,
                    y,
                    w,
                    h,
                    asset_id,
                    ..
                } if asset_id == LOGO => Some((*x, *y, *w, *h)),
                _ => None,
            })
            .expect("logo drawn");
        // 64×48 scaled to 56 tall, right-aligned on the text's margin of 1920.
        assert!((logo.3 - 56.0).abs() < 0.01 && (logo.0 + logo.2 - 1802.25).abs() < 0.01);
        assert!(logo.1 + logo.3 < 80.0, "above the title");
        let accent = page.items.iter().any(|i| {
            matches!(i, layout::Item::Rect { fill, .. } if *fill == layout::Color(0xe4, 0x00, 0x7c))
        });
        assert!(accent, "the title rule is in the brand colour");
    }
    let png = slide_png(
        &deck,
        &deck.slides[1],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
    // The logo is a blue-ish gradient (blue channel 160) in the corner.
    assert_eq!(img.get_pixel(1800, 44).0[2], 160);
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    assert_eq!(html.matches("role=\"img\" aria-label=\"logo\"").count(), 2);
    assert_eq!(
        html.matches("data:image/png;base64,").count(),
        1,
        "the logo once"
    );
    assert!(html.contains("background:#e4007c"), "the accent rule");

    let err = plinth_slides::parse_markdown("---\nlogo: logo.png\n---\n# T\n").unwrap_err();
    assert!(
        err.0.contains("line 2") && err.0.contains("logo.png"),
        "{err}"
    );
    let err = plinth_slides::parse_markdown("---\nbrand: blurple\n---\n# T\n").unwrap_err();
    assert!(err.0.contains("line 2"), "{err}");
}

/// A paragraph whose first strong character is Arabic or Hebrew aligns right, its list
/// marker on the right; left-to-right paragraphs beside it stay left.
#[test]
fn right_to_left_paragraphs_align_right() {
    if !noto_installed() {
        return;
    }
    let md = "# عنوان الشريحة\n\nمرحبا بالعالم\n\nHello world\n\n- שלום עולם\n- English item\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
    let right_edge = 1920.0 - 110.0;
    let span = |needle: &str| {
        page.items
            .iter()
            .filter_map(|i| match i {
                layout::Item::Text {
                    x,
                    text,
                    size,
                    font,
                    ..
                } if text.contains(needle) => {
                    let m = crate::fonts::font_metrics(*font);
                    Some((
                        *x,
                        *x + m.shape(text).iter().map(|g| g.advance).sum::<f32>() * size,
                    ))
                }
                _ => None,
            })
            .next()
            .unwrap_or_else(|| panic!("{needle} not drawn"))
    };
    let (ax, aend) = span("مرحبا");
    assert!(
        ax > 960.0 && (aend - right_edge).abs() < 40.0,
        "{ax}..{aend}"
    );
    let (hx, _) = span("Hello");
    assert!(hx < 120.0, "{hx}");
    let (tx, _) = span("الشريحة");
    assert!(tx > 960.0, "the title aligns right too: {tx}");
    let (ix, iend) = span("שלום");
    let (ex, _) = span("English");
    assert!(
        ix > 960.0 && iend < right_edge - 20.0,
        "room for the marker: {ix}..{iend}"
    );
    assert!(ex < 240.0, "{ex}");
    let bullets: Vec<f32> = page
        .items
        .iter()
        .filter_map(|i| match i {
            layout::Item::Text { x, text, .. } if text == "•" => Some(*x),
            _ => None,
        })
        .collect();
    assert_eq!(bullets.len(), 2);
    assert!(bullets[0] > iend && bullets[1] < ex, "{bullets:?}");
    let html = deck_html(&deck, &Images::new(), &Budget::unlimited()).unwrap();
    assert!(html.contains("unicode-bidi: plaintext"));
    // The runs where the layout put them: the right-to-left item's bullet at its right.
    let x_of = |needle: &str| {
        let at = html.find(&format!(">{needle}</span>")).unwrap();
        let style = &html[html[..at].rfind("--x:").unwrap() + 4..];
        style[..style.find(';').unwrap()].parse::<f32>().unwrap()
    };
    assert!(x_of("•") > x_of("שלום עולם"));
    assert!(html_text(&html).contains("English item"));
}

/// The layouts fixture (columns, a brand colour and logo, a split photo, right-to-left
/// text) parses with no warning and exports in every format.
#[test]
fn layouts_fixture_renders_in_every_format() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/decks");
    let files = [
        ("logo.svg", "6f1c2a3e-0000-4000-8000-00000000000c"),
        ("photo.jpg", "6f1c2a3e-0000-4000-8000-00000000000b"),
    ];
    let resolve = |name: &str| {
        files
            .iter()
            .find(|(f, _)| *f == name)
            .map(|(_, id)| id.to_string())
    };
    let opts = plinth_slides::ParseOptions {
        resolve_image: Some(&resolve),
        ..Default::default()
    };
    let src = std::fs::read_to_string(format!("{dir}/layouts.md")).unwrap();
    let (deck, warnings) = plinth_slides::parse_markdown_report(&src, &opts).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut images = Images::new();
    for (file, id) in files {
        let bytes = std::fs::read(format!("{dir}/{file}")).unwrap();
        let mime = inspect_image(&bytes, &Budget::unlimited())
            .unwrap()
            .mime
            .to_owned();
        images.insert(id.into(), Image { mime, bytes });
    }
    for slide in visible(&deck) {
        slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap();
    }
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    assert_eq!(page_count(&pdf), deck.slides.len());
    if let Some(text) = pdftotext(&pdf) {
        for needle in ["A release a day", "Two weeks per release", "first point"] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
        }
    }
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    assert_eq!(
        html.matches("aria-label=\"logo\"").count(),
        deck.slides.len()
    );
}

/// Where the text items containing `first` and `last` reach, top of the first to the
/// bottom of the last (the faces' ascent and descent around their baselines).
fn text_span(page: &layout::Page, first: &str, last: &str) -> (f32, f32) {
    let find = |needle: &str| {
        page.items
            .iter()
            .find_map(|i| match i {
                layout::Item::Text {
                    y,
                    size,
                    text,
                    face,
                    ..
                } if text.contains(needle) => Some((*y, *size, *face)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{needle} not drawn"))
    };
    let (y0, s0, f0) = find(first);
    let (y1, s1, f1) = find(last);
    (
        y0 - crate::fonts::metrics(f0).ascent * s0,
        y1 + crate::fonts::metrics(f1).descent * s1,
    )
}

/// The bottom of the accent rule under a content slide's title.
fn title_bottom(page: &layout::Page) -> f32 {
    page.items
        .iter()
        .find_map(|i| match i {
            layout::Item::Rect { y, w, h, .. } if (*w - 96.0).abs() < 0.01 => Some(y + h),
            _ => None,
        })
        .expect("a title rule")
}

/// Within this much (units of a 1080-unit slide) a body counts as centred: the gap
/// under the title and the line spacing make the drawn text sit a little off the
/// centre of its layout box.
const CENTRED: f32 = 40.0;

/// The natural size of one raster image, as the worker reads it before laying out.
fn one_image(id: &str, width: f32, height: f32) -> layout::NaturalSizes {
    [(
        id.to_owned(),
        layout::Natural {
            width,
            height,
            vector: false,
        },
    )]
    .into()
}

fn page_of(md: &str, sizes: &layout::NaturalSizes, fill: layout::Fill) -> layout::Page {
    let deck = plinth_slides::parse_markdown(md).unwrap();
    layout::page_with(&deck, &deck.slides[0], sizes, Size::default(), fill)
}

/// A short slide keeps its body right under its title, the two centred together on the
/// slide as Marp's default theme centres them; at the top (gaia, notes pages) they
/// start at the top margin. Title slides are centred either way.
#[test]
fn short_slides_keep_their_body_with_the_title() {
    let md = "## Two points\n\n- FIRSTPOINT\n- LASTPOINT\n";
    let sizes = layout::NaturalSizes::new();
    let balanced = page_of(md, &sizes, layout::Fill::Balanced);
    let top = page_of(md, &sizes, layout::Fill::Top);
    let title = title_bottom(&balanced);
    let (a, b) = text_span(&balanced, "FIRSTPOINT", "LASTPOINT");
    assert!(
        a - title < 90.0,
        "the body {a} sits right under the title at {title}"
    );
    let (t, _) = text_span(&balanced, "Two points", "Two points");
    assert!(
        ((t + b) / 2.0 - 540.0).abs() < CENTRED,
        "title and body {t}..{b} centred"
    );
    assert!(
        title_bottom(&top) < 260.0,
        "at the top: {}",
        title_bottom(&top)
    );

    // Without a title the body is centred on the whole frame.
    let page = page_of("Just one line, ALONE\n", &sizes, layout::Fill::Balanced);
    let (a, b) = text_span(&page, "ALONE", "ALONE");
    assert!(((a + b) / 2.0 - 540.0).abs() < CENTRED, "{a}..{b}");

    // A title slide centres title and body together whatever the fill.
    let lead = "<!-- _class: lead -->\n\n# Opening\n\nA SUBTITLE line\n";
    let page = page_of(lead, &sizes, layout::Fill::Balanced);
    assert_eq!(
        page.items,
        page_of(lead, &sizes, layout::Fill::Top).items,
        "the fill does not apply to title slides"
    );
    let (a, _) = text_span(&page, "Opening", "Opening");
    let (_, b) = text_span(&page, "SUBTITLE", "SUBTITLE");
    assert!(((a + b) / 2.0 - 540.0).abs() < CENTRED, "{a}..{b}");
}

/// A slide whose content fills the frame starts at the top as it always did: an image
/// that takes the room left, a long list shrunk to fit, one cut at the floor scale.
#[test]
fn full_slides_start_at_the_top() {
    let id = "6f1c2a3e-0000-4000-8000-0000000000aa";
    let sizes = one_image(id, 900.0, 1600.0);
    let md = format!("## A tall photo\n\n![]({id})\n\nA CAPTION under it\n");
    let balanced = page_of(&md, &sizes, layout::Fill::Balanced);
    assert_eq!(
        balanced.items,
        page_of(&md, &sizes, layout::Fill::Top).items
    );

    let long: String = (1..=12)
        .map(|i| format!("- POINT{i} with enough words to be a real line on a slide\n"))
        .collect();
    let md = format!("## Twelve points\n\n{long}");
    let sizes = layout::NaturalSizes::new();
    let (a, _) = text_span(
        &page_of(&md, &sizes, layout::Fill::Balanced),
        "POINT1 ",
        "POINT1 ",
    );
    let (a_top, _) = text_span(
        &page_of(&md, &sizes, layout::Fill::Top),
        "POINT1 ",
        "POINT1 ",
    );
    assert!(
        (a - a_top).abs() < 25.0,
        "a full list starts at the top: {a} against {a_top}"
    );

    let many: String = (1..=40)
        .map(|i| format!("- point {i} with enough words to wrap onto a second line of the slide\n"))
        .collect();
    let md = format!("## Forty points\n\n{many}");
    assert_eq!(
        page_of(&md, &sizes, layout::Fill::Balanced).items,
        page_of(&md, &sizes, layout::Fill::Top).items
    );
}

/// Columns move as one block: both start on one line, the block centred under the
/// title. Beside a split image the body is centred in its own part of the slide.
#[test]
fn columns_and_split_slides_are_balanced_too() {
    let md = "## Compare\n\nLEFTTOP\n\n- LEFTMID\n- LEFTEND\n\n<!-- column -->\n\nRIGHTTOP\n";
    let sizes = layout::NaturalSizes::new();
    let page = page_of(md, &sizes, layout::Fill::Balanced);
    let (left, end) = text_span(&page, "LEFTTOP", "LEFTEND");
    let (right, _) = text_span(&page, "RIGHTTOP", "RIGHTTOP");
    assert!((left - right).abs() < 1.0, "columns start on one line");
    let title = title_bottom(&page);
    assert!(
        left - title < 90.0,
        "columns {left}..{end} right under the title at {title}"
    );

    let id = "6f1c2a3e-0000-4000-8000-0000000000ab";
    let sizes = one_image(id, 640.0, 480.0);
    let md = format!("## Split\n\n![bg left:40%]({id})\n\nREFLOWED text beside the picture\n");
    let page = page_of(&md, &sizes, layout::Fill::Balanced);
    let clip = page
        .items
        .iter()
        .find_map(|i| match i {
            layout::Item::Image { clip, .. } => *clip,
            _ => None,
        })
        .unwrap();
    assert_eq!(clip, [0.0, 0.0, 768.0, 1080.0], "the image keeps its half");
    let (a, _) = text_span(&page, "REFLOWED", "REFLOWED");
    let title = title_bottom(&page);
    assert!(a - title < 90.0, "{a} right under the title at {title}");
}

/// The PNG draws the balanced layout (the PDF draws the same display list), the PDF's
/// notes pages read from the top, and the HTML centres the body with the same rule.
#[test]
fn every_format_draws_the_balanced_body() {
    let md = "## Two points\n\n- FIRSTPOINT\n- LASTPOINT\n\n<!-- notes: SPEAKERNOTE -->\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    let images = Images::new();
    // The PNG: the body's ink sits in the middle of the room under the title.
    let png = pixels(
        &slide_png(
            &deck,
            &deck.slides[0],
            &images,
            Size::default(),
            &Budget::unlimited(),
        )
        .unwrap(),
    );
    let background = png.get_pixel(5, 5).0;
    let inked: Vec<u32> = (0..png.height() - 100)
        .filter(|&y| (0..png.width()).any(|x| png.get_pixel(x, y).0 != background))
        .collect();
    let (first, last) = (inked[0] as f32, *inked.last().unwrap() as f32);
    let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
    let (title, _) = text_span(&page, "Two points", "Two points");
    assert!(
        ((title + last) / 2.0 - 540.0).abs() < CENTRED,
        "PNG ink {first}..{last} with the title from {title}, centred together"
    );

    // The HTML's title where the layout centred it.
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    let title_y = page
        .items
        .iter()
        .find_map(|i| match i {
            layout::Item::Text { y, text, .. } if text.contains("Two points") => Some(*y),
            _ => None,
        })
        .unwrap();
    assert!(
        html.contains(&format!("--y:{};", svg::num(title_y))),
        "the title at {title_y}"
    );

    let notes = crate::notes_slide(&deck.slides[0], 1).unwrap();
    let bare = Deck {
        slides: Vec::new(),
        ..deck.clone()
    };
    let page = layout::page_with(
        &bare,
        &notes,
        &Default::default(),
        Size::default(),
        layout::Fill::Top,
    );
    let (a, _) = text_span(&page, "SPEAKERNOTE", "SPEAKERNOTE");
    assert!(
        a < title_bottom(&page) + 100.0,
        "notes start under their title: {a}"
    );
}

/// Page `n` (1-based) of a PDF as 1920-pixel-wide pixels (poppler's pdftoppm), or
/// `None` when pdftoppm is not installed.
fn pdf_page_pixels(pdf: &[u8], n: usize) -> Option<::image::RgbImage> {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("plinth-ppm-{}-{k}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join("deck.pdf");
    std::fs::write(&path, pdf).ok()?;
    let page = n.to_string();
    // A 720-point page at 192 dpi is 1920 pixels wide.
    let out = Command::new("pdftoppm")
        .args(["-png", "-r", "192", "-singlefile", "-f", &page, "-l", &page])
        .arg(&path)
        .arg(dir.join("page"))
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "pdftoppm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let img = ::image::open(dir.join("page.png")).unwrap().to_rgb8();
    let _ = std::fs::remove_dir_all(&dir);
    Some(img)
}

/// Images keep their pixels in the PDF whichever way they are embedded: an RGB or
/// grey PNG as its own compressed data, one with transparency decoded into colour and
/// a soft mask. Compared with the PNG export inside each image's box.
#[test]
fn pdf_images_match_the_png_export() {
    let (w, h) = (300, 200);
    let rgb = png_bytes(w, h);
    let encode = |img: ::image::DynamicImage| {
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), ::image::ImageFormat::Png)
            .unwrap();
        out
    };
    let grey = encode(::image::DynamicImage::ImageLuma8(
        ::image::GrayImage::from_fn(w, h, |x, y| {
            ::image::Luma([((x + y) * 255 / (w + h)) as u8])
        }),
    ));
    let rgba = encode(::image::DynamicImage::ImageRgba8(
        ::image::RgbaImage::from_fn(w, h, |x, y| {
            ::image::Rgba([200, (y * 255 / h) as u8, 40, (x * 255 / w) as u8])
        }),
    ));
    assert!(crate::pdf::passes_through(&rgb) && crate::pdf::passes_through(&grey));
    assert!(!crate::pdf::passes_through(&rgba));
    let ids = [
        "6f1c2a3e-0000-4000-8000-0000000000c1",
        "6f1c2a3e-0000-4000-8000-0000000000c2",
        "6f1c2a3e-0000-4000-8000-0000000000c3",
    ];
    let mut images = Images::new();
    for (id, bytes) in ids.iter().zip([rgb, grey, rgba]) {
        let mime = inspect_image(&bytes, &Budget::unlimited())
            .unwrap()
            .mime
            .to_owned();
        images.insert((*id).to_owned(), Image { mime, bytes });
    }
    let md: Vec<String> = ids.iter().map(|id| format!("![]({id})\n")).collect();
    let deck = plinth_slides::parse_markdown(&md.join("\n---\n\n")).unwrap();
    let pdf = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap();
    for (i, slide) in deck.slides.iter().enumerate() {
        let Some(page) = pdf_page_pixels(&pdf, i + 1) else {
            eprintln!("pdftoppm not installed (apt-get install poppler-utils): skipped");
            return;
        };
        let png = pixels(
            &slide_png(&deck, slide, &images, Size::default(), &Budget::unlimited()).unwrap(),
        );
        let laid = layout::page(
            &deck,
            slide,
            &image::natural_sizes(
                &deck,
                slide,
                &images,
                &image::SvgTrees::default(),
                &Budget::unlimited(),
            )
            .unwrap(),
            Size::default(),
        );
        let (x, y, bw, bh) = laid
            .items
            .iter()
            .find_map(|i| match i {
                layout::Item::Image { x, y, w, h, .. } => Some((*x, *y, *w, *h)),
                _ => None,
            })
            .unwrap();
        let mut worst = 0;
        for gy in 1..10 {
            for gx in 1..10 {
                let px = (x + bw * gx as f32 / 10.0) as u32;
                let py = (y + bh * gy as f32 / 10.0) as u32;
                let (a, b) = (png.get_pixel(px, py).0, page.get_pixel(px, py).0);
                for c in 0..3 {
                    worst = worst.max((a[c] as i32 - b[c] as i32).abs());
                }
            }
        }
        assert!(
            worst <= 16,
            "image {} differs by up to {worst} from the PNG",
            i + 1
        );
    }
}

/// Never light on light: on dark and light slides of every theme, with the author's
/// colours or the theme's, each text run drawn (table cells, code, inline code, header,
/// footer, page number) reaches 4.5:1 against what is under it in the rendered PNG.
#[test]
fn rendered_text_keeps_its_contrast_on_every_fill() {
    let body = "## Latency\n\n| Region | p99 |\n|:--|--:|\n| Frankfurt | 140 ms |\n| Virginia | 180 ms |\n| Singapore | 260 ms |\n\n\
                Look at `p99` first\n\n```rust\nfn main() { let x = \"text\"; } // note\n```\n";
    let decks = [
        "theme: default\nbackgroundColor: \"#1e1e2e\"\ncolor: \"#f5e0dc\"",
        "theme: default",
        "theme: default\nclass: invert",
        "theme: gaia",
        "theme: gaia\nclass: invert",
        "theme: uncover\nclass: invert",
        "theme: uncover\nbackgroundColor: \"#fdf6e3\"\ncolor: \"#073642\"",
    ];
    for front in decks {
        let md =
            format!("---\nmarp: true\n{front}\npaginate: true\nfooter: A footer\n---\n\n{body}");
        let deck = plinth_slides::parse_markdown(&md).unwrap();
        let slide = &deck.slides[0];
        let png = slide_png(
            &deck,
            slide,
            &Images::new(),
            Size::default(),
            &Budget::unlimited(),
        );
        let png = pixels(&png.unwrap());
        let page = layout::page(&deck, slide, &Default::default(), Size::default());
        let mut runs = 0;
        for item in &page.items {
            let layout::Item::Text {
                x, y, size, text, ..
            } = item
            else {
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            let ratio = run_contrast(&png, *x, *y, *size, text);
            assert!(
                ratio >= 4.4,
                "{front}: `{text}` at {x},{y} has {ratio:.2}:1"
            );
            runs += 1;
        }
        assert!(runs > 10, "{front}: {runs} runs");
    }
}

/// The contrast between a text run's ink and the fill under it in a PNG: the fill is
/// the commonest colour of the run's box, the ink the pixel farthest from it.
fn run_contrast(png: &::image::RgbImage, x: f32, y: f32, size: f32, text: &str) -> f32 {
    use crate::palette::{contrast, Color};
    let w = (text.chars().count() as f32 * size * 0.45).max(size * 0.5);
    let (x0, x1) = (x.max(0.0) as u32, ((x + w) as u32).min(png.width() - 1));
    let (y0, y1) = (
        (y - size * 0.7).max(0.0) as u32,
        (y as u32).min(png.height() - 1),
    );
    let mut counts = std::collections::HashMap::new();
    for py in y0..=y1 {
        for px in x0..=x1 {
            *counts.entry(png.get_pixel(px, py).0).or_insert(0usize) += 1;
        }
    }
    let fill = counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(c, _)| *c)
        .unwrap();
    let fill = Color(fill[0], fill[1], fill[2]);
    counts
        .keys()
        .map(|c| contrast(Color(c[0], c[1], c[2]), fill))
        .fold(1.0, f32::max)
}

/// Marp's inline HTML is drawn: `<sub>`/`<sup>` smaller and off the baseline, `<mark>`
/// on a highlight, `<kbd>` as code.
#[test]
fn inline_html_marks_are_drawn() {
    let deck = plinth_slides::parse_markdown(
        "## Notation\n\nH<sub>2</sub>O and x<sup>3</sup>, <mark>MARKED</mark>, <kbd>Ctrl</kbd>\n",
    )
    .unwrap();
    let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
    let run = |needle: &str| {
        page.items
            .iter()
            .find_map(|i| match i {
                layout::Item::Text { y, size, text, .. } if text.trim() == needle => {
                    Some((*y, *size))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("{needle} not drawn"))
    };
    let (base, size) = run("O and x");
    let (sub_y, sub_size) = run("2");
    let (sup_y, sup_size) = run("3");
    assert!(sub_size < size && sup_size < size);
    assert!(sub_y > base && sup_y < base, "{sub_y} {base} {sup_y}");
    let (mark_y, _) = run("MARKED");
    let fills: Vec<_> = page
        .items
        .iter()
        .filter_map(|i| match i {
            layout::Item::Rect { y, h, fill, .. } if *y < mark_y && y + h > mark_y => Some(*fill),
            _ => None,
        })
        .collect();
    let pal = layout::slide_palette(&deck, &deck.slides[0]);
    assert!(fills.contains(&pal.mark_bg) && fills.contains(&pal.inline_code_bg));
}

/// The HTML export shrinks an overfull slide by the layout engine's step, as PDF and
/// PNG do, instead of cutting its last lines.
#[test]
fn html_shrinks_an_overfull_slide_as_the_layout_does() {
    let lines: String = (1..=26).map(|i| format!("int line_{i} = {i};\n")).collect();
    let md = format!("## A long listing\n\n```c\n{lines}```\n\n---\n\n## Short\n\nOne line\n");
    let deck = plinth_slides::parse_markdown(&md).unwrap();
    let page = layout::page(&deck, &deck.slides[0], &Default::default(), Size::default());
    assert!(page.scale < 1.0);
    let html = deck_html(&deck, &Images::new(), &Budget::unlimited()).unwrap();
    // Every line of the listing is on the page, at the layout's (shrunk) size.
    let text = html_text(&html);
    assert!(text.contains("int line_1 = 1;") && text.contains("int line_26 = 26;"));
    let code_size = page
        .items
        .iter()
        .find_map(|i| match i {
            layout::Item::Text { size, text, .. } if text.contains("line_26") => Some(*size),
            _ => None,
        })
        .unwrap();
    let at = html.find("line_26").unwrap();
    let style = &html[html[..at].rfind("style=").unwrap()..at];
    assert!(
        style.contains(&format!("--s:{};", svg::num(code_size))),
        "{style}"
    );
}

/// Maths is typeset, not drawn as its TeX: in the slide's SVG each formula is an SVG
/// image (the source's `\frac` and `^` are nowhere in the text), in the PNG the display
/// formula's box holds ink in the slide's text colour (light on an `invert` slide), and
/// neither the PDF's text nor the HTML's shows the source.
#[cfg(feature = "maths")]
#[test]
fn maths_is_typeset_in_every_format() {
    let md = "---\nmarp: true\ntheme: default\nclass: invert\n---\n\n## Energy\n\n\
              When $E = mc^2$ holds\n\n$$\n\\frac{a+b}{2} \\geq \\sqrt{ab}\n$$\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    let slide = &deck.slides[0];
    let none = Images::new();
    let budget = Budget::unlimited();
    let svg = slide_svg(&deck, slide, &none, Size::default(), &budget).unwrap();
    assert!(
        !svg.contains("frac") && !svg.contains("mc^2"),
        "TeX drawn as text"
    );
    assert_eq!(svg.matches("data:image/svg+xml").count(), 2, "two formulas");

    let (prepared, images) = maths::prepare(&deck, &none);
    let pslide = &prepared.slides[0];
    let trees = image::SvgTrees::default();
    let naturals = image::natural_sizes(&prepared, pslide, &images, &trees, &budget).unwrap();
    let page = layout::page(&prepared, pslide, &naturals, Size::default());
    let boxes: Vec<(f32, f32, f32, f32, bool)> = page
        .items
        .iter()
        .filter_map(|i| match i {
            layout::Item::Image {
                x,
                y,
                w,
                h,
                asset_id,
                ..
            } if asset_id.starts_with("maths:") => {
                Some((*x, *y, *w, *h, asset_id.starts_with("maths:d:")))
            }
            _ => None,
        })
        .collect();
    assert_eq!(boxes.len(), 2, "{boxes:?}");
    let look = look::Look::of(&deck);
    let (x, y, w, h, _) = *boxes.iter().find(|b| b.4).unwrap();
    // At about the body's size: a fraction is two lines of text tall.
    assert!(h > 1.2 * look.text && h < 4.0 * look.text, "{h}");
    // Centred across the slide.
    assert!((x + w / 2.0 - 960.0).abs() < 40.0, "{x} {w}");
    let (_, iy, _, ih, _) = *boxes.iter().find(|b| !b.4).unwrap();
    assert!(ih > 0.6 * look.text && ih < 2.0 * look.text, "inline {ih}");
    assert!(iy < y, "the inline formula's line is above the display one");

    let png = pixels(&slide_png(&deck, slide, &none, Size::default(), &budget).unwrap());
    let pal = look::slide_palette(&deck, slide);
    let near = |p: &::image::Rgb<u8>, c: palette::Color| {
        (p.0[0] as i32 - c.0 as i32).abs()
            + (p.0[1] as i32 - c.1 as i32).abs()
            + (p.0[2] as i32 - c.2 as i32).abs()
            < 60
    };
    let mut ink = 0;
    for py in y as u32..(y + h) as u32 {
        for px in x as u32..(x + w) as u32 {
            if near(png.get_pixel(px, py), pal.text) {
                ink += 1;
            }
        }
    }
    assert!(
        look::luminance(pal.text) > 0.5,
        "an invert slide has light text"
    );
    assert!(ink as f32 > 0.03 * w * h, "{ink} ink pixels in {w}x{h}");

    let pdf = deck_pdf(&deck, &none, Size::default(), &budget).unwrap();
    if let Some(text) = pdftotext(&pdf) {
        assert!(text.contains("Energy") && !text.contains("frac"), "{text}");
    }
    let html = deck_html(&deck, &none, &budget).unwrap();
    assert!(!html.contains("frac") && !html.contains("mc^2"));
}

/// A formula's symbols are in the PDF's text layer (invisible text over its image), on
/// the line of the text around it: `pdftotext` reads `E = mc2` and `α + β`.
#[cfg(feature = "maths")]
#[test]
fn maths_is_in_the_pdf_text_layer() {
    let md = "# Physics\n\nWhen $E = mc^2$ holds\n\n$$\n\\alpha + \\beta \\leq \\sum_{i=1}^{n} x_i\n$$\n";
    let deck = plinth_slides::parse_markdown(md).unwrap();
    let pdf = deck_pdf(&deck, &Images::new(), Size::default(), &Budget::unlimited()).unwrap();
    let Some(text) = pdftotext(&pdf) else {
        println!("skipped: pdftotext (poppler-utils) is not installed");
        return;
    };
    assert!(text.contains("When E = mc2 holds"), "{text}");
    assert!(text.contains("α + β ≤"), "{text}");
    assert!(text.contains('∑'), "{text}");
    assert!(!text.contains("alpha") && !text.contains("mc^2"), "{text}");
}
