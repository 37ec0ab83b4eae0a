use super::directives::comment_body;
use super::html::{html_text, wrapper_tags};
use super::split::thematic_break;
use super::*;
use crate::*;

const SAMPLE: &str = "---\ntitle: Demo\ntheme: dark\n---\n\n<!-- layout: title -->\n# Hello\n\nA *small* **deck**\n\n<!-- notes: say hi -->\n\n---\n\n## List\n\n- one\n- two\n  - nested\n1. ignored? no\n\n```rust\nlet x = 1;\n---\n```\n\n---\n<!-- hidden -->\n## Secret\n\n![logo](asset:0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)\n";

#[test]
fn parses_slides_notes_and_directives() {
    let deck = parse_markdown(SAMPLE).unwrap();
    assert_eq!(deck.title.as_deref(), Some("Demo"));
    assert_eq!(deck.theme, Theme::Dark);
    assert_eq!(deck.slides.len(), 3, "{deck:#?}");
    let s = &deck.slides[0];
    assert_eq!(s.layout, Layout::Title);
    assert_eq!(s.title.as_deref(), Some("Hello"));
    assert_eq!(s.notes.as_deref(), Some("say hi"));
    assert_eq!(
        s.blocks,
        vec![Block::Text {
            text: "A *small* **deck**".into()
        }]
    );
    let s = &deck.slides[1];
    assert_eq!(
        s.blocks[0],
        Block::Bullets {
            items: vec![
                "one".into(),
                ListItem {
                    text: "two".into(),
                    checked: None,
                    blocks: Vec::new(),
                    list: Some(List {
                        items: vec!["nested".into()],
                        ordered: false,
                        start: None
                    })
                }
            ],
            ordered: false,
            start: None
        }
    );
    assert!(matches!(&s.blocks[2], Block::Code { code, .. } if code == "let x = 1;\n---"));
    let s = &deck.slides[2];
    assert!(s.hidden);
    assert!(matches!(&s.blocks[0], Block::Image { alt: Some(a), .. } if a == "logo"));
    assert_eq!(deck.asset_ids().len(), 1);
}

#[test]
fn rejects_what_it_cannot_show() {
    assert!(parse_markdown("# a\n```\nopen")
        .unwrap_err()
        .0
        .contains("never closed"));
    assert!(parse_markdown("![x](https://example.com/a.png)")
        .unwrap_err()
        .0
        .contains("asset:"));
    assert!(parse_markdown("[x](javascript:alert(1))")
        .unwrap_err()
        .0
        .contains("line 1: link"));
    assert!(
        parse_markdown("# t\n\n- a\n  - b\n\n  ```\n  code\n  ```\n")
            .unwrap_err()
            .0
            .contains("line 6: a code block after a nested list")
    );
    assert!(parse_markdown("<p>x</p>").unwrap_err().0.contains("HTML"));
    // Nothing on any slide is a blank deck, as Marp draws it, with a warning.
    let (blank, warnings) = parse_markdown_report("   \n---\n", &ParseOptions::default()).unwrap();
    assert!(blank
        .slides
        .iter()
        .all(|s| s.title.is_none() && s.blocks.is_empty()));
    assert!(warnings.concat().contains("blank"), "{warnings:?}");
    assert!(parse_markdown("<!-- layout: wide -->\n# x").is_err());
}

#[test]
fn m6_comment_markers_never_overlap() {
    for src in [
        "# t\n\n<!-->",
        "# t\n\nsome <!--> x",
        "# t\n<!--->",
        "# t\n<!--",
    ] {
        let _ = parse_markdown(src);
    }
    let deck = parse_markdown("# t\n\n<!-->\n\n<!-- notes: n -->").unwrap();
    assert_eq!(deck.slides[0].notes.as_deref(), Some("n"));
    assert_eq!(comment_body("<!---->"), Some(""));
    assert_eq!(comment_body("<!-- a"), None);
}

