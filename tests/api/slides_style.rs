//! Marp's `style:` CSS over HTTP (issue 44): `slides/create` and `update` keep the
//! subset plinth draws in the deck's `styles` and answer the rest in `warnings`, by
//! line; a JSON document's styles are held to the same limits.

use serde_json::json;

use crate::common::{email, Server};
use crate::slide_helpers::*;

const MD: &str = "---\nmarp: true\nstyle: |\n  section { background: #fdf6e3 }\n  h1 { color: #c0392b; border-radius: 4px }\n---\n\n# Cream and red\n";

#[tokio::test]
async fn style_is_kept_and_the_unsupported_is_warned_by_line() {
    let s = Server::start().await;
    let key = s.verified_user(&email("stylist")).await;
    let r = s
        .post("/api/slides/create", Some(&key), json!({ "markdown": MD }))
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["content"]["styles"],
        json!([
            {"element": "section", "background_color": "#fdf6e3"},
            {"element": "h1", "color": "#c0392b"}
        ])
    );
    assert_eq!(
        r.body["warnings"],
        json!(["front matter line 5: style: `border-radius` is not supported and has no effect"])
    );
    // `update` answers the same for its markdown.
    let d = id(&r.body);
    let md = MD.replace("border-radius: 4px", "text-shadow: none");
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 1, "markdown": md}),
        )
        .await;
    r.assert_ok();
    assert!(
        r.body["warnings"][0]
            .as_str()
            .is_some_and(|w| w.starts_with("front matter line 5: style: `text-shadow`")),
        "{}",
        r.body
    );
    // A document's styles are validated like the rest of it: a clear 400.
    let r = s
        .post(
            "/api/slides/create",
            Some(&key),
            json!({"document": {"slides": [{}], "styles": [{"element": "h1", "font_weight": 5000}]}}),
        )
        .await;
    r.assert_error(400);
    assert!(
        r.body["message"].to_string().contains("font weight"),
        "{}",
        r.body
    );
}
