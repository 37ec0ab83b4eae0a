//! The deck document's JSON Schema (feature `schema`): derived from the model's serde
//! shape, with the limits [`Deck::validate`] enforces stated where JSON Schema can state
//! them. What it cannot state (the cells of one table, nesting depth, the blocks of a
//! slide counted through quotes and lists, inline marks) is in the descriptions.

use schemars::{json_schema, Schema, SchemaGenerator};

use crate::{COLOR_NAMES, MAX_ID_CHARS};

/// An `rgb(r, g, b)` component, 0 to 255.
const BYTE: &str = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";

/// The colours [`crate::parse_color`] reads, as a pattern.
fn color_pattern() -> String {
    let names: Vec<&str> = COLOR_NAMES.iter().map(|(n, _)| *n).collect();
    format!(
        r"^\s*(#[0-9a-fA-F]{{3}}|#[0-9a-fA-F]{{6}}|rgb\(\s*{BYTE}\s*,\s*{BYTE}\s*,\s*{BYTE}\s*\)|{})\s*$",
        names.join("|")
    )
}

/// A CSS colour, or null.
pub(crate) fn color(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["string", "null"],
        "pattern": color_pattern(),
        "description": "A CSS colour: `#rrggbb`, `#rgb`, `rgb(r, g, b)` or a basic name (`white`, `navy`, …)."
    })
}

/// An uploaded asset's id.
pub(crate) fn asset(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "uuid", "description": "An asset id of this deck."})
}

/// An uploaded asset's id, or null.
pub(crate) fn asset_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["string", "null"], "format": "uuid", "description": "An asset id of this deck."})
}

/// A slide id: empty (filled in as `s<n>`) or letters, digits, `-` and `_`.
pub(crate) fn slide_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": format!("^[A-Za-z0-9_-]{{0,{MAX_ID_CHARS}}}$"),
        "description": "Stable within the deck; slide operations address slides by it. Left out or empty: filled in (`s1`, `s2`, …)."
    })
}

#[cfg(test)]
mod tests {
    use crate::{parse_color, COLOR_NAMES};

    #[test]
    fn the_colour_pattern_takes_what_the_parser_reads() {
        let re = regex_lite::Regex::new(&super::color_pattern()).unwrap();
        let mut good = vec!["#fff", "#A0b1C2", " rgb(0, 128,255) ", "rgb(255,255,255)"];
        good.extend(COLOR_NAMES.iter().map(|(n, _)| *n));
        for c in good {
            assert!(re.is_match(c) && parse_color(c).is_some(), "{c}");
        }
        for c in ["#ffff", "rgb(256,0,0)", "rgb(1,2)", "blurple", "", "#ggg"] {
            assert!(!re.is_match(c) && parse_color(c).is_none(), "{c}");
        }
    }
}
