//! HTML in a slide: comments (notes, directives, column breaks), `<br>`, Marp's inline
//! marks and `<div>`/`<span>` wrappers, whose content is drawn. Any other HTML is refused.

use crate::{Block, Invalid, MAX_COLUMNS};

use super::builder::SlideBuilder;
use super::directives::{comment_body, directive};
use super::frame::escape_into;

impl SlideBuilder<'_, '_> {
    /// HTML is collected until it is a whole tag, line or comment, then read.
    pub(super) fn html(&mut self, h: &str, block_html: bool) -> Result<(), Invalid> {
        let line = self.line;
        self.html.push_str(h);
        let t = self.html.trim().to_owned();
        let t = t.as_str();
        if is_line_break(t) {
            self.html.clear();
            self.inline.text.push('\n');
            return Ok(());
        }
        let chars: Vec<char> = t.chars().collect();
        if let Some((tag, closes, _)) =
            crate::inline_tag(&chars).filter(|(_, _, len)| *len == chars.len() && !block_html)
        {
            // Marp's inline HTML allowlist: kept as a mark of the text.
            self.html.clear();
            self.inline.other = true;
            self.inline.text.push_str(if closes { "</" } else { "<" });
            self.inline.text.push_str(tag);
            self.inline.text.push('>');
            return Ok(());
        }
        if t.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("<style")) {
            // Marp's CSS for the whole deck, read once the element is whole.
            if let Some(end) = t.to_ascii_lowercase().find("</style>") {
                self.html.clear();
                self.style_element(t, end, line);
            }
            return Ok(());
        }
        if let Some(tag) = wrapper_tags(t) {
            // Marp decks wrap markdown in `<div class="…">` and `<span>` for their
            // CSS: the content is drawn, the wrapper is not.
            self.html.clear();
            self.flush_div_text()?;
            self.in_div_block = block_html && (self.in_div_block || tag == "div");
            self.warnings.push(format!(
                "line {line}: <{tag}> is drawn as its content; its class and style have no effect (plinth draws its own themes)"
            ));
            return Ok(());
        }
        let opens_div = t.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("<div"));
        if let Some(text) = html_text(t).filter(|_| block_html && (self.in_div_block || opens_div))
        {
            return self.div_line(t, &text);
        }
        if !t.starts_with("<!--") {
            // An HTML block (`<div>` with text on its next lines) is not markdown.
            let hint = if self.in_div_block {
                "; to have a <div>'s content drawn, put a blank line after its opening tag and before `</div>`"
            } else {
                ""
            };
            return Err(Invalid(format!(
                "invalid markdown on line {line}: raw HTML is not supported (only `<!-- … -->` comments, `<br>`, and `<div>`/`<span>` wrappers){hint}"
            )));
        }
        if let Some(body) = comment_body(t) {
            let body = body.trim().to_owned();
            self.html.clear();
            if body == "column" {
                return self.column_break();
            }
            directive(&mut self.slide, &mut self.found, &body, line, self.warnings)?;
        }
        Ok(())
    }

    /// A whole `<style>…</style>` (`t`, closed at `end`) whose last line is `line`: its
    /// CSS, from the line of its opening tag, for the deck. `scoped` (Marp's one-slide
    /// CSS) is not drawn.
    fn style_element(&mut self, t: &str, end: usize, line: usize) {
        let first = line.saturating_sub(t.matches('\n').count());
        let Some(open_end) = t[..end].find('>') else {
            return;
        };
        if t[..open_end].to_ascii_lowercase().contains("scoped") {
            self.warnings.push(format!(
                "line {first}: style: <style scoped> (one slide's CSS) is not supported and has no effect"
            ));
            return;
        }
        self.styles.push((first, t[open_end + 1..end].to_owned()));
    }

    /// A line of a `<div>` block, `t`, whose text is `text`: their text and inline marks
    /// make one paragraph (`<div class="accent">One line</div>`, or
    /// `<strong>Goal</strong><br>` on the line after `<div class="box">`).
    fn div_line(&mut self, t: &str, text: &str) -> Result<(), Invalid> {
        let closes = t.to_ascii_lowercase().contains("</div>");
        self.html.clear();
        if !self.in_div_block {
            self.warnings.push(format!(
                "line {}: <div> is drawn as its content; its class and style have no effect (plinth draws its own themes)",
                self.line
            ));
        }
        self.in_div_block = !closes;
        if !self.div_text.is_empty() && !self.div_text.ends_with('\n') {
            self.div_text.push(' ');
        }
        self.div_text.push_str(text);
        if !self.in_div_block {
            self.flush_div_text()?;
        }
        Ok(())
    }

    /// `<!-- column -->`: the next column of the slide starts here.
    fn column_break(&mut self) -> Result<(), Invalid> {
        let line = self.line;
        if !self.stack.is_empty() {
            return Err(Invalid(format!(
                "invalid markdown on line {line}: `<!-- column -->` starts a column of the slide; it cannot sit inside a list or block quote"
            )));
        }
        let breaks = self
            .slide
            .blocks
            .iter()
            .filter(|b| matches!(b, Block::ColumnBreak))
            .count();
        if breaks + 1 >= MAX_COLUMNS {
            return Err(Invalid(format!(
                "invalid markdown on line {line}: a slide has at most {} columns",
                MAX_COLUMNS
            )));
        }
        self.slide.blocks.push(Block::ColumnBreak);
        Ok(())
    }
}

