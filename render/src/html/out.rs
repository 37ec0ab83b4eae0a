//! Where the page is written: a `String`, or a counter that measures it.

use std::fmt::Write;

use base64::Engine;

/// Where the page is written.
pub(super) trait Out: Write {
    fn push_str(&mut self, s: &str);
    fn push(&mut self, c: char);
    /// A position or size in layout units: at most 9 characters.
    fn number(&mut self, v: f32);
    fn base64(&mut self, bytes: &[u8]);
}

impl Out for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
    fn number(&mut self, v: f32) {
        // Images centred in a cover box start left of or above the slide.
        String::push_str(self, &crate::svg::num(v.clamp(-99_999.0, 999_999.0)));
    }
    fn base64(&mut self, bytes: &[u8]) {
        base64::engine::general_purpose::STANDARD.encode_string(bytes, self);
    }
}

/// Counts what would be written; numbers at their longest.
pub(super) struct Count(pub(super) u64);

impl Write for Count {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len() as u64;
        Ok(())
    }
}

impl Out for Count {
    fn push_str(&mut self, s: &str) {
        self.0 += s.len() as u64;
    }
    fn push(&mut self, c: char) {
        self.0 += c.len_utf8() as u64;
    }
    fn number(&mut self, _: f32) {
        self.0 += 9;
    }
    fn base64(&mut self, bytes: &[u8]) {
        self.0 += (bytes.len() as u64).div_ceil(3) * 4;
    }
}

pub(super) fn escape_into<O: Out>(out: &mut O, text: &str) {
    crate::svg::escape_into(out, text);
}
