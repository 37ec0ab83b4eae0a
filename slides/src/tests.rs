use super::*;
use serde_json::json;

/// Column breaks split only a slide's own blocks, into at most three columns (others are
/// dropped with a warning); the brand is a colour and the logo an asset, which the
/// deck's assets include.
#[test]
fn column_breaks_brand_and_logo_are_checked() {
    let logo = "6f1c2a3e-0000-4000-8000-000000000001";
    let ok = Deck::from_json(
        json!({"brand": "#0a84ff", "logo": logo, "slides": [{"blocks": [
        {"type": "text", "text": "a"}, {"type": "column_break"}, {"type": "text", "text": "b"}]}]}),
    )
    .unwrap();
    assert_eq!(ok.slides[0].blocks[1], Block::ColumnBreak);
    assert_eq!(ok.asset_ids(), vec![logo.to_owned()]);
    for (doc, want, left) in [
        (
            json!({"slides": [{"blocks": [{"type": "quote", "blocks": [{"type": "column_break"}]}]}]}),
            "not inside a list or quote",
            json!([{"type": "quote", "blocks": []}]),
        ),
        (
            json!({"slides": [{"blocks": [{"type": "column_break"}, {"type": "column_break"}, {"type": "column_break"}]}]}),
            "at most 3 columns",
            json!([{"type": "column_break"}, {"type": "column_break"}]),
        ),
    ] {
        let (deck, warnings) = Deck::from_json_report(doc).unwrap();
        assert!(warnings.concat().contains(want), "{warnings:?}");
        assert_eq!(serde_json::to_value(&deck.slides[0].blocks).unwrap(), left);
    }
    for (doc, want) in [
        (json!({"brand": "blurple", "slides": [{}]}), "brand"),
        (
            json!({"logo": "logo.png", "slides": [{}]}),
            "logo `logo.png` is not an asset id",
        ),
    ] {
        let err = Deck::from_json(doc).unwrap_err();
        assert!(err.0.contains(want), "{err}");
    }
}

#[test]
fn spans_split_marks() {
    let s = spans("a **b** *c* `d*e` \\*f");
    let texts: Vec<_> = s
        .iter()
        .map(|s| (s.text.as_str(), s.bold, s.italic, s.code))
        .collect();
    assert_eq!(
        texts,
        vec![
            ("a ", false, false, false),
            ("b", true, false, false),
            (" ", false, false, false),
            ("c", false, true, false),
            (" ", false, false, false),
            ("d*e", false, false, true),
            (" *f", false, false, false),
        ]
    );
    assert_eq!(plain("2 * 3 = 6"), "2 * 3 = 6");
}

#[test]
fn documents_get_ids_and_are_checked() {
    let deck = Deck::from_json(json!({"slides":[{"title":"A"},{"id":"s1","title":"B"}]})).unwrap();
    assert_eq!(deck.slides[0].id, "s2");
    // An id used twice: the later slide gets a fresh one, and the warning says so.
    let (deck, warnings) =
        Deck::from_json_report(json!({"slides":[{"id":"a"},{"id":"a"},{}]})).unwrap();
    let ids: Vec<_> = deck.slides.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["a", "s1", "s2"]);
    assert_eq!(
        warnings,
        ["slide 2: id `a` is used by an earlier slide; this one is now `s1`"]
    );
    // Rows are filled or cut to the header's width; extra alignments go.
    let (deck, warnings) = Deck::from_json_report(json!({"slides":[{"blocks":[{"type":"table",
        "align":["left","right","center"],"header":["h1","h2"],"rows":[["a"],["b","c","d"]]}]}]}))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&deck.slides[0].blocks[0]).unwrap(),
        json!({"type":"table","align":["left","right"],"header":["h1","h2"],"rows":[["a",""],["b","c"]]})
    );
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(Deck::from_json(json!({"slides":[]})).is_err());
    let e = Deck::from_json(json!({"slides":[{"blocks":[{"type":"video"}]}]})).unwrap_err();
    assert!(e.0.contains("slides[0].blocks[0]"), "{e}");
    let e = Deck::from_json(json!({"slides":[{"blocks":[{"type":"image","asset_id":"x"}]}]}))
        .unwrap_err();
    assert!(e.0.contains("asset id"), "{e}");
}

#[test]
fn operations_are_all_or_nothing() {
    let deck = Deck::from_json(json!({"slides":[{"title":"A"},{"title":"B"}]})).unwrap();
    let ops: Vec<Operation> = serde_json::from_value(json!([
        {"op":"insert","index":0,"slide":{"title":"Z"}},
        {"op":"move","slide_id":"s1","index":2},
        {"op":"hide","slide_id":"s2"},
        {"op":"set_notes","slide_id":"s2","notes":"psst"}
    ]))
    .unwrap();
    let (next, _) = deck.apply(&ops).unwrap();
    let titles: Vec<_> = next
        .slides
        .iter()
        .map(|s| s.title.clone().unwrap())
        .collect();
    assert_eq!(titles, ["Z", "B", "A"]);
    assert!(next.slides[1].hidden);
    assert_eq!(next.audience().slides.len(), 2);
    assert!(next.audience().slides.iter().all(|s| s.notes.is_none()));
    let bad: Vec<Operation> = serde_json::from_value(
        json!([{"op":"delete","slide_id":"s1"},{"op":"delete","slide_id":"s2"}]),
    )
    .unwrap();
    assert!(
        deck.apply(&bad).is_err(),
        "a deck may not lose its last slide"
    );
}

