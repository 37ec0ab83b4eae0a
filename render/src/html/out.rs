//! Where the page is written: a `String`, or a counter that measures it.

use std::fmt::Write;

use base64::Engine;

/// Where the page is written.
pub(super) trait Out: Write {
    fn push_str(&mut self, s: &str);
    fn push(&mut self, c: char);
    /// A size in CSS pixels: at most 9 characters.
    fn number(&mut self, v: f32);
    fn base64(&mut self, bytes: &[u8]);
    /// A code block's content, highlighted.
    fn code(&mut self, code: &str, language: Option<&str>, dark: bool);
}

impl Out for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
    fn number(&mut self, v: f32) {
        String::push_str(self, &crate::svg::num(v.clamp(0.0, 999_999.0)));
    }
    fn base64(&mut self, bytes: &[u8]) {
        base64::engine::general_purpose::STANDARD.encode_string(bytes, self);
    }
    fn code(&mut self, code: &str, language: Option<&str>, dark: bool) {
        match crate::highlight::highlight(code, language, dark) {
            Some(lines) => {
                for (i, line) in lines.iter().enumerate() {
                    if i > 0 {
                        String::push(self, '\n');
                    }
                    for (colour, text) in line {
                        let _ = write!(self, "<span style=\"color:{}\">", colour.hex());
                        escape_into(self, text);
                        String::push_str(self, "</span>");
                    }
                }
            }
            None => escape_into(self, code.trim_end_matches('\n')),
        }
    }
}

/// Counts what would be written; numbers and highlighted code at their longest.
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
    fn code(&mut self, code: &str, _: Option<&str>, _: bool) {
        // Each character its own run: `<span style="color:#rrggbb">` and `</span>`
        // (35 bytes) around at most 6 bytes of escaped text; tabs become 4 spaces.
        self.0 += 41 * code.len() as u64;
    }
}

pub(super) fn escape_into<O: Out>(out: &mut O, text: &str) {
    crate::svg::escape_into(out, text);
}
