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

#[cfg(test)]
mod tests {
    use super::NonBlank;

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
}
