//! Property tests: no input reaches a panic in the markdown parser, the inline-mark
//! splitter or slide operations, and whatever `apply` accepts is a valid deck (M6, H4).

use plinth_slides::{parse_markdown, spans, Deck, Operation, Slide, MAX_OPERATIONS, MAX_SLIDES};
use proptest::prelude::*;

/// Markdown built from the pieces the parser treats specially, plus arbitrary text, so
/// the cases reach comments, fences, separators, front matter, lists and images.
fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<!--".to_owned()),
        Just("-->".to_owned()),
        Just("<!-->".to_owned()),
        Just("---\n".to_owned()),
        Just("```".to_owned()),
        Just("~~~".to_owned()),
        Just("\n".to_owned()),
        Just("# ".to_owned()),
        Just("- ".to_owned()),
        Just("1. ".to_owned()),
        Just("**".to_owned()),
        Just("*".to_owned()),
        Just("`".to_owned()),
        Just("\\".to_owned()),
        Just("title: x\n".to_owned()),
        Just("theme: dark\n".to_owned()),
        Just("layout: title".to_owned()),
        Just("![a](asset:0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)".to_owned()),
        Just("<div>".to_owned()),
        Just("> ".to_owned()),
        Just("  ".to_owned()),
        Just("~~".to_owned()),
        Just("- [x] ".to_owned()),
        Just("| a | *b* |\n|:-|--:|\n| c | d |\n".to_owned()),
        Just("[l](https://example.com/x)".to_owned()),
        Just("](".to_owned()),
        Just("[".to_owned()),
        Just("***\n".to_owned()),
        Just("<br>".to_owned()),
        Just("<!-- _class: lead invert -->".to_owned()),
        Just("<!-- paginate: true\nheader: h -->".to_owned()),
        Just("<!-- backgroundColor: #123 -->".to_owned()),
        Just("![bg left:40% fit](asset:0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)".to_owned()),
        Just("![w:300 h:2](asset:0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)".to_owned()),
        Just("marp: true\n".to_owned()),
        Just("class:\n  - invert\n".to_owned()),
        Just("headingDivider: 2\n".to_owned()),
        Just("size: 4:3\n".to_owned()),
        Just("<style>".to_owned()),
        Just("</style>".to_owned()),
        "\\PC{0,12}",
    ];
    prop::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

fn slide_id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "s[0-9]{1,2}",
        "[a-z_-]{0,3}",
        "\\PC{0,3}"
    ]
}

fn slide() -> impl Strategy<Value = Slide> {
    (slide_id(), prop::option::of("\\PC{0,8}"), any::<bool>()).prop_map(|(id, title, hidden)| {
        Slide {
            id,
            title,
            hidden,
            ..serde_json::from_value(serde_json::json!({})).unwrap()
        }
    })
}

fn operation() -> impl Strategy<Value = Operation> {
    let index = prop_oneof![Just(0usize), 0usize..8, any::<usize>()];
    prop_oneof![
        (prop::option::of(index.clone()), slide())
            .prop_map(|(index, slide)| Operation::Insert { index, slide }),
        slide_id().prop_map(|slide_id| Operation::Delete { slide_id }),
        (slide_id(), index).prop_map(|(slide_id, index)| Operation::Move { slide_id, index }),
        (slide_id(), slide()).prop_map(|(slide_id, slide)| Operation::Update { slide_id, slide }),
        (slide_id(), prop::option::of("\\PC{0,8}"))
            .prop_map(|(slide_id, notes)| Operation::SetNotes { slide_id, notes }),
        slide_id().prop_map(|slide_id| Operation::Hide { slide_id }),
        slide_id().prop_map(|slide_id| Operation::Show { slide_id }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn markdown_never_panics(src in markdownish()) {
        if let Ok(deck) = parse_markdown(&src) {
            prop_assert!(deck.validate().is_ok());
            // What the parser makes survives the JSON door unchanged.
            let json = serde_json::to_value(&deck).unwrap();
            prop_assert_eq!(Deck::from_json(json).unwrap(), deck);
        }
    }

    #[test]
    fn any_text_parses_or_is_refused(src in "\\PC{0,200}") {
        let _ = parse_markdown(&src);
        let _ = spans(&src);
    }

    #[test]
    fn operations_never_panic_and_keep_the_deck_valid(
        ops in prop::collection::vec(operation(), 0..40),
        start in 1usize..6,
    ) {
        let slides: Vec<_> = (1..=start).map(|n| serde_json::json!({"id": format!("s{n}")})).collect();
        let deck = Deck::from_json(serde_json::json!({"slides": slides})).unwrap();
        match deck.apply(&ops) {
            Ok((next, _)) => prop_assert!(next.validate().is_ok()),
            Err(e) => prop_assert!(e.0.starts_with("operation") || e.0.contains("slide")),
        }
    }
}

/// H4: the batch from the review (26,000 inserts at index 0) is refused before any work,
/// and the largest allowed batch stops at the slide cap on the first insert past it.
#[test]
fn h4_oversized_batches_fail_fast() {
    let deck = Deck::from_json(serde_json::json!({"slides": [{"title": "a"}]})).unwrap();
    let insert = Operation::Insert {
        index: Some(0),
        slide: serde_json::from_value(serde_json::json!({})).unwrap(),
    };
    let e = deck.apply(&vec![insert.clone(); 26_000]).unwrap_err();
    assert!(e.0.contains("at most 500 operations"), "{e}");
    let e = deck.apply(&vec![insert; MAX_OPERATIONS]).unwrap_err();
    assert!(
        e.0.starts_with(&format!("operation {MAX_SLIDES}:")) && e.0.contains("at most"),
        "{e}"
    );
}