fn one(md: &str) -> Vec<Block> {
    parse_markdown(md).unwrap().slides.remove(0).blocks
}

fn item(text: &str, list: Option<List>) -> ListItem {
    ListItem {
        text: text.into(),
        checked: None,
        blocks: Vec::new(),
        list,
    }
}

#[test]
fn lists_nest_three_levels_mixed() {
    let blocks = one("# t\n\n- a\n  1. b\n     - c\n       - [x] d\n  2. e\n- f\n");
    let d = List {
        items: vec![ListItem {
            text: "d".into(),
            checked: Some(true),
            blocks: Vec::new(),
            list: None,
        }],
        ordered: false,
        start: None,
    };
    let b = item(
        "b",
        Some(List {
            items: vec![item("c", Some(d))],
            ordered: false,
            start: None,
        }),
    );
    let expected = Block::Bullets {
        items: vec![
            item(
                "a",
                Some(List {
                    items: vec![b, item("e", None)],
                    ordered: true,
                    start: None,
                }),
            ),
            item("f", None),
        ],
        ordered: false,
        start: None,
    };
    assert_eq!(blocks, vec![expected]);
    // Loose items keep their paragraphs; ordered lists keep their start.
    let blocks = one("# t\n\n3. one\n\n   more\n\n4. two\n");
    assert_eq!(
        blocks,
        vec![Block::Bullets {
            items: vec![item("one\nmore", None), item("two", None)],
            ordered: true,
            start: Some(3)
        }]
    );
    // Task lists.
    let blocks = one("# t\n\n- [ ] open\n- [x] done\n");
    let Block::Bullets { items, .. } = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert_eq!(items[0].checked, Some(false));
    assert_eq!(items[1].checked, Some(true));
}

#[test]
fn quotes_tables_rules_and_inline_marks() {
    let blocks = one("# t\n\n> quoted **bold**\n>\n> - x\n>\n> > deeper\n\n***\n");
    assert_eq!(
        blocks,
        vec![
            Block::Quote {
                blocks: vec![
                    Block::Text {
                        text: "quoted **bold**".into()
                    },
                    Block::Bullets {
                        items: vec!["x".into()],
                        ordered: false,
                        start: None
                    },
                    Block::Quote {
                        blocks: vec![Block::Text {
                            text: "deeper".into()
                        }]
                    }
                ]
            },
            Block::Rule
        ]
    );
    let blocks = one(
        "# t\n\n| Format | 20 slides | Per *slide* |\n|:--|--:|:-:|\n| PDF | 0.06 s | `3 ms` |\n| PNG | ~~0.58 s~~ | 29 ms |\n",
    );
    assert_eq!(
        blocks,
        vec![Block::Table {
            align: vec![Align::Left, Align::Right, Align::Center],
            header: vec!["Format".into(), "20 slides".into(), "Per *slide*".into()],
            rows: vec![
                vec!["PDF".into(), "0.06 s".into(), "`3 ms`".into()],
                vec!["PNG".into(), "~~0.58 s~~".into(), "29 ms".into()],
            ],
        }]
    );
    let blocks = one(
        "# t\n\nSee [the *docs*](https://example.com/a_(b)) or <https://x.org>, ~~old~~ 2*3 [x]\n",
    );
    let Block::Text { text } = &blocks[0] else {
        panic!()
    };
    let spans = crate::spans(text);
    let linked: Vec<_> = spans
        .iter()
        .filter_map(|s| s.link.as_deref().map(|l| (s.text.as_str(), l, s.italic)))
        .collect();
    assert_eq!(
        linked,
        vec![
            ("the ", "https://example.com/a_%28b%29", false),
            ("docs", "https://example.com/a_%28b%29", true),
            ("https://x.org", "https://x.org", false)
        ]
    );
    assert!(spans.iter().any(|s| s.strike && s.text == "old"));
    let blocks = one("# t\n\nWrite to <team@example.com>.\n");
    let Block::Text { text: mail } = &blocks[0] else {
        panic!()
    };
    assert!(crate::spans(mail)
        .iter()
        .any(|s| s.link.as_deref() == Some("mailto:team@example.com")));
    assert_eq!(
        crate::plain(text),
        "See the docs or https://x.org, old 2*3 [x]"
    );
}

