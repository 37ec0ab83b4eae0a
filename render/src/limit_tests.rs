//! Output size, render cost and budget limits (security review N-H2, N-H3).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plinth_slides::{Block, Deck, Layout, Slide};

use super::*;

/// The reviewer's SVG: a blurred 4000×4000 square, then `levels` of groups that blur
/// `fan` copies of the level below (usvg expands each `<use>`).
fn blur_svg(levels: usize, fan: usize) -> Vec<u8> {
    let mut s = String::from(
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="4000" height="4000"><defs><filter id="f" x="-1" y="-1" width="3" height="3"><feGaussianBlur stdDeviation="50"/></filter><g id="a0" filter="url(#f)"><rect width="4000" height="4000" fill="red"/></g>"#,
    );
    for i in 1..=levels {
        s.push_str(&format!(r#"<g id="a{i}" filter="url(#f)">"#));
        for _ in 0..fan {
            s.push_str(&format!(r##"<use xlink:href="#a{}"/>"##, i - 1));
        }
        s.push_str("</g>");
    }
    s.push_str(&format!(r##"</defs><use xlink:href="#a{levels}"/></svg>"##));
    s.into_bytes()
}

fn svg_image(bytes: Vec<u8>) -> Image {
    Image {
        mime: "image/svg+xml".into(),
        bytes,
    }
}

fn image_block(id: &str) -> Block {
    Block::Image {
        asset_id: id.into(),
        alt: None,
        width: None,
        height: None,
    }
}

fn slide_of(blocks: Vec<Block>) -> Slide {
    Slide {
        layout: Layout::Content,
        title: Some("Images".into()),
        blocks,
        ..Slide::default()
    }
}

fn deck_of(slides: Vec<Slide>) -> Deck {
    Deck {
        slides,
        ..Deck::default()
    }
}

const ID: &str = "00000000-0000-4000-8000-000000000001";

#[test]
fn html_emits_each_image_once() {
    // A valid 2 MiB SVG (the reviewer's), used 40 times on one slide.
    let mut svg =
        b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><!-- ".to_vec();
    svg.extend(std::iter::repeat_n(b'x', 2 << 20));
    svg.extend(b" --><rect width=\"10\" height=\"10\"/></svg>");
    let images = Images::from([(ID.to_owned(), svg_image(svg))]);
    let deck = deck_of(vec![slide_of((0..40).map(|_| image_block(ID)).collect())]);
    let bound = html_size_bound(&deck, &images, Options::default());
    let html = deck_html(&deck, &images, &Budget::unlimited()).unwrap();
    let len = html.len() as u64;
    // 2 MiB as base64 is 2.67 MiB; the page is that and its markup, not 40 times it.
    assert!((2_790_000..3_000_000).contains(&len), "{len} bytes");
    assert!(
        bound >= len && bound < len + 64 * 1024,
        "bound {bound}, page {len}"
    );
    assert_eq!(html.matches("data:image/svg+xml;base64,").count(), 1);
    // Each use the layout draws (what does not fit at the smallest step is cut, as in
    // the PDF) refers to that one copy.
    let trees = crate::image::SvgTrees::default();
    let slide = &deck.slides[0];
    let naturals =
        crate::image::natural_sizes(&deck, slide, &images, &trees, &Budget::unlimited()).unwrap();
    let page = crate::layout::page(&deck, slide, &naturals, crate::Size::default());
    let drawn = page
        .items
        .iter()
        .filter(|i| matches!(i, crate::layout::Item::Image { .. }))
        .count();
    assert!(drawn >= 8, "{drawn}");
    assert_eq!(html.matches("<use href=\"#pic-0\"/>").count(), drawn);
}

/// A 33×17 PNG.
fn small_png() -> Vec<u8> {
    let img = ::image::RgbImage::from_fn(33, 17, |x, _| ::image::Rgb([x as u8, 9, 9]));
    let mut out = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut out),
        ::image::ImageFormat::Png,
    )
    .unwrap();
    out
}

#[test]
fn html_size_bound_is_never_below_the_page() {
    let code = "fn main() {\n\tlet s = \"<&>\"; // 'q'\n}\n".repeat(20);
    let mut deck = deck_of(vec![slide_of(vec![
        Block::Code {
            code: code.clone(),
            language: Some("rust".into()),
        },
        Block::Code {
            code,
            language: None,
        },
        Block::Text {
            text: "**b** _i_ `c` [l](https://example.com/?a=1&b=\"2\") ![logo](asset:x) <&>".into(),
        },
        image_block(ID),
    ])]);
    deck.logo = Some(ID.into());
    let png = small_png();
    let images = Images::from([(
        ID.to_owned(),
        Image {
            mime: "image/png".into(),
            bytes: png,
        },
    )]);
    for notes in [false, true] {
        let options = Options {
            notes,
            ..Options::default()
        };
        let html = deck_html_with(&deck, &images, options, &Budget::unlimited()).unwrap();
        let bound = html_size_bound(&deck, &images, options);
        assert!(bound >= html.len() as u64, "bound {bound} < {}", html.len());
        assert_eq!(html.matches("data:image/png;base64,").count(), 1);
    }
}

#[test]
fn html_over_the_limit_is_refused_before_it_is_built() {
    // Five distinct 10 MiB images (a small PNG and 10 MiB after its end, which is read
    // for its size only): 67 MiB of base64, over MAX_HTML_BYTES (64 MiB).
    let images: Images = (0..5)
        .map(|i| {
            let id = format!("00000000-0000-4000-8000-00000000000{i}");
            let mut bytes = small_png();
            bytes.resize(bytes.len() + (10 << 20), 0);
            let mime = "image/png".to_owned();
            (id, Image { mime, bytes })
        })
        .collect();
    let deck = deck_of(vec![slide_of(
        images.keys().map(|id| image_block(id)).collect(),
    )]);
    let started = Instant::now();
    let e = deck_html(&deck, &images, &Budget::unlimited()).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    match &e {
        RenderError::TooLarge { size, limit, .. } => {
            assert_eq!(*limit, MAX_HTML_BYTES);
            assert!(*size > 5 * (40 << 20) / 3, "{size}");
        }
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("MAX_HTML_BYTES") && text.contains(&MAX_HTML_BYTES.to_string()),
        "{text}"
    );

    // The limit applies to the bound, before anything is encoded.
    let small = deck_of(vec![slide_of(vec![image_block(ID)])]);
    let mut bytes = small_png();
    bytes.resize(bytes.len() + 300_000, 0);
    let mime = "image/png".to_owned();
    let one = Images::from([(ID.to_owned(), Image { mime, bytes })]);
    let e = html::render_within(
        &small,
        &one,
        Options::default(),
        &Budget::unlimited(),
        400_000,
    );
    assert!(
        matches!(e, Err(RenderError::TooLarge { limit: 400_000, .. })),
        "{e:?}"
    );
}

#[test]
fn blur_bombs_are_refused_at_upload_quickly() {
    for levels in [1, 2] {
        let started = Instant::now();
        let e = inspect_image(&blur_svg(levels, 10), &Budget::unlimited()).unwrap_err();
        let took = started.elapsed();
        eprintln!("blur_svg({levels}): {e} ({took:?})");
        assert!(took < Duration::from_millis(900), "{took:?}");
        assert!(matches!(e, RenderError::TooCostly { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("MAX_SVG_COST") && text.contains(&MAX_SVG_COST.to_string()),
            "{text}"
        );
    }
}

#[test]
fn ordinary_svgs_with_small_blurs_and_shadows_pass() {
    let svg = br##"<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600" viewBox="0 0 800 600">
      <defs>
        <filter id="shadow" x="-10%" y="-10%" width="130%" height="130%"><feDropShadow dx="4" dy="4" stdDeviation="6" flood-opacity="0.4"/></filter>
        <filter id="soft"><feGaussianBlur stdDeviation="3"/></filter>
        <linearGradient id="g"><stop offset="0" stop-color="#36c"/><stop offset="1" stop-color="#9cf"/></linearGradient>
      </defs>
      <rect width="800" height="600" fill="url(#g)"/>
      <g filter="url(#shadow)"><rect x="100" y="100" width="300" height="200" rx="16" fill="#fff"/></g>
      <g filter="url(#soft)" opacity="0.8"><circle cx="600" cy="400" r="120" fill="#f93"/></g>
      <text x="120" y="220" font-size="40">Chart</text>
    </svg>"##;
    let info = inspect_image(svg, &Budget::unlimited()).unwrap();
    assert_eq!((info.width, info.height), (800, 600));
}

#[test]
fn use_fan_out_and_deep_nesting_are_refused_with_the_limit() {
    // 10^6 copies of a plain rectangle: no filter, but usvg would build them all.
    let mut s = String::from(
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100"><defs><rect id="a0" width="1" height="1"/>"#,
    );
    for i in 1..=6 {
        s.push_str(&format!(r#"<g id="a{i}">"#));
        for _ in 0..10 {
            s.push_str(&format!(r##"<use xlink:href="#a{}"/>"##, i - 1));
        }
        s.push_str("</g>");
    }
    s.push_str(r##"</defs><use xlink:href="#a6"/></svg>"##);
    let started = Instant::now();
    let e = inspect_image(s.as_bytes(), &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < Duration::from_millis(900));
    assert!(
        e.contains(&MAX_SVG_ELEMENTS.to_string()) && e.contains("<use>"),
        "{e}"
    );

    let deep = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">{}<rect width="1" height="1"/>{}</svg>"#,
        "<g>".repeat(50_000),
        "</g>".repeat(50_000)
    );
    let e = inspect_image(deep.as_bytes(), &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&MAX_SVG_DEPTH.to_string()) && e.contains("levels deep"),
        "{e}"
    );

    // A `<use>` chain nests as deep as the XML would.
    let mut chain = String::from(
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" height="10"><defs><rect id="u0" width="1" height="1"/>"#,
    );
    for i in 1..=300 {
        chain.push_str(&format!(
            r##"<g id="u{i}"><use xlink:href="#u{}"/></g>"##,
            i - 1
        ));
    }
    chain.push_str(r##"</defs><use xlink:href="#u300"/></svg>"##);
    let e = inspect_image(chain.as_bytes(), &Budget::unlimited())
        .unwrap_err()
        .to_string();
    assert!(e.contains("levels deep"), "{e}");
}

#[test]
fn raster_bombs_name_the_limit() {
    // A 50,000 × 50,000 PNG of a few dozen bytes: refused from its header.
    let started = Instant::now();
    let e = inspect_image(
        &tests::png_with_header(50_000, 50_000),
        &Budget::unlimited(),
    )
    .unwrap_err()
    .to_string();
    assert!(started.elapsed() < Duration::from_millis(100));
    assert!(
        e.contains("50000x50000") && e.contains("MAX_IMAGE_PIXELS"),
        "{e}"
    );
}

#[test]
fn render_refuses_a_costly_svg_that_skipped_validation() {
    let images = Images::from([(ID.to_owned(), svg_image(blur_svg(1, 10)))]);
    let deck = deck_of(vec![slide_of(vec![image_block(ID)])]);
    let started = Instant::now();
    let e = slide_png(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, RenderError::TooCostly { what, .. } if what.contains(ID)),
        "{e:?}"
    );
    let e = deck_pdf(&deck, &images, Size::default(), &Budget::unlimited()).unwrap_err();
    assert!(matches!(e, RenderError::TooCostly { .. }), "{e:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // Over the structure limits: refused by name, not drawn as nothing.
    let deep = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">{}{}</svg>"#,
        "<g>".repeat(500),
        "</g>".repeat(500)
    );
    let images = Images::from([(ID.to_owned(), svg_image(deep.into_bytes()))]);
    let e = slide_png(
        &deck,
        &deck.slides[0],
        &images,
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("levels deep"), "{e}");
}

/// An SVG image under the cost limit whose drawing still takes a while: a blurred
/// square (about 30–60 ms per draw at slide size).
fn slow_svg(n: usize) -> Vec<u8> {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="900"><!-- {n} --><defs><filter id="f"><feGaussianBlur stdDeviation="20"/></filter></defs><g filter="url(#f)"><rect x="100" y="100" width="1400" height="700" fill="teal"/></g></svg>"#
    )
    .into_bytes()
}

fn cancel_after(budget: &Budget, after: Duration) -> std::thread::JoinHandle<()> {
    let flag = budget.flag();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        flag.store(true, Ordering::Relaxed);
    })
}

/// An SVG under the cost limit that embeds a 2000×2000 PNG: resvg decodes it at every
/// draw, however small the image is drawn (tens of milliseconds).
fn decoding_svg() -> Vec<u8> {
    let img = ::image::RgbImage::from_fn(2000, 2000, |x, y| {
        ::image::Rgb([(x / 12) as u8, (y / 12) as u8, 100])
    });
    let mut png = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut png),
        ::image::ImageFormat::Png,
    )
    .unwrap();
    let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, png);
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="300" height="300"><image width="300" height="300" xlink:href="data:image/png;base64,{data}"/></svg>"#
    )
    .into_bytes()
}

#[test]
fn a_cancelled_png_stops_within_a_second() {
    let images = Images::from([(ID.to_owned(), svg_image(decoding_svg()))]);
    // Forty draws of the image: seconds of work on one slide.
    let deck = deck_of(vec![slide_of(vec![Block::Quote {
        blocks: (0..40).map(|_| image_block(ID)).collect(),
    }])]);
    let budget = Budget::new(Arc::new(AtomicBool::new(false)), None);
    let started = Instant::now();
    let canceller = cancel_after(&budget, Duration::from_millis(300));
    let r = slide_png(&deck, &deck.slides[0], &images, Size::default(), &budget);
    let elapsed = started.elapsed();
    canceller.join().unwrap();
    assert!(
        matches!(r, Err(RenderError::Cancelled)),
        "{:?}",
        r.map(|p| p.len())
    );
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[test]
fn a_cancelled_pdf_stops_within_a_second() {
    // Forty distinct images, each rasterised once: seconds of work.
    let mut images = Images::new();
    let mut slides = Vec::new();
    for i in 0..40 {
        let id = format!("00000000-0000-4000-8000-{i:012}");
        images.insert(id.clone(), svg_image(slow_svg(i)));
        slides.push(slide_of(vec![image_block(&id)]));
    }
    let deck = deck_of(slides);
    let budget = Budget::unlimited();
    let started = Instant::now();
    let canceller = cancel_after(&budget, Duration::from_millis(300));
    let r = deck_pdf(&deck, &images, Size::default(), &budget);
    let elapsed = started.elapsed();
    canceller.join().unwrap();
    assert!(
        matches!(r, Err(RenderError::Cancelled)),
        "{:?}",
        r.map(|p| p.len())
    );
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");

    // A deadline stops it the same way, naming the limit.
    let budget = Budget::new(
        Arc::new(AtomicBool::new(false)),
        Some(Instant::now() + Duration::from_millis(300)),
    );
    let started = Instant::now();
    let e = deck_pdf(&deck, &images, Size::default(), &budget).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(matches!(e, RenderError::TimedOut { .. }), "{e:?}");
    assert!(e.to_string().contains("time limit of 0.3 s"), "{e}");
}

#[test]
fn a_slide_limit_stops_one_slow_slide() {
    let images = Images::from([(ID.to_owned(), svg_image(decoding_svg()))]);
    let deck = deck_of(vec![slide_of((0..40).map(|_| image_block(ID)).collect())]);
    let budget = Budget::unlimited().per_slide(Duration::from_millis(200));
    let e = slide_png(&deck, &deck.slides[0], &images, Size::default(), &budget).unwrap_err();
    assert!(
        e.to_string().contains("one slide went past its time limit"),
        "{e}"
    );
}

/// Cost units against resvg's time for a range of SVGs (run with --ignored
/// --nocapture; the figures are in docs/slides.md).
#[test]
#[ignore]
fn svg_cost_calibration() {
    use resvg::{tiny_skia, usvg};
    let wrap = |w: u32, h: u32, body: &str| {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{w}" height="{h}">{body}</svg>"#
        )
    };
    let full = r#"<rect width="1920" height="1080" fill="teal"/>"#;
    let repeat = |n: usize, s: &str| s.repeat(n);
    let png = {
        let img =
            ::image::RgbImage::from_fn(2000, 2000, |x, y| ::image::Rgb([x as u8, y as u8, 7]));
        let mut out = Vec::new();
        img.write_to(
            &mut std::io::Cursor::new(&mut out),
            ::image::ImageFormat::Png,
        )
        .unwrap();
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, out)
    };
    let cases: Vec<(&str, String)> = vec![
        ("20 full rects", wrap(1920, 1080, &repeat(20, full))),
        (
            "5000 small rects",
            wrap(
                1920,
                1080,
                &repeat(
                    5000,
                    r#"<rect x="10" y="10" width="200" height="200" fill="red"/>"#,
                ),
            ),
        ),
        (
            "20000 paths of 20 points",
            wrap(
                1920,
                1080,
                &repeat(
                    20000,
                    r#"<path d="M1 1 L50 9 L20 80 L90 5 L3 40 L60 60 L7 7 L80 20 L30 30 L10 90 L1 1 L50 9 L20 80 L90 5 L3 40 L60 60 L7 7 L80 20 L30 30 Z"/>"#,
                ),
            ),
        ),
        (
            "20 gradients",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><linearGradient id="g"><stop offset="0" stop-color="red"/><stop offset="1" stop-color="blue"/></linearGradient></defs>{}"##,
                    repeat(20, r##"<rect width="1920" height="1080" fill="url(#g)"/>"##)
                ),
            ),
        ),
        (
            "20 opacity groups",
            wrap(
                1920,
                1080,
                &repeat(20, &format!(r#"<g opacity="0.5">{full}</g>"#)),
            ),
        ),
        (
            "10 clip paths",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><clipPath id="c"><circle cx="960" cy="540" r="500"/></clipPath></defs>{}"##,
                    repeat(10, &format!(r##"<g clip-path="url(#c)">{full}</g>"##))
                ),
            ),
        ),
        (
            "10 masks",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><mask id="m"><circle cx="960" cy="540" r="500" fill="white"/></mask></defs>{}"##,
                    repeat(10, &format!(r##"<g mask="url(#m)">{full}</g>"##))
                ),
            ),
        ),
        (
            "5 box blurs",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><filter id="f"><feGaussianBlur stdDeviation="30"/></filter></defs>{}"##,
                    repeat(5, &format!(r##"<g filter="url(#f)">{full}</g>"##))
                ),
            ),
        ),
        (
            "5 small blurs",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><filter id="f"><feGaussianBlur stdDeviation="1"/></filter></defs>{}"##,
                    repeat(5, &format!(r##"<g filter="url(#f)">{full}</g>"##))
                ),
            ),
        ),
        (
            "3 drop shadows",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><filter id="f"><feDropShadow dx="5" dy="5" stdDeviation="8"/></filter></defs>{}"##,
                    repeat(3, &format!(r##"<g filter="url(#f)">{full}</g>"##))
                ),
            ),
        ),
        (
            "morphology r=4",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><filter id="f"><feMorphology radius="4"/></filter></defs><g filter="url(#f)">{full}</g>"##
                ),
            ),
        ),
        (
            "turbulence 4 octaves",
            wrap(
                1920,
                1080,
                r##"<defs><filter id="f"><feTurbulence baseFrequency="0.01" numOctaves="4"/></filter></defs><g filter="url(#f)"><rect width="1920" height="1080"/></g>"##,
            ),
        ),
        (
            "convolve 5x5",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><filter id="f"><feConvolveMatrix order="5" kernelMatrix="{}"/></filter></defs><g filter="url(#f)">{full}</g>"##,
                    repeat(25, "1 ")
                ),
            ),
        ),
        (
            "lighting",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><filter id="f"><feDiffuseLighting><feDistantLight azimuth="45" elevation="45"/></feDiffuseLighting></filter></defs><g filter="url(#f)">{full}</g>"##
                ),
            ),
        ),
        (
            "5 patterns",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><pattern id="p" width="40" height="40" patternUnits="userSpaceOnUse"><circle cx="20" cy="20" r="15" fill="red"/></pattern></defs>{}"##,
                    repeat(5, r##"<rect width="1920" height="1080" fill="url(#p)"/>"##)
                ),
            ),
        ),
        (
            "4 png 2000x2000 uses",
            wrap(
                1920,
                1080,
                &format!(
                    r##"<defs><image id="i" width="1920" height="1080" xlink:href="data:image/png;base64,{png}"/></defs>{}"##,
                    repeat(4, r##"<use xlink:href="#i"/>"##)
                ),
            ),
        ),
        (
            "blur_svg(1) fan 3",
            String::from_utf8(blur_svg(1, 3)).unwrap(),
        ),
    ];
    for (name, svg) in cases {
        let tree = usvg::Tree::from_str(&svg, &image::usvg_options(None)).unwrap();
        let (ts, w, h) = cost::fit(tree.size(), 1920, 1080);
        let units = cost::svg_cost(&tree, ts, w, h);
        let mut pixmap = tiny_skia::Pixmap::new(w, h).unwrap();
        let started = Instant::now();
        for _ in 0..2 {
            resvg::render(&tree, ts, &mut pixmap.as_mut());
        }
        let ns = started.elapsed().as_nanos() as f64 / 2.0;
        eprintln!(
            "{name:28} {:>12} units {:>9.1} ms {:>6.2} ns/unit",
            units,
            ns / 1e6,
            ns / units as f64
        );
    }
}
