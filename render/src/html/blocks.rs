//! A slide's blocks as HTML elements.

use plinth_slides::{link_allowed, spans, Align, Block, ListItem, MAX_NESTING};

use super::out::{escape_into, Out};
use super::pics::{pic, Pics};

pub(super) fn blocks_html<O: Out>(
    out: &mut O,
    blocks: &[Block],
    pics: &mut Pics<'_>,
    depth: usize,
    dark: bool,
) {
    for block in blocks {
        match block {
            Block::Heading { text, level, .. } => {
                // h1 is the slide title; headings in the body are h2 to h6.
                let h = level.unwrap_or(2).clamp(2, 6);
                let _ = write!(out, "<h{h}>");
                marked(out, text, pics);
                let _ = writeln!(out, "</h{h}>");
            }
            Block::Text { text } => {
                out.push_str("<p>");
                marked(out, text, pics);
                out.push_str("</p>\n");
            }
            Block::Bullets {
                items,
                ordered,
                start,
            } => list_html(out, items, (*ordered, *start), pics, depth + 1, dark),
            Block::Code { code, language } => {
                out.push_str("<pre><code");
                if let Some(lang) = language.as_deref().filter(|l| !l.is_empty()) {
                    out.push_str(" class=\"language-");
                    escape_into(out, lang);
                    out.push('"');
                }
                out.push('>');
                out.code(code, language.as_deref(), dark);
                out.push_str("</code></pre>\n");
            }
            Block::Image {
                asset_id,
                alt,
                width,
                height,
            } => image_html(out, pics, asset_id, alt.as_deref(), (*width, *height)),
            Block::Quote { blocks } => {
                out.push_str("<blockquote>\n");
                if depth < MAX_NESTING {
                    blocks_html(out, blocks, pics, depth + 1, dark);
                }
                out.push_str("</blockquote>\n");
            }
            Block::Table {
                align,
                header,
                rows,
            } => table_html(out, pics, align, header, rows),
            Block::Rule => out.push_str("<hr>\n"),
            // `render` splits a slide's blocks at these into `.columns`.
            Block::ColumnBreak => {}
        }
    }
}

/// An image block: sized like the layout when it has a size, a placeholder when the
/// image is missing.
fn image_html<O: Out>(
    out: &mut O,
    pics: &mut Pics<'_>,
    asset_id: &str,
    alt: Option<&str>,
    (width, height): (Option<u32>, Option<u32>),
) {
    let alt = alt.unwrap_or("");
    match pics.images.contains_key(asset_id) {
        true if width.is_some() || height.is_some() => {
            // Sized like the layout: slide pixels in units of the slide.
            out.push_str("<figure class=\"sized\" style=\"");
            if let Some(w) = width {
                let _ = write!(out, "width:calc({w} * var(--u));");
            }
            if let Some(h) = height {
                let _ = write!(out, "height:calc({h} * var(--u));");
            }
            out.push_str("\">");
            pic(out, pics, asset_id, alt, "", "xMidYMid meet");
            out.push_str("</figure>\n");
        }
        true => {
            out.push_str("<figure>");
            pic(out, pics, asset_id, alt, "", "xMidYMid meet");
            out.push_str("</figure>\n");
        }
        false => {
            out.push_str("<div class=\"missing\">[image: ");
            escape_into(out, if alt.is_empty() { "unavailable" } else { alt });
            out.push_str("]</div>\n");
        }
    }
}

fn table_html<O: Out>(
    out: &mut O,
    pics: &mut Pics<'_>,
    align: &[Align],
    header: &[String],
    rows: &[Vec<String>],
) {
    let style = |c: usize| match align.get(c).copied().unwrap_or_default() {
        Align::Center => " style=\"text-align:center\"",
        Align::Right => " style=\"text-align:right\"",
        Align::Left | Align::Auto => "",
    };
    out.push_str("<table>\n<thead><tr>");
    for (c, cell) in header.iter().enumerate() {
        let _ = write!(out, "<th{}>", style(c));
        marked(out, cell, pics);
        out.push_str("</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for (c, cell) in row.iter().enumerate() {
            let _ = write!(out, "<td{}>", style(c));
            marked(out, cell, pics);
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// A list at `depth` (the quotes and lists it sits in, itself included; bounded).
fn list_html<O: Out>(
    out: &mut O,
    items: &[ListItem],
    (ordered, start): (bool, Option<u64>),
    pics: &mut Pics<'_>,
    depth: usize,
    dark: bool,
) {
    let tag = if ordered { "ol" } else { "ul" };
    let _ = write!(out, "<{tag}");
    if let Some(n) = start.filter(|_| ordered) {
        let _ = write!(out, " start=\"{n}\"");
    }
    out.push('>');
    for item in items {
        // A right-to-left item puts its marker on the right, as PNG and PDF do.
        let rtl = unicode_bidi::get_base_direction(plinth_slides::plain(&item.text).as_str())
            == unicode_bidi::Direction::Rtl;
        out.push_str(if rtl { "<li dir=\"rtl\"" } else { "<li" });
        match item.checked {
            Some(done) => {
                out.push_str(" class=\"task\"><input type=\"checkbox\" disabled");
                if done {
                    out.push_str(" checked");
                }
                out.push_str("> ");
            }
            None => out.push('>'),
        }
        marked(out, &item.text, pics);
        if !item.blocks.is_empty() && depth < MAX_NESTING {
            out.push_str("<div class=\"item-blocks\">");
            blocks_html(out, &item.blocks, pics, depth, dark);
            out.push_str("</div>");
        }
        if let Some(sub) = item.list.as_ref().filter(|_| depth < MAX_NESTING) {
            list_html(
                out,
                &sub.items,
                (sub.ordered, sub.start),
                pics,
                depth + 1,
                dark,
            );
        }
        out.push_str("</li>");
    }
    let _ = writeln!(out, "</{tag}>");
}

/// Inline marks as `<strong>`, `<em>`, `<s>`, `<code>`, `<a>` and inline images; line
/// breaks in the text stay line breaks (`white-space: pre-line`).
pub(super) fn marked<O: Out>(out: &mut O, text: &str, pics: &mut Pics<'_>) {
    let mut open_link: Option<String> = None;
    for span in spans(text) {
        if open_link != span.link {
            if open_link.take().is_some() {
                out.push_str("</a>");
            }
            // Only allowed schemes reach here (validation), checked again anyway.
            if let Some(url) = span.link.as_deref().filter(|u| link_allowed(u)) {
                out.push_str("<a href=\"");
                escape_into(out, url);
                out.push_str("\">");
                open_link = Some(url.to_owned());
            }
        }
        if let Some(id) = &span.image {
            if !pic(out, pics, id, &span.text, "inline", "xMidYMid meet") {
                out.push('[');
                escape_into(out, &span.text);
                out.push(']');
            }
            continue;
        }
        let tags: Vec<&str> = [
            (span.bold, "strong"),
            (span.italic, "em"),
            (span.strike, "s"),
            (span.code, "code"),
            (span.sub, "sub"),
            (span.sup, "sup"),
            (span.small, "small"),
            (span.mark, "mark"),
            (span.underline, "u"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, t)| *t)
        .collect();
        for t in &tags {
            let _ = write!(out, "<{t}>");
        }
        escape_into(out, &span.text);
        for t in tags.iter().rev() {
            let _ = write!(out, "</{t}>");
        }
    }
    if open_link.is_some() {
        out.push_str("</a>");
    }
}