#[test]
fn list_items_hold_blocks() {
    let blocks = one(
        "# t\n\n1. Install:\n   ```bash\n   cargo install plinth\n   ```\n   then run it\n2. Quote:\n   > wise\n",
    );
    let Block::Bullets { items, .. } = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert_eq!(items[0].text, "Install:");
    assert_eq!(
        items[0].blocks,
        vec![
            Block::Code {
                language: Some("bash".into()),
                code: "cargo install plinth".into()
            },
            Block::Text {
                text: "then run it".into()
            }
        ]
    );
    assert!(matches!(&items[1].blocks[0], Block::Quote { .. }));
    // Blocks count towards the slide's limit and the nesting bound.
    let deep = format!("# t\n\n{}x\n", "- > ".repeat(5));
    assert!(parse_markdown(&deep)
        .unwrap_err()
        .0
        .contains("nest at most"));
}

#[test]
fn ragged_table_rows_are_evened_out() {
    let blocks = one("# t\n\n| a | b |\n|--|--|\n| 1 |\n| 1 | 2 | 3 |\n");
    assert_eq!(
        blocks,
        vec![Block::Table {
            align: vec![],
            header: vec!["a".into(), "b".into()],
            rows: vec![vec!["1".into(), "".into()], vec!["1".into(), "2".into()]],
        }]
    );
}

#[test]
fn headings_keep_their_level() {
    let blocks = one("# Title\n\n## Two\n\n### Three\n\n###### Six\n");
    let levels: Vec<_> = blocks
        .iter()
        .map(|b| match b {
            Block::Heading { level, .. } => *level,
            _ => None,
        })
        .collect();
    assert_eq!(levels, vec![Some(2), Some(3), Some(6)]);
}

#[test]
fn images_inline_and_as_blocks() {
    let id = "0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10";
    let blocks = one(&format!(
        "# t\n\n![a]({id}) ![b](asset:{id})\n\nLogo ![c]({id}) here\n\n- ![d](asset:{id}) item\n"
    ));
    assert!(matches!(&blocks[0], Block::Image { alt: Some(a), .. } if a == "a"));
    assert!(matches!(&blocks[1], Block::Image { alt: Some(a), .. } if a == "b"));
    let Block::Text { text } = &blocks[2] else {
        panic!("{blocks:?}")
    };
    let img: Vec<_> = crate::spans(text)
        .into_iter()
        .filter(|s| s.image.is_some())
        .collect();
    assert_eq!(img.len(), 1);
    assert_eq!(img[0].image.as_deref(), Some(id));
    assert_eq!(img[0].text, "c");
    let deck = parse_markdown(&format!("# t\n\n- ![d](asset:{id}) item\n")).unwrap();
    assert_eq!(deck.asset_ids(), vec![id.to_owned()]);
    // An item that is only an image holds it as a block, sized as written.
    let blocks = one(&format!("# t\n\n- ![w:200](asset:{id})\n- text\n"));
    let Block::Bullets { items, .. } = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert!(matches!(
        &items[0].blocks[..],
        [Block::Image {
            width: Some(300),
            ..
        }]
    ));
    assert_eq!(items[0].text, "");
    // File names resolve only through the caller's resolver.
    assert!(parse_markdown("![](chart.png)").is_err());
    let resolve = |name: &str| (name == "chart.png").then(|| id.to_owned());
    let opts = ParseOptions {
        resolve_image: Some(&resolve),
        ..Default::default()
    };
    let deck = parse_markdown_with("![](chart.png)", &opts).unwrap();
    assert_eq!(deck.asset_ids(), vec![id.to_owned()]);
}

