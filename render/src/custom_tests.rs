//! The deck's own styles (`style:`) drawn in every format: PNG pixels, the PDF's fill
//! colours, the HTML's variables, and the layout's sizes, weights and fills.

use plinth_slides::{parse_markdown, Deck};

use super::*;
use crate::fonts::Face;
use crate::layout::{Item, NaturalSizes};
use crate::look::{slide_palette, MIN_CONTRAST};
use crate::palette::contrast;
use crate::palette::Color;

const CREAM: Color = Color(0xfd, 0xf6, 0xe3);
const RED: Color = Color(0xc0, 0x39, 0x2b);

/// The issue's deck: Marp's default theme in cream with a red title.
const DECK: &str = "---
marp: true
style: |
  section { background: #fdf6e3 }
  h1 { color: #c0392b }
---

# Cream and red

Body text under a red title.
";

fn deck(md: &str) -> Deck {
    parse_markdown(md).unwrap()
}

fn near(a: [u8; 3], b: Color, by: u8) -> bool {
    a.iter()
        .zip([b.0, b.1, b.2])
        .all(|(x, y)| x.abs_diff(y) <= by)
}

#[test]
fn png_draws_the_styled_background_and_title() {
    let deck = deck(DECK);
    let png = slide_png(
        &deck,
        &deck.slides[0],
        &Images::new(),
        Size::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let img = ::image::load_from_memory(&png).unwrap().to_rgb8();
    assert!(
        near(img.get_pixel(4, 4).0, CREAM, 0),
        "{:?}",
        img.get_pixel(4, 4)
    );
    assert!(near(img.get_pixel(1900, 1070).0, CREAM, 0));
    // The title's glyphs are red (anti-aliased edges aside), and nothing else is.
    let red = img.pixels().filter(|p| near(p.0, RED, 8)).count();
    assert!(red > 2_000, "{red} red pixels");
    let (top, bottom) = img
        .enumerate_pixels()
        .filter(|(_, _, p)| near(p.0, RED, 8))
        .fold((u32::MAX, 0), |(t, b), (_, y, _)| (t.min(y), b.max(y)));
    assert!(top < bottom && bottom < 640, "red rows {top}..{bottom}");
}

#[test]
fn pdf_and_html_carry_the_styled_colours() {
    let deck = deck(DECK);
    let pdf = deck_pdf(&deck, &Images::new(), Size::default(), &Budget::unlimited()).unwrap();
    let fills = pdf_fills(&pdf);
    for want in [CREAM, RED] {
        assert!(
            fills.contains(&want),
            "{want:?} not among the PDF's fills {fills:?}"
        );
    }
    let html = deck_html(&deck, &Images::new(), &Budget::unlimited()).unwrap();
    // The layout's colours, as in the PDF: the slide's background, the title's text.
    assert!(html.contains("background: #fdf6e3;"), "background missing");
    let title = &html[html.find("<h1>").unwrap()..html.find("</h1>").unwrap()];
    assert!(title.contains("color:#c0392b"), "{title}");
    // Only plinth's own values reach the page, never the author's CSS text.
    let evil = deck_of_css("h1 { color: red; } </style><script>alert(1)</script>");
    let html = deck_html(&evil, &Images::new(), &Budget::unlimited()).unwrap();
    assert!(!html.contains("alert(1)"));
}

/// Every `r g b rg` fill colour the PDF's pages set.
fn pdf_fills(pdf: &[u8]) -> Vec<Color> {
    let doc = lopdf::Document::load_mem(pdf).unwrap();
    let mut out = Vec::new();
    for (_, page) in doc.get_pages() {
        let content = doc.get_page_content(page);
        let ops = lopdf::content::Content::decode(&content)
            .unwrap()
            .operations;
        for op in ops.iter().filter(|op| op.operator == "rg") {
            let v: Vec<f32> = op
                .operands
                .iter()
                .filter_map(|o| o.as_float().ok())
                .collect();
            if let [r, g, b] = v[..] {
                let c = |v: f32| (v * 255.0).round() as u8;
                out.push(Color(c(r), c(g), c(b)));
            }
        }
    }
    out
}

fn deck_of_css(css: &str) -> Deck {
    let indented: String = css.lines().map(|l| format!("  {l}\n")).collect();
    deck(&format!(
        "---\nmarp: true\nstyle: |\n{indented}---\n\n# Title\n\nText `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n```\nplain\n```\n"
    ))
}

fn texts(deck: &Deck) -> Vec<(String, f32, Face, Color)> {
    let page = layout::page(deck, &deck.slides[0], &NaturalSizes::new(), Size::default());
    page.items
        .into_iter()
        .filter_map(|it| match it {
            Item::Text {
                text,
                size,
                face,
                fill,
                ..
            } => Some((text, size, face, fill)),
            _ => None,
        })
        .collect()
}

#[test]
fn sizes_and_weights_follow_the_styles() {
    // Marp's 64 px title is 96 on plinth's canvas; the section's 1.5em is 1.5 × default's
    // 43.5; a paragraph at 0.5em of that.
    let deck = deck_of_css("section { font-size: 150% }\nh1 { font-size: 64px; font-weight: normal }\np { font-size: 0.5em; font-weight: 700 }");
    let all = texts(&deck);
    let title = all.iter().find(|t| t.0.contains("Title")).unwrap();
    assert_eq!((title.1, title.2), (96.0, Face::Regular), "{title:?}");
    let text = all.iter().find(|t| t.0.contains("Text")).unwrap();
    assert!((text.1 - 43.5 * 1.5 * 0.5).abs() < 0.01, "{text:?}");
    assert_eq!(text.2, Face::Bold);
}

#[test]
fn fills_derive_from_the_styled_colours_and_author_colours_stay() {
    // A dark styled section with light text: code and table fills follow it, so no
    // light fill sits under light text.
    let deck =
        deck_of_css("section { background-color: #1e1e2e; color: #f5e0dc }\nh1 { color: #333333 }");
    let pal = slide_palette(&deck, &deck.slides[0]);
    assert_eq!(pal.background, Color(0x1e, 0x1e, 0x2e));
    for (what, text, fill) in [
        ("code", pal.code_text, pal.code_bg),
        ("inline code", pal.inline_code_text, pal.inline_code_bg),
        ("table header", pal.head_text, pal.head_fill),
        ("stripe", pal.cell_text, pal.stripe),
    ] {
        assert!(
            contrast(text, fill) >= MIN_CONTRAST,
            "{what}: {text:?} on {fill:?}"
        );
    }
    // The author's dark title on the dark slide is drawn as written (and warned).
    assert_eq!(pal.heading(1), Color(0x33, 0x33, 0x33));
    // A fill set without its text gets readable text; set text is kept.
    let deck = deck_of_css("th { background: navy }\ntd { background: #fdf6e3; color: #c0392b }\npre { background: black }\ncode { color: #c0392b }");
    let pal = slide_palette(&deck, &deck.slides[0]);
    assert_eq!(pal.head_own, Some(Color(0, 0, 128)));
    assert!(contrast(pal.head_text, pal.head_fill) >= MIN_CONTRAST);
    assert_eq!((pal.cells_own, pal.cell_text), (Some(CREAM), RED));
    // `code` is code blocks' too (as in CSS): the author's red on the black box.
    assert!(pal.dark);
    assert_eq!((pal.inline_code_text, pal.code_text), (RED, RED));
    let deck = deck_of_css("pre { background: black }");
    let pal = slide_palette(&deck, &deck.slides[0]);
    assert!(pal.dark && contrast(pal.code_text, pal.code_bg) >= MIN_CONTRAST);
    let deck = deck_of_css("td { background: #fdf6e3; color: #c0392b }");
    let cell = texts(&deck).into_iter().find(|t| t.0 == "1").unwrap();
    assert_eq!(cell.3, RED);
}

#[test]
fn class_rules_pick_their_slides_and_set_colours_win() {
    let md = "---\nmarp: true\nstyle: |\n  section { background: #fdf6e3 }\n  section.invert { background: #1e1e2e }\n  section.invert h1 { color: #f39c12 }\n---\n\n# One\n\n---\n\n<!-- _class: invert -->\n# Two\n\n---\n\n<!-- _backgroundColor: white -->\n# Three\n";
    let deck = deck(md);
    let pals: Vec<_> = deck
        .slides
        .iter()
        .map(|s| slide_palette(&deck, s))
        .collect();
    assert_eq!(pals[0].background, CREAM);
    assert_eq!(pals[1].background, Color(0x1e, 0x1e, 0x2e));
    assert_eq!(pals[1].heading(1), Color(0xf3, 0x9c, 0x12));
    assert_ne!(pals[0].heading(1), Color(0xf3, 0x9c, 0x12));
    assert_eq!(
        pals[2].background,
        Color(255, 255, 255),
        "a set colour wins"
    );
}
