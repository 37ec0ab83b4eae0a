//! Request field types that carry their rule: a body or query is refused (400, naming the
//! field) before a handler runs, and the OpenAPI document states the same rule, from one
//! declaration.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

/// A required string with something other than white space in it, of at most `MAX`
/// characters. The value is kept as sent (handlers that want it trimmed trim it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NonBlank<const MAX: usize = { usize::MAX }>(String);

impl<const MAX: usize> NonBlank<MAX> {
    pub fn into_string(self) -> String {
        self.0
    }

    /// The value without surrounding white space (never empty).
    pub fn trimmed(&self) -> &str {
        self.0.trim()
    }
}

impl<const MAX: usize> std::ops::Deref for NonBlank<MAX> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<const MAX: usize> std::fmt::Display for NonBlank<MAX> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// As the string it is (request hashes of idempotent changes serialise bodies).
impl<const MAX: usize> serde::Serialize for NonBlank<MAX> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for NonBlank<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.trim().is_empty() {
            return Err(serde::de::Error::custom("must be a non-empty string"));
        }
        if MAX != usize::MAX && text.chars().count() > MAX {
            return Err(serde::de::Error::custom(format!(
                "must be at most {MAX} characters"
            )));
        }
        Ok(NonBlank(text))
    }
}

impl<const MAX: usize> JsonSchema for NonBlank<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("NonBlank")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut schema = json_schema!({"type": "string", "minLength": 1, "pattern": r"\S"});
        if MAX != usize::MAX {
            schema.insert("maxLength".into(), MAX.into());
        }
        schema
    }
}

/// A page size: `DEFAULT` when absent (or `null`), refused (400, naming the field) outside
/// 1 to `MAX`. Use with `#[serde(default)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit<const DEFAULT: i64, const MAX: i64>(i64);

impl<const DEFAULT: i64, const MAX: i64> Limit<DEFAULT, MAX> {
    /// A size read some other way (a query string read into a body), with the same rule.
    pub fn new(value: Option<i64>) -> Result<Self, String> {
        match value.unwrap_or(DEFAULT) {
            n if (1..=MAX).contains(&n) => Ok(Limit(n)),
            _ if MAX == i64::MAX => Err("must be 1 or more".into()),
            _ => Err(format!("must be 1 to {MAX}")),
        }
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

impl<const DEFAULT: i64, const MAX: i64> Default for Limit<DEFAULT, MAX> {
    fn default() -> Self {
        Limit(DEFAULT)
    }
}

/// A page bound built from an optional integer, by its own rule (`Limit`, `Offset`); lets
/// `http::extract::lenient` read one from a numeral too.
pub trait Bound: Sized {
    fn from_count(value: Option<i64>) -> Result<Self, String>;
}

impl<const DEFAULT: i64, const MAX: i64> Bound for Limit<DEFAULT, MAX> {
    fn from_count(value: Option<i64>) -> Result<Self, String> {
        Limit::new(value)
    }
}

impl Bound for Offset {
    fn from_count(value: Option<i64>) -> Result<Self, String> {
        Offset::new(value)
    }
}

impl<'de, const DEFAULT: i64, const MAX: i64> Deserialize<'de> for Limit<DEFAULT, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Limit::new(Option::<i64>::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl<const DEFAULT: i64, const MAX: i64> JsonSchema for Limit<DEFAULT, MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Limit")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // `null` reads as absent, so the document allows it too.
        let mut schema = json_schema!({"type": ["integer", "null"], "format": "int64", "minimum": 1, "default": DEFAULT});
        if MAX != i64::MAX {
            schema.insert("maximum".into(), MAX.into());
        }
        schema
    }
}

/// How many rows a page skips: 0 when absent (or `null`), refused when negative. Use with
/// `#[serde(default)]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offset(i64);

impl Offset {
    pub fn new(value: Option<i64>) -> Result<Self, String> {
        match value.unwrap_or(0) {
            n if n >= 0 => Ok(Offset(n)),
            _ => Err("must be 0 or more".into()),
        }
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

/// A keyset position, `<nanoseconds since 1970>.<id>` (the `next_cursor` of a page):
/// the rows after the one made at that instant with that id. Every string of that shape
/// is a position (digits beyond 64 bits saturate), so the document's pattern is exactly
/// what the server takes; anything else is refused (400, naming the field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub at: chrono::DateTime<chrono::Utc>,
    pub id: String,
}

impl Cursor {
    /// The cursor of a row: the page after it starts after it.
    pub fn after(at: chrono::DateTime<chrono::Utc>, id: &str) -> String {
        format!("{}.{id}", at.timestamp_nanos_opt().unwrap_or_default())
    }