#[test]
fn refused_images_are_named_in_the_callers_words() {
    let err = |src: &str, opts: &ParseOptions| parse_markdown_with(src, opts).unwrap_err().0;
    let remote = "# t\n\n![bg right](https://example.com/a.png)\n";
    // Without a caller's words: assets (the API's vocabulary before folder names).
    let e = err(remote, &ParseOptions::default());
    assert!(
        e.contains("line 3") && e.contains("is remote and is not fetched"),
        "{e}"
    );
    assert!(e.contains("asset:<asset id>"), "{e}");
    let resolve = |_: &str| None;
    let cli = ParseOptions {
        resolve_image: Some(&resolve),
        images_are: "a file in the deck's folder",
    };
    let e = err(remote, &cli);
    assert!(
        e.contains("use a file in the deck's folder") && !e.contains("asset"),
        "{e}"
    );
    let e = err("# t\n\n![](missing.png)\n", &cli);
    assert!(
        e.contains("must be a file in the deck's folder, not `missing.png`"),
        "{e}"
    );
    let e = err("---\nlogo: https://example.com/l.png\n---\n# t\n", &cli);
    assert!(
        e.contains("the logo `https://example.com/l.png` is remote"),
        "{e}"
    );
}

#[test]
fn nesting_is_bounded_and_fast() {
    for (src, what) in [
        (format!("# t\n\n{}x\n", "> ".repeat(20_000)), "quotes"),
        (format!("# t\n\n{}x\n", "- ".repeat(20_000)), "bullets"),
        (format!("# t\n\n{}x\n", "1. ".repeat(20_000)), "numbers"),
        (
            format!(
                "# t\n\n{}",
                (0..20_000)
                    .map(|i| format!("{}- x\n", "  ".repeat(i)))
                    .collect::<String>()
                    .chars()
                    .take(500_000)
                    .collect::<String>()
            ),
            "indented",
        ),
    ] {
        let t = std::time::Instant::now();
        let e = parse_markdown(&src).unwrap_err();
        assert!(e.0.contains("nest at most 8 levels"), "{what}: {e}");
        let line = if what == "indented" {
            "line 11"
        } else {
            "line 3"
        };
        assert!(e.0.contains(line), "{what}: {e}");
        assert!(
            t.elapsed().as_secs_f64() < 5.0,
            "{what} took {:?}",
            t.elapsed()
        );
    }
    // Inline marks nested 20,000 deep: parsed (or refused) quickly, never recursed.
    for (open, close) in [
        ("*", "*"),
        ("_", "_"),
        ("**", "**"),
        ("~~", "~~"),
        ("[", "](https://x.y)"),
    ] {
        let src = format!("# t\n\n{}x{}\n", open.repeat(20_000), close.repeat(20_000));
        let t = std::time::Instant::now();
        if let Ok(deck) = parse_markdown(&src) {
            for block in &deck.slides[0].blocks {
                for text in crate::block_texts(block) {
                    let _ = crate::spans(text);
                }
            }
        }
        assert!(t.elapsed().as_secs_f64() < 5.0, "{open}: {:?}", t.elapsed());
    }
    // Eight levels are fine.
    assert!(parse_markdown(&format!("# t\n\n{}x\n", "> ".repeat(8))).is_ok());
    assert!(parse_markdown(&format!("# t\n\n{}x\n", "> ".repeat(9))).is_err());
}

const MARP: &str = r#"---
marp: true
theme: gaia
paginate: true
header: "**Acme** roadmap"
footer: Confidential
size: 4:3
class: invert
style: |
  section { font-size: 30px; }
---

<!-- _class: lead -->
<!-- _paginate: false -->

# Roadmap

![bg left:40% fit](0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)

Say hello first.