#[test]
fn list_items_stay_strings_in_json_unless_rich() {
    let doc = json!({"theme":"light","slides":[{"id":"s1","layout":"content","hidden":false,"blocks":[{"type":"bullets","ordered":false,"items":[
        "plain",
        {"text":"task","checked":true},
        {"text":"parent","list":{"ordered":true,"start":3,"items":["child"]}}
    ]}]}]});
    let deck = Deck::from_json(doc.clone()).unwrap();
    assert_eq!(serde_json::to_value(&deck).unwrap(), doc);
    let e = Deck::from_json(
        json!({"slides":[{"blocks":[{"type":"bullets","items":[{"text":"x","bogus":1}]}]}]}),
    )
    .unwrap_err();
    assert!(e.0.contains("bogus"), "{e}");
}

#[test]
fn json_decks_are_checked_like_markdown() {
    let deep = (0..12).fold(
        json!({"type":"text","text":"x"}),
        |b, _| json!({"type":"quote","blocks":[b]}),
    );
    let e = Deck::from_json(json!({"slides":[{"blocks":[deep]}]})).unwrap_err();
    assert!(e.0.contains("nest at most 8"), "{e}");
    let e = Deck::from_json(
        json!({"slides":[{"blocks":[{"type":"text","text":"[x](javascript:alert%281%29)"}]}]}),
    )
    .unwrap_err();
    assert!(e.0.contains("not allowed"), "{e}");
    for url in ["https://a\\", "https://a\"b", "https://a<b"] {
        assert!(!link_allowed(url), "{url}");
    }
    assert!(link_allowed("HTTPS://example.com/a_%28b%29?q=1#x"));
    // A short row is filled (`documents_get_ids_and_are_checked`), a row wider than any
    // table may be is refused.
    let wide: Vec<String> = (0..=MAX_TABLE_COLUMNS).map(|i| i.to_string()).collect();
    let e = Deck::from_json(
        json!({"slides":[{"blocks":[{"type":"table","header":["a","b"],"rows":[wide]}]}]}),
    )
    .unwrap_err();
    assert!(e.0.contains("cells"), "{e}");
    let e =
        Deck::from_json(json!({"slides":[{"blocks":[{"type":"text","text":"![i](asset:nope)"}]}]}))
            .unwrap_err();
    assert!(e.0.contains("inline image"), "{e}");
    let ok = Deck::from_json(json!({"slides":[{"blocks":[
        {"type":"table","align":["right"],"header":["a","b"],"rows":[["1","~~2~~"]]},
        {"type":"rule"},
        {"type":"quote","blocks":[{"type":"text","text":"[x](https://a.example)"}]}
    ]}]}));
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn spans_links_images_strike() {
    let s = spans("a [b **c**](https://x.y/z) ~~d~~ ![e](asset:1) \\[f](g) [h] (i)");
    let got: Vec<_> = s
        .iter()
        .map(|s| {
            (
                s.text.as_str(),
                s.bold,
                s.strike,
                s.link.as_deref(),
                s.image.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("a ", false, false, None, None),
            ("b ", false, false, Some("https://x.y/z"), None),
            ("c", true, false, Some("https://x.y/z"), None),
            (" ", false, false, None, None),
            ("d", false, true, None, None),
            (" ", false, false, None, None),
            ("e", false, false, None, Some("1")),
            (" [f](g) [h] (i)", false, false, None, None),
        ]
    );
    // Linear on hostile input.
    let t = std::time::Instant::now();
    for s in [
        "[".repeat(10_000),
        "*".repeat(10_000),
        "[`".repeat(5_000),
        "[a](".repeat(2_500),
    ] {
        let _ = spans(&s);
    }
    assert!(t.elapsed().as_secs_f64() < 1.0, "{:?}", t.elapsed());
}

#[test]
fn block_types_are_the_json_tags_in_their_old_order() {
    assert_eq!(
        BLOCK_TYPES,
        [
            "heading",
            "text",
            "bullets",
            "code",
            "image",
            "quote",
            "table",
            "rule",
            "column_break",
        ]
    );
    let item = ListItem::from("one");
    let samples = [
        Block::Heading {
            text: "h".into(),
            level: None,
            fit: false,
        },
        Block::Text { text: "t".into() },
        Block::Bullets {
            items: vec![item],
            ordered: false,
            start: None,
        },
        Block::Code {
            language: None,
            code: "c".into(),
        },
        Block::Image {
            asset_id: "a".into(),
            alt: None,
            width: None,
            height: None,
        },
        Block::Quote { blocks: Vec::new() },
        Block::Table {
            align: Vec::new(),
            header: Vec::new(),
            rows: Vec::new(),
        },
        Block::Rule,
        Block::ColumnBreak,
    ];
    let tags: Vec<String> = samples
        .iter()
        .map(|b| {
            serde_json::to_value(b).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let names: Vec<&str> = samples.iter().map(Block::type_name).collect();
    assert_eq!(tags, names);
    assert_eq!(names, BLOCK_TYPES);
}

/// The deck document's JSON Schema (the OpenAPI document's `Deck`).
#[cfg(feature = "schema")]
#[test]
fn the_deck_schema_is_closed_and_names_its_limits() {
    let s = serde_json::to_value(schemars::schema_for!(Deck)).unwrap();
    assert_eq!(s["additionalProperties"], false);
    assert_eq!(s["properties"]["slides"]["minItems"], 1);
    assert_eq!(s["properties"]["slides"]["maxItems"], crate::MAX_SLIDES);
    assert_eq!(s["required"], serde_json::json!(["slides"]));
    let text = serde_json::to_string(&s).unwrap();
    for block in crate::BLOCK_TYPES {
        assert!(text.contains(&format!("\"{block}\"")), "{block}");
    }
}
