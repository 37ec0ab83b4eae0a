//! Bounds on JSON nesting, measured without recursion (security round 2, H1).
//!
//! serde_json refuses to parse more than 128 levels, but values the server builds itself
//! (markdown turned into editor nodes) have no such bound, and a stored value deeper than
//! 128 can never be read back. So every request body is limited to [`MAX_DEPTH`] levels
//! before it is parsed, every `data` written is checked against the same bound, and a row
//! stored before these checks existed is read through [`parse_lenient`], which replaces
//! what lies deeper than the bound with `null` instead of failing.

use serde_json::Value;

/// Deepest JSON a request body or a stored `data` value may be: arrays and objects
/// counted, the outermost one is level 1. Below serde_json's own limit of 128, so that
/// whatever is accepted can be read back even with a wrapper or two around it.
pub const MAX_DEPTH: usize = 100;

/// The nesting depth of JSON text (`0` for a scalar), counted in one pass over the bytes.
/// Malformed text is measured as far as it goes: the parser that runs next reports it.
pub fn depth_of_text(text: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut in_string = false;
    let mut escaped = false;
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The nesting depth of a value, walked with an explicit stack.
pub fn depth_of(value: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, level)) = stack.pop() {
        match v {
            Value::Array(items) => {
                max = max.max(level);
                stack.extend(items.iter().map(|i| (i, level + 1)));
            }
            Value::Object(fields) => {
                max = max.max(level);
                stack.extend(fields.values().map(|i| (i, level + 1)));
            }
            _ => {}
        }
    }
    max
}

/// JSON text with every array or object deeper than `max` levels replaced by `null`, in
/// one pass without recursion. The input is assumed to be valid JSON (it was stored by
/// this server); the output then is too.
pub fn truncate_text(text: &str, max: usize) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut depth = 0usize;
    // While skipping a too-deep subtree: the depth at which it started.
    let mut skipping: Option<usize> = None;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            if skipping.is_none() {
                out.push(b);
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if skipping.is_none() && depth > max {
                    skipping = Some(depth);
                    out.extend_from_slice(b"null");
                }
            }
            b']' | b'}' => {
                let closing = depth;
                depth = depth.saturating_sub(1);
                if skipping == Some(closing) {
                    skipping = None;
                    continue;
                }
            }
            _ => {}
        }
        if skipping.is_none() {
            out.push(b);
        }
    }
    // Only whole ASCII bytes were dropped, so the rest is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// A stored JSON value: parsed as it is, or, when it is nested beyond what serde_json
/// reads (rows written before the depth checks), with the parts deeper than
/// [`MAX_DEPTH`] replaced by `null`, so the row can still be read, listed and deleted.
pub fn parse_lenient(text: &str) -> serde_json::Result<Value> {
    match serde_json::from_str(text) {
        Err(e) if depth_of_text(text.as_bytes()) > MAX_DEPTH => {
            serde_json::from_str(&truncate_text(text, MAX_DEPTH)).map_err(|_| e)
        }
        other => other,
    }
}

/// The length of `value` as JSON, counted without keeping the text.
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    let _ = serde_json::to_writer(&mut n, value);
    n.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_counts_containers_and_ignores_brackets_in_strings() {
        assert_eq!(depth_of_text(b"1"), 0);
        assert_eq!(depth_of_text(b"{}"), 1);
        assert_eq!(depth_of_text(br#"{"a":[{"b":"[[[[\"{"}]}"#), 3);
        assert_eq!(depth_of_text(nested(1000).as_bytes()), 1000);
        assert_eq!(depth_of(&json!({"a": [{"b": "[["}]})), 3);
        assert_eq!(depth_of(&json!(1)), 0);
    }

    #[test]
    fn depth_of_a_deep_value_does_not_recurse() {
        // Built without serde (whose parser would refuse it) and dropped by hand, level by
        // level, so neither the walk nor the test itself recurses.
        let mut v = json!(1);
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(depth_of(&v), 100_000);
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn too_deep_parts_become_null() {
        assert_eq!(truncate_text(&nested(3), 2), "[[null]]");
        assert_eq!(
            truncate_text(r#"{"a":{"b":{"c":"}]"}},"d":[1,"x"]}"#, 2),
            r#"{"a":{"b":null},"d":[1,"x"]}"#
        );
        let deep = format!(r#"{{"body":"> x","doc":{}}}"#, nested(5000));
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        let v = parse_lenient(&deep).unwrap();
        assert_eq!(v["body"], "> x");
        assert_eq!(depth_of(&v), MAX_DEPTH);
        // Shallow text is parsed as it is.
        assert_eq!(parse_lenient(r#"{"a":[1]}"#).unwrap(), json!({"a": [1]}));
        assert!(parse_lenient("{").is_err());
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[\\[\\]{}\"\\\\a-z]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(12, 256, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\\[{\"]{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The byte scan and the walk agree, brackets inside strings included, and a
        /// truncated text is valid JSON no deeper than asked.
        #[test]
        fn the_scan_the_walk_and_the_truncation_agree(v in any_json(), max in 0usize..8) {
            let text = serde_json::to_string(&v).unwrap();
            proptest::prop_assert_eq!(depth_of_text(text.as_bytes()), depth_of(&v));
            let cut: Value = serde_json::from_str(&truncate_text(&text, max)).unwrap();
            proptest::prop_assert!(depth_of(&cut) <= max);
            if depth_of(&v) <= max {
                proptest::prop_assert_eq!(cut, v);
            }
        }
    }
}