<!-- Presenter: speak slowly -->

---

<!-- backgroundColor: #123456 -->
<!-- _footer: "" -->

## Numbers

![w:300 h:200 Chart](0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)

---

## Still blue

![bg sepia](0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)
"#;

#[test]
fn a_marp_deck_splits_at_every_thematic_break() {
    let md = "---\nmarp: true\n---\n\n# One\n\n***\n\n# Two\n\n___\n\n# Three\n\n* * *\n\n# Four\n\n```\n***\n```\n";
    let deck = parse_markdown(md).unwrap();
    let titles: Vec<_> = deck.slides.iter().map(|s| s.title.clone()).collect();
    assert_eq!(
        titles,
        ["One", "Two", "Three", "Four"].map(|t| Some(t.to_owned()))
    );
    // In code (above) a `***` never splits; without `marp: true` they are rules.
    let plain = parse_markdown("# One\n\n***\n\ntext\n\n___\n").unwrap();
    assert_eq!(plain.slides.len(), 1);
    assert!(!thematic_break("  a ***"));
    assert!(!thematic_break("**"));
    assert!(!thematic_break("    ***"));
    assert!(thematic_break(" _ _ _ "));
}

#[test]
fn marp_decks_import_as_written() {
    let (deck, warnings) = parse_markdown_report(MARP, &ParseOptions::default()).unwrap();
    assert_eq!(deck.aspect, Some(Aspect::Standard));
    assert!(deck.paginate);
    assert_eq!(deck.header.as_deref(), Some("**Acme** roadmap"));
    assert_eq!(deck.footer.as_deref(), Some("Confidential"));
    // Gaia's colours come from the theme, not from settings the deck did not make.
    assert_eq!(deck.marp_theme, Some(MarpTheme::Gaia));
    assert_eq!(deck.background_color, None);
    assert_eq!(deck.slides.len(), 3, "{deck:#?}");
    let s = &deck.slides[0];
    assert_eq!(s.layout, Layout::Title);
    assert_eq!(
        s.theme, None,
        "_class replaces the global class, as in Marp"
    );
    assert_eq!(s.paginate, Some(false));
    assert_eq!(s.notes.as_deref(), Some("Presenter: speak slowly"));
    assert_eq!(
        s.backgrounds,
        vec![Background {
            asset_id: "0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10".into(),
            position: BackgroundPosition::Left,
            fit: BackgroundFit::Contain,
            split: Some(40),
        }]
    );
    assert_eq!(
        s.blocks,
        vec![Block::Text {
            text: "Say hello first.".into()
        }]
    );
    let s = &deck.slides[1];
    assert_eq!(s.layout, Layout::Content, "_class is for one slide");
    assert_eq!(s.theme, Some(Theme::Dark), "class: invert is global");
    assert_eq!(s.background_color.as_deref(), Some("#123456"));
    assert_eq!(s.footer.as_deref(), Some(""));
    assert_eq!(s.paginate, None);
    assert!(matches!(
        &s.blocks[0],
        Block::Image { alt: Some(a), width: Some(450), height: Some(300), .. } if a == "Chart"
    ));
    let s = &deck.slides[2];
    assert_eq!(s.background_color.as_deref(), Some("#123456"), "inherited");
    assert_eq!(s.footer, None);
    assert_eq!(s.backgrounds.len(), 1);
    // `style:` is read: 30 of Marp's pixels are 45 on plinth's canvas.
    assert_eq!(deck.styles.len(), 1);
    assert_eq!(deck.styles[0].font_size, Some(FontSize::Px(45.0)));
    assert!(
        !warnings.iter().any(|w| w.contains("style")),
        "{warnings:?}"
    );
    assert!(warnings.iter().any(|w| w.contains("sepia")), "{warnings:?}");
    // The deck's JSON round-trips.
    let json = serde_json::to_value(&deck).unwrap();
    assert_eq!(Deck::from_json(json).unwrap(), deck);

    assert!(parse_markdown("---\ntheme: fancy\n---\n# x")
        .unwrap_err()
        .0
        .contains("line 2"));
    let (deck, warnings) = parse_markdown_report(
        "---\ntheme: corporate\nmarp: true\n---\n# x",
        &ParseOptions::default(),
    )
    .unwrap();
    assert_eq!(deck.theme, Theme::Light);
    assert!(warnings[0].contains("`corporate`"), "{warnings:?}");
    assert!(
        parse_markdown("# x\n\n<!-- backgroundColor: notacolour -->")
            .unwrap_err()
            .0
            .contains("line 3")
    );
    let deck =
        parse_markdown("---\nheadingDivider: 2\n---\n# One\n\ntext\n\n## Two\n\n### three\n")
            .unwrap();
    assert_eq!(deck.slides.len(), 2);
    // Uncover centres every slide itself: its slides keep their own layout.
    let deck = parse_markdown("---\ntheme: uncover\n---\n# One\n").unwrap();
    assert_eq!(deck.marp_theme, Some(MarpTheme::Uncover));
    assert_eq!(deck.slides[0].layout, Layout::Content);
    // Front matter as people write it: YAML comments, dotted keys, lists, local
    // directives, `#` colours; `<style>` is read for the whole deck.
    let (deck, warnings) = parse_markdown_report(
        "---\nmarp: true          # enable Marp\n#theme: gaia\nmarkdown.marp.enableHtml: true\npaginate: true # numbers\nbackgroundColor: #f0f8ff\nheader: \"Team #1\"\nclass:\n  - invert\n_class: lead\n_paginate: skip\n---\n\n<style>\nsection { color: red; }\n\nh1 { color: blue; }\n</style>\n\n# One\n\n---\n\n## Two\n",
        &ParseOptions::default(),
    )
    .unwrap();
    assert!(deck.paginate);
    assert_eq!(deck.background_color.as_deref(), Some("#f0f8ff"));
    assert_eq!(deck.header.as_deref(), Some("Team #1"));
    assert_eq!(deck.slides.len(), 2, "{deck:#?}");
    assert_eq!(deck.slides[0].layout, Layout::Title);
    assert_eq!(deck.slides[0].theme, None, "_class replaces class");
    assert_eq!(deck.slides[0].paginate, Some(false));
    assert_eq!(deck.slides[1].theme, Some(Theme::Dark));
    assert_eq!(deck.slides[1].layout, Layout::Content);
    assert_eq!(deck.styles.len(), 2, "{warnings:?}");
    assert_eq!(deck.styles[1].element, StyleElement::H1);
    let deck = parse_markdown("# <!-- fit --> Big\n\n### <!-- fit --> Small\n").unwrap();
    assert_eq!(deck.slides[0].notes, None);
    assert!(deck.slides[0].title_fit);
    assert_eq!(deck.slides[0].title_level, Some(1));
    assert!(matches!(
        deck.slides[0].blocks[0],
        Block::Heading { fit: true, .. }
    ));
}