    fn parse(raw: &str) -> Option<Self> {
        let (nanos, id) = raw.split_once('.')?;
        let digits = nanos.strip_prefix('-').unwrap_or(nanos);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let nanos = nanos.parse::<i64>().unwrap_or(if nanos.starts_with('-') {
            i64::MIN
        } else {
            i64::MAX
        });
        Some(Cursor {
            at: chrono::DateTime::from_timestamp_nanos(nanos),
            id: id.to_owned(),
        })
    }
}

impl<'de> Deserialize<'de> for Cursor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Cursor::parse(&raw).ok_or_else(|| {
            serde::de::Error::custom("must be the `next_cursor` of a page this server gave")
        })
    }
}

impl JsonSchema for Cursor {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Cursor")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": r"^-?[0-9]+\.",
            "description": "`next_cursor` of the previous page (`<nanoseconds>.<id>`)"
        })
    }
}

impl<'de> Deserialize<'de> for Offset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Offset::new(Option::<i64>::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Offset {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Offset")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": ["integer", "null"], "format": "int64", "minimum": 0, "default": 0})
    }
}

#[cfg(test)]
mod tests {
    use super::{Cursor, Limit, NonBlank, Offset};

    #[test]
    fn every_cursor_of_the_documented_shape_is_a_position() {
        let at = chrono::DateTime::from_timestamp_nanos(1_764_000_000_123_456_789);
        let c: Cursor =
            serde_json::from_value(serde_json::json!(Cursor::after(at, "a.b"))).unwrap();
        assert_eq!((c.at, c.id.as_str()), (at, "a.b"));
        for shape in ["0.", "-5.x", "99999999999999999999999.id"] {
            assert!(
                serde_json::from_str::<Cursor>(&format!("{shape:?}")).is_ok(),
                "{shape}"
            );
        }
        for bad in ["\"\"", "\"x.1\"", "\"12\"", "\"-.1\"", "\"1 .x\"", "7"] {
            assert!(serde_json::from_str::<Cursor>(bad).is_err(), "{bad}");
        }
        let pattern =
            serde_json::to_value(schemars::schema_for!(Cursor)).unwrap()["pattern"].clone();
        assert_eq!(pattern, r"^-?[0-9]+\.");
    }

    #[test]
    fn blank_and_long_values_are_refused_and_the_schema_says_so() {
        let ok: NonBlank<5> = serde_json::from_str("\" ab \"").unwrap();
        assert_eq!((&*ok, ok.trimmed()), (" ab ", "ab"));
        for bad in ["\"\"", "\"  \\t\"", "\"abcdef\"", "3"] {
            assert!(serde_json::from_str::<NonBlank<5>>(bad).is_err(), "{bad}");
        }
        let schema = serde_json::to_value(schemars::schema_for!(NonBlank<5>)).unwrap();
        assert_eq!(schema["maxLength"], 5);
        assert_eq!(schema["minLength"], 1);
        let unbounded = serde_json::to_value(schemars::schema_for!(NonBlank)).unwrap();
        assert!(unbounded.get("maxLength").is_none());
    }

    #[test]
    fn page_bounds_default_refuse_and_show_in_the_schema() {
        #[derive(serde::Deserialize)]
        struct Q {
            #[serde(default)]
            limit: Limit<20, 100>,
            #[serde(default)]
            offset: Offset,
        }
        let q: Q = serde_json::from_str("{}").unwrap();
        assert_eq!((q.limit.get(), q.offset.get()), (20, 0));
        let q: Q = serde_json::from_str(r#"{"limit": null, "offset": 7}"#).unwrap();
        assert_eq!((q.limit.get(), q.offset.get()), (20, 7));
        let q: Q = serde_urlencoded::from_str("limit=100&offset=3").unwrap();
        assert_eq!((q.limit.get(), q.offset.get()), (100, 3));
        for bad in [
            r#"{"limit": 0}"#,
            r#"{"limit": 101}"#,
            r#"{"offset": -1}"#,
            r#"{"limit": "5"}"#,
        ] {
            assert!(serde_json::from_str::<Q>(bad).is_err(), "{bad}");
        }
        assert!(serde_urlencoded::from_str::<Q>("limit=abc").is_err());
        let schema = serde_json::to_value(schemars::schema_for!(Limit<20, 100>)).unwrap();
        assert_eq!(
            (schema["minimum"].clone(), schema["maximum"].clone()),
            (1.into(), 100.into())
        );
        assert_eq!(schema["default"], 20);
        assert_eq!(schema["format"], "int64");
        let open = serde_json::to_value(schemars::schema_for!(Limit<20, { i64::MAX }>)).unwrap();
        assert!(open.get("maximum").is_none());
    }
}
