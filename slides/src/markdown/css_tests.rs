//! Marp's `style:` CSS: what is read into the deck's styles, and what is warned, line
//! by line.

use super::*;
use crate::*;

fn report(md: &str) -> (Deck, Vec<String>) {
    parse_markdown_report(md, &ParseOptions::default()).unwrap()
}

/// The review's team deck, in its own words: cream slides, a red title, dark `invert`
/// slides with an amber title, and a declaration plinth does not draw (line 9).
const TEAM: &str = "---
marp: true
class: invert
style: |
  section { background: #fdf6e3; color: #333333; }
  h1 { color: #c0392b; font-size: 48px; font-weight: 800 }
  section.invert { background-color: #1e1e2e; color: #f5e0dc; }
  section.invert h1 { color: #f39c12; }
  section { border-radius: 8px; }
---

<!-- _class: lead -->

# Atlas team

---

# Status

Body text
";

#[test]
fn front_matter_style_is_read_into_the_deck() {
    let (deck, warnings) = report(TEAM);
    assert_eq!(deck.styles.len(), 4, "{:#?}", deck.styles);
    let h1 = &deck.styles[1];
    assert_eq!(h1.element, StyleElement::H1);
    assert_eq!(h1.color.as_deref(), Some("#c0392b"));
    // Marp's 48 px on its 1280×720 slide are 72 on plinth's 1920×1080.
    assert_eq!(h1.font_size, Some(FontSize::Px(72.0)));
    assert_eq!(h1.font_weight, Some(800));
    assert_eq!(deck.styles[2].class.as_deref(), Some("invert"));
    assert_eq!(
        warnings,
        ["front matter line 9: style: `border-radius` is not supported and has no effect"]
    );
    // The lead slide dropped `invert` (as in Marp): cream and red; the second is
    // inverted: dark and amber.
    let [lead, status] = [&deck.slides[0], &deck.slides[1]];
    assert_eq!(
        deck.styled(lead, StyleElement::Section).background,
        Some((0xfd, 0xf6, 0xe3))
    );
    assert_eq!(
        deck.styled(lead, StyleElement::H1).color,
        Some((0xc0, 0x39, 0x2b))
    );
    assert_eq!(
        deck.styled(status, StyleElement::Section).background,
        Some((0x1e, 0x1e, 0x2e))
    );
    let h1 = deck.styled(status, StyleElement::H1);
    assert_eq!(h1.color, Some((0xf3, 0x9c, 0x12)));
    assert_eq!(
        (h1.font_size, h1.bold),
        (Some(FontSize::Px(72.0)), Some(true))
    );
    // The styles round-trip through the JSON document.
    let json = serde_json::to_value(&deck).unwrap();
    assert_eq!(json["styles"][0]["background_color"], "#fdf6e3");
    assert_eq!(Deck::from_json(json).unwrap(), deck);
}

#[test]
fn style_elements_apply_to_the_whole_deck_from_their_line() {
    let md = "# One\n\n---\n\n## Two\n\n<style>\np { color: navy; font-size: 1.2em }\ntable { margin: 0 }\n</style>\n\n<style scoped>\nh1 { color: red }\n</style>\n";
    let (deck, warnings) = report(md);
    assert_eq!(deck.styles.len(), 1, "{warnings:?}");
    assert_eq!(deck.styles[0].font_size, Some(FontSize::Em(1.2)));
    assert_eq!(
        deck.styled(&deck.slides[0], StyleElement::P).color,
        Some((0, 0, 128))
    );
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings.contains(&"line 9: style: `margin` is not supported and has no effect".into()),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("line 12: style: <style scoped>")),
        "{warnings:?}"
    );
}

#[test]
fn units_weights_and_selectors() {
    let md = "---\nstyle: |\n  section { font-size: 150% }\n  section h2, h3 { font-size: 2rem; font-weight: normal }\n  section.lead p { font-weight: bold }\n  footer { font-size: 20px; color: gray }\n---\n# x\n";
    let (deck, warnings) = report(md);
    assert!(warnings.is_empty(), "{warnings:?}");
    let sizes: Vec<_> = deck.styles.iter().map(|r| r.font_size).collect();
    assert_eq!(
        sizes,
        [
            Some(FontSize::Em(1.5)),
            Some(FontSize::Em(2.0)),
            Some(FontSize::Em(2.0)),
            None,
            Some(FontSize::Px(30.0))
        ]
    );
    assert_eq!(deck.styles[1].element, StyleElement::H2);
    assert_eq!(deck.styles[1].font_weight, Some(400));
    assert_eq!(deck.styles[3].class.as_deref(), Some("lead"));
    assert_eq!(deck.styles[3].font_weight, Some(700));
    // A value on the `style:` line itself; a background that is not a plain colour.
    let (deck, warnings) = report(
        "---\nstyle: section { background: linear-gradient(red, blue); color: red }\n---\n# x\n",
    );
    assert_eq!(deck.styles.len(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("front matter line 2: style: `background: linear-gradient(red, blue)`: only a plain colour"),
        "{warnings:?}"
    );
}

#[test]
fn what_plinth_does_not_draw_is_warned_with_its_line() {
    let md = "---
style: |
  /* a comment
     over lines */
  @import url('https://example.com/x.css');
  div.box { color: red }
  h1 { background: url(a.png); color: blurple; font-size: 9000px }
  h2 { font-weight: bolder; background-color: red }
  section > h1 { color: red }
  @media print { h1 { color: red } }
  p { color red }
  td { font-size: 10px }
  h3 { color: red
---
# x
";
    let (deck, warnings) = report(md);
    assert!(deck.styles.is_empty(), "{:#?}", deck.styles);
    let lines: Vec<&str> = warnings
        .iter()
        .map(|w| w.split(": style:").next().unwrap_or(""))
        .collect();
    assert_eq!(
        lines,
        [
            "front matter line 5",
            "front matter line 6",
            "front matter line 7",
            "front matter line 7",
            "front matter line 7",
            "front matter line 8",
            "front matter line 8",
            "front matter line 9",
            "front matter line 10",
            "front matter line 11",
            "front matter line 12",
            "front matter line 13",
        ],
        "{warnings:#?}"
    );
    let all = warnings.join("\n");
    for said in [
        "`@import` rules",
        "selector `div.box`",
        "`background` on `h1`",
        "`color: blurple`",
        "`font-size: 9000px`",
        "`font-weight: bolder`",
        "`background-color` on `h2`",
        "selector `section > h1`",
        "`@media` rules",
        "`color red` is not a `property: value`",
        "`font-size` on `td`",
        "not closed",
    ] {
        assert!(all.contains(said), "{said}: {all}");
    }
}

#[test]
fn slide_classes_are_kept_for_styles_and_warned_without_one() {
    let md = "---\nstyle: |\n  section.box { background: beige }\n---\n<!-- _class: box lead -->\n# a\n\n---\n\n<!-- _class: other -->\n# b\n";
    let (deck, warnings) = report(md);
    assert_eq!(deck.slides[0].classes, ["box"]);
    assert_eq!(deck.slides[0].layout, Layout::Title);
    assert_eq!(
        deck.styled(&deck.slides[0], StyleElement::Section)
            .background,
        Some((245, 245, 220))
    );
    assert_eq!(
        deck.styled(&deck.slides[1], StyleElement::Section)
            .background,
        None
    );
    assert_eq!(
        warnings,
        ["slide at line 9: class `other` is not supported and has no effect"]
    );
}

#[test]
fn hard_to_read_author_colours_are_drawn_and_warned() {
    let md = "---\nstyle: |\n  section { background: #fdf6e3 }\n  h1 { color: #ffffff }\n  h2 { color: #222222 }\n---\n# x\n";
    let (deck, warnings) = report(md);
    assert_eq!(deck.styles[1].color.as_deref(), Some("#ffffff"));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("front matter line 4: style: `h1` colour #ffffff on #fdf6e3")
            && warnings[0].contains("under 4.5:1"),
        "{warnings:?}"
    );
    // A JSON document hears the same, by the rule's index.
    let (_, warnings) = Deck::from_json_report(serde_json::to_value(&deck).unwrap()).unwrap();
    assert!(
        warnings[0].starts_with("styles[1]: `h1` colour"),
        "{warnings:?}"
    );
}

#[test]
fn style_rules_are_bounded() {
    let css: String = (0..100)
        .map(|i| format!("  h1 {{ font-size: {}px }}\n", 10 + i))
        .collect();
    let (deck, warnings) = report(&format!("---\nstyle: |\n{css}---\n# x\n"));
    assert_eq!(deck.styles.len(), MAX_STYLE_RULES);
    assert_eq!(warnings.len(), 100 - MAX_STYLE_RULES);
    assert!(
        warnings[0].starts_with("front matter line 67: style: at most 64"),
        "{warnings:?}"
    );
    // The JSON document is held to the same limits, with clear answers.
    let rule = serde_json::json!({"element": "h1", "color": "red"});
    for (styles, why) in [
        (
            serde_json::json!(vec![rule.clone(); 65]),
            "at most 64 style rules",
        ),
        (
            serde_json::json!([{"element": "p", "color": "nope"}]),
            "styles[0] color",
        ),
        (
            serde_json::json!([{"element": "p", "font_size": {"px": 1e9}}]),
            "a font size is",
        ),
        (
            serde_json::json!([{"element": "p", "font_size": {"em": -1}}]),
            "a font size is",
        ),
        (
            serde_json::json!([{"element": "p", "font_weight": 0}]),
            "a font weight is",
        ),
        (
            serde_json::json!([{"element": "p", "class": "a.b", "color": "red"}]),
            "a class is",
        ),
    ] {
        let doc = serde_json::json!({"slides": [{}], "styles": styles});
        let err = Deck::from_json(doc).unwrap_err().0;
        assert!(err.contains(why), "{why}: {err}");
    }
    let err = Deck::from_json(serde_json::json!({"slides": [{}], "styles": [{"element": "div"}]}))
        .unwrap_err()
        .0;
    assert!(err.contains("styles[0].element"), "{err}");
    let err = Deck::from_json(serde_json::json!({"slides": [{"classes": ["a b"]}]}))
        .unwrap_err()
        .0;
    assert!(err.contains("class `a b`"), "{err}");
}

#[test]
fn a_large_hostile_sheet_reads_in_linear_time() {
    // Close to the markdown limit: 100,000 declarations; 50 are warned with their line,
    // the rest counted.
    let css = format!("  h1 {{ {} }}\n", "x:1;".repeat(100_000));
    let started = std::time::Instant::now();
    let (_, warnings) = report(&format!("---\nstyle: |\n{css}---\n# x\n"));
    assert_eq!(warnings.len(), 51);
    assert!(warnings[49].starts_with("front matter line 3: style: `x`"));
    assert_eq!(
        warnings[50],
        "front matter line 3: style: 99950 more warnings about this CSS not shown"
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

proptest::proptest! {
    /// Whatever the CSS, reading it answers (rules and warnings), never panics, and
    /// the deck it makes is valid.
    #[test]
    fn any_css_reads_without_panicking(css in "[a-z0-9 .:;{}@/*#%(),>\\n-]{0,200}") {
        let indented: String = css.lines().map(|l| format!("  {l}\n")).collect();
        let md = format!("---\nstyle: |\n{indented}---\n# x\n\n<style>\n{css}\n</style>\n");
        if let Ok((deck, _)) = parse_markdown_report(&md, &ParseOptions::default()) {
            proptest::prop_assert!(deck.validate().is_ok());
        }
    }
}