/// Shortcodes become emoji, footnotes numbers with their text at the end of the
/// slide; maths and unknown shortcodes are warned about with their line.
#[test]
fn shortcodes_footnotes_and_maths() {
    let (deck, warnings) = parse_markdown_report(
        "# Done :tada:\n\nShipped[^a] :rocket: :nosuchcode:\n\n$E = mc^2$\n\n[^a]: On Friday.\n",
        &ParseOptions::default(),
    )
    .unwrap();
    let s = &deck.slides[0];
    assert_eq!(s.title.as_deref(), Some("Done 🎉"));
    assert_eq!(
        s.blocks[0],
        Block::Text {
            text: "Shipped¹ 🚀 :nosuchcode:".into()
        }
    );
    assert_eq!(
        s.blocks.last(),
        Some(&Block::Text {
            text: "¹ On Friday.".into()
        })
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("line 3: `:nosuchcode:`")),
        "{warnings:?}"
    );
    assert!(
        !warnings.iter().any(|w| w.starts_with("line 5")),
        "maths is typeset, not warned: {warnings:?}"
    );
    let maths = crate::maths_ref("E = mc^2", false);
    assert_eq!(
        s.blocks[1],
        Block::Text {
            text: format!("![]({maths})")
        }
    );
}

/// `$…$` is an inline formula in its text, `$$…$$` alone in its paragraph a display
/// formula block; both carry their TeX to the renderer, and money stays text.
#[test]
fn maths_inline_and_display() {
    let md = "# Maths\n\nWhen $A v = \\lambda v$ holds, from $5 to $10.\n\n$$\n\\int_0^1 x\\,dx = \\frac{1}{2}\n$$\n";
    let (deck, warnings) = parse_markdown_report(md, &ParseOptions::default()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let s = &deck.slides[0];
    let Block::Text { text } = &s.blocks[0] else {
        panic!("{s:?}")
    };
    let spans = crate::spans(text);
    let formula = spans.iter().find_map(|s| s.image.clone()).unwrap();
    assert_eq!(
        crate::maths_of(&formula),
        Some(("A v = \\lambda v".to_owned(), false))
    );
    assert!(crate::plain(text).contains("from $5 to $10"), "{text}");
    let Block::Image { asset_id, .. } = &s.blocks[1] else {
        panic!("{s:?}")
    };
    let (tex, display) = crate::maths_of(asset_id).unwrap();
    assert!(display && tex.contains("\\frac{1}{2}"), "{tex}");
    // A formula names no asset, and the stored deck keeps it.
    assert!(deck.asset_ids().is_empty());
    let back = crate::Deck::from_json(serde_json::to_value(&deck).unwrap()).unwrap();
    assert_eq!(back, deck);
}

/// Marp's inline HTML allowlist is kept as marks of the text; a `<` that only looks
/// like a tag in the markdown's text stays a character.
#[test]
fn inline_html_allowlist_is_drawn() {
    let deck = parse_markdown(
        "# H<sub>2</sub>O\n\nx<sup>2</sup>, <kbd>Ctrl</kbd>, <mark>exam</mark>, <u>u</u>, <small>s</small>, `<sub>` and \\<sub\\>\n",
    )
    .unwrap();
    let s = &deck.slides[0];
    assert_eq!(s.title.as_deref(), Some("H<sub>2</sub>O"));
    let Block::Text { text } = &s.blocks[0] else {
        panic!("{s:?}")
    };
    let spans = crate::spans(text);
    let flagged = |t: &str| spans.iter().find(|s| s.text == t).cloned().unwrap();
    assert!(flagged("2").sup && flagged("Ctrl").code && flagged("exam").mark);
    assert!(flagged("u").underline && flagged("s").small);
    assert!(crate::plain(text).ends_with("<sub> and <sub>"), "{text}");
}

/// Marp counts pages as it shows them: `hold` repeats the number, `skip` hides it,
/// and neither advances the count; `hide` is `false`.
#[test]
fn paginate_hold_skip_and_hide() {
    let deck = parse_markdown(
        "---\nmarp: true\npaginate: true\n---\n# A\n\n---\n<!-- _paginate: skip -->\n# B\n\n---\n<!-- _paginate: hold -->\n# C\n\n---\n<!-- _paginate: hide -->\n# D\n",
    )
    .unwrap();
    let s = &deck.slides;
    assert_eq!(deck.marp_theme, Some(MarpTheme::Default));
    assert_eq!((s[0].paginate, s[0].uncounted), (None, false));
    assert_eq!((s[1].paginate, s[1].uncounted), (Some(false), true));
    assert_eq!((s[2].paginate, s[2].uncounted), (None, true));
    assert_eq!((s[3].paginate, s[3].uncounted), (Some(false), false));
    let err = parse_markdown("<!-- paginate: maybe -->\n# A\n").unwrap_err();
    assert!(err.0.contains("hold, skip or hide"), "{err}");
}

/// Real Marp decks wrap markdown in `<div class="…">` (a blank line inside, so the
/// content is markdown) and number chapters with `<span>`: the content is drawn, the
/// wrappers are reported; an HTML block with text inside, and every other element,
/// is still refused with its line.
#[test]
fn div_and_span_wrappers_are_drawn_as_their_content() {
    let (deck, warnings) = parse_markdown_report(
        "# Cover\n\n<div class=\"meta\">\n\n**Course:** Engines\n\n</div>\n\n\
         <span class=\"chapter-number\">01</span>\n\n\
         <div class=\"columns\">\n<div class=\"col positive\">\n\n- Godot\n\n</div>\n</div>\n",
        &ParseOptions::default(),
    )
    .unwrap();
    let text = format!("{:?}", deck.slides[0].blocks);
    assert!(text.contains("**Course:** Engines"), "{text}");
    assert!(text.contains("01"), "{text}");
    assert!(text.contains("Godot"), "{text}");
    assert!(!text.contains("<div") && !text.contains("<span"), "{text}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("line 3") && w.contains("<div>")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("<span>")),
        "{warnings:?}"
    );
    // Other elements inside the HTML block: refused, with the fix.
    let err =
        parse_markdown("# T\n\n<div class=\"box\">\n<table><tr><td>x</td></tr></table>\n</div>\n")
            .unwrap_err()
            .0;
    assert!(
        err.contains("line 4") && err.contains("blank line"),
        "{err}"
    );
    for html in [
        "<script>alert(1)</script>",
        "<div><img src=x></div>",
        "<divx>",
        "</div class=\"x\">",
        "<span>text</span> <blink>bold</blink>",
    ] {
        assert!(
            parse_markdown(&format!("# T\n\n{html}\n")).is_err(),
            "{html} was accepted"
        );
    }
    assert_eq!(wrapper_tags("<div class=\"a\"> </div>"), Some("div"));
    assert_eq!(wrapper_tags("</span>"), Some("span"));
    assert_eq!(wrapper_tags("<div>x</div>"), None);
    // One line of text in a wrapper: the text, as a paragraph.
    let (deck, warnings) = parse_markdown_report(
        "# T\n\n<div class=\"accent\">An NLP system &amp; more</div>\n\nafter\n",
        &ParseOptions::default(),
    )
    .unwrap();
    let text = format!("{:?}", deck.slides[0].blocks);
    assert!(text.contains("An NLP system & more"), "{text}");
    assert!(text.contains("after") && !text.contains("accent"), "{text}");
    assert!(
        warnings.iter().any(|w| w.contains("line 3")),
        "{warnings:?}"
    );
    assert_eq!(
        html_text("<div a=\"b\"><span>x y</span></div>").as_deref(),
        Some("x y")
    );
    assert_eq!(
        html_text("<strong>Goal</strong><br>").as_deref(),
        Some("**Goal**\n")
    );
    assert_eq!(html_text("<div>a <img src=x></div>"), None);
    assert_eq!(html_text("<div></div>"), None);
    assert_eq!(html_text("<p>a</p>"), None);
    // A `<div>` block with HTML lines inside: one paragraph of their text and marks.
    let deck = parse_markdown(
        "# T\n\n<div class=\"box\">\n<strong>Goal</strong><br>\nHelp *households*.\n</div>\n\nafter\n",
    )
    .unwrap();
    let blocks = format!("{:?}", deck.slides[0].blocks);
    assert!(
        blocks.contains("Text { text: \"**Goal**\\nHelp \\\\*households\\\\*.\" }"),
        "{blocks}"
    );
    assert!(blocks.contains("after"), "{blocks}");
}