/// `<br>`, `<br/>` and `<br />`, which Marp also allows.
fn is_line_break(t: &str) -> bool {
    let t = t.to_ascii_lowercase();
    matches!(t.as_str(), "<br>" | "<br/>" | "<br />")
}

/// A line of HTML in pieces: tags (lower-case name, whether closing, whether it has
/// attributes) and the text between them. `None` when a tag is not closed on the line.
fn html_pieces(t: &str) -> Option<Vec<HtmlPiece<'_>>> {
    let mut out = Vec::new();
    let mut rest = t.trim();
    while !rest.is_empty() {
        let Some(after) = rest.strip_prefix('<') else {
            let end = rest.find('<').unwrap_or(rest.len());
            out.push(HtmlPiece::Text(&rest[..end]));
            rest = &rest[end..];
            continue;
        };
        let end = after.find('>')?;
        let inner = &after[..end];
        if inner.contains('<') {
            return None;
        }
        let name = inner.strip_prefix('/').unwrap_or(inner);
        let name_end = name
            .find(|c: char| c.is_ascii_whitespace() || c == '/')
            .unwrap_or(name.len());
        out.push(HtmlPiece::Tag {
            name: name[..name_end].to_ascii_lowercase(),
            closing: inner.starts_with('/'),
            attributes: !name[name_end..].trim().is_empty(),
        });
        rest = &after[end + 1..];
    }
    Some(out)
}

enum HtmlPiece<'a> {
    Tag {
        name: String,
        closing: bool,
        attributes: bool,
    },
    Text(&'a str),
}

/// The wrappers plinth draws as their content.
fn wrapper_name(name: &str) -> Option<&'static str> {
    match name {
        "div" => Some("div"),
        "span" => Some("span"),
        _ => None,
    }
}

/// Whether `t` is only opening and closing `<div>` and `<span>` tags (attributes and
/// all, whitespace between): the name of the first, to say what was left undrawn.
/// Anything else, text included, is not a wrapper.
pub(super) fn wrapper_tags(t: &str) -> Option<&'static str> {
    let mut first = None;
    for piece in html_pieces(t)? {
        match piece {
            HtmlPiece::Text(text) if text.trim().is_empty() => {}
            // A closing tag has no attributes.
            HtmlPiece::Tag {
                name,
                closing,
                attributes,
            } if !(closing && attributes) => {
                first.get_or_insert(wrapper_name(&name)?);
            }
            _ => return None,
        }
    }
    first
}

/// One line of HTML as markdown text: its text (the five entities HTML text most often
/// has decoded, markdown characters escaped) with `<strong>`/`<b>`, `<em>`/`<i>`,
/// `<code>` and `<br>` as their marks; `<div>` and `<span>` tags drop out. `None` for
/// any other element, or a line without text.
pub(super) fn html_text(t: &str) -> Option<String> {
    let mut out = String::new();
    let mut text = false;
    for piece in html_pieces(t)? {
        match piece {
            HtmlPiece::Text(plain) => {
                let plain = plain
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&#39;", "'")
                    .replace("&nbsp;", "\u{a0}")
                    .replace("&amp;", "&");
                text |= !plain.trim().is_empty();
                escape_into(&mut out, &plain);
            }
            HtmlPiece::Tag { name, closing, .. } => match name.as_str() {
                "div" | "span" => {}
                "strong" | "b" => out.push_str("**"),
                "em" | "i" => out.push('*'),
                "code" => out.push('`'),
                "br" if !closing => out.push('\n'),
                _ => return None,
            },
        }
    }
    text.then(|| out.trim_matches(' ').to_owned())
}
