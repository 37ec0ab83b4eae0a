//! A laid-out page as positioned elements: each text run a span at its baseline, each
//! box and image at its place, in units of the slide (`--x`, `--y`… times `--u`, see
//! the style sheet). The parts the layout marks become elements around their items
//! (`<h1>`, `<p>`, `role="list"`…), which take no room themselves: they are what a
//! screen reader announces and what a copy reads as lines (`<br>` between a part's
//! lines, since positioned runs do not break lines when copied).

use plinth_slides::link_allowed;

use crate::fonts::{registry, FontKey};
use crate::layout::{Color, Item, Role};

use super::head::baseline_drop;
use super::out::{escape_into, Out};
use super::pics::Pics;

/// Headings in the body are h2 to h6 (h1 is the slide's title).
const HEADINGS: [(&str, &str); 5] = [
    ("<h2>", "</h2>"),
    ("<h3>", "</h3>"),
    ("<h4>", "</h4>"),
    ("<h5>", "</h5>"),
    ("<h6>", "</h6>"),
];

/// A part whose element is open.
struct Open {
    /// The closing tag, and what follows it (a space after a list marker, so that a
    /// copy reads "• item").
    close: &'static str,
    then: &'static str,
    /// A code block's line spacing: blank lines count as lines when copied.
    line_h: Option<f32>,
}

pub(super) struct Items<'o, 'p, 'a, O: Out> {
    out: &'o mut O,
    pics: &'p mut Pics<'a>,
    /// The section's text colour (runs in it leave theirs out).
    text: Color,
    open: Vec<Open>,
    /// The next image's alt text (its part's).
    alt: Option<String>,
    /// The last run's baseline and size in the current part, to tell a new line.
    line: Option<(f32, f32)>,
}

impl<'o, 'p, 'a, O: Out> Items<'o, 'p, 'a, O> {
    pub(super) fn new(out: &'o mut O, pics: &'p mut Pics<'a>, text: Color) -> Self {
        Items {
            out,
            pics,
            text,
            open: Vec::new(),
            alt: None,
            line: None,
        }
    }

    /// Every item in order (the order the layout made them: the document's).
    pub(super) fn write(mut self, items: &[Item]) {
        for (i, item) in items.iter().enumerate() {
            match item {
                Item::Begin(role) => self.begin(role),
                Item::End => self.end(),
                Item::Text { .. } => self.text(item, link_after(items, i)),
                Item::Image { .. } => self.image(item, link_after(items, i)),
                Item::Rect {
                    x,
                    y,
                    w,
                    h,
                    r,
                    fill,
                } => {
                    self.out.push_str("<span class=\"r\" style=\"");
                    self.vars(&[("x", *x), ("y", *y), ("w", *w), ("h", *h)]);
                    if *r > 0.0 {
                        self.vars(&[("r", *r)]);
                    }
                    let _ = write!(self.out, "background:{}\"></span>", fill.hex());
                }
                Item::Link { x, y, w, h, url } => self.link_box((*x, *y, *w, *h), url),
            }
            if self.open.is_empty() {
                self.out.push('\n');
            }
        }
        // The layout closes every part it opens; a cut page may not have.
        while !self.open.is_empty() {
            self.end();
        }
    }

    fn begin(&mut self, role: &Role) {
        let (open, close) = match role {
            Role::Title => ("<h1>", "</h1>"),
            Role::Heading(level) => HEADINGS[(*level).clamp(2, 6) as usize - 2],
            Role::Paragraph => ("<p>", "</p>"),
            Role::List { ordered: false } => ("<ul role=\"list\">", "</ul>"),
            Role::List { ordered: true } => ("<ol role=\"list\">", "</ol>"),
            Role::ListItem => ("<li role=\"listitem\">", "</li>"),
            Role::Marker => ("<span aria-hidden=\"true\">", "</span>"),
            Role::Code { .. } => ("<pre>", "</pre>"),
            Role::Quote => ("<blockquote>", "</blockquote>"),
            Role::Table => ("<div role=\"table\">", "</div>"),
            Role::Row => ("<div role=\"row\">", "</div>"),
            Role::Cell { header: true } => ("<div role=\"columnheader\">", "</div>"),
            Role::Cell { header: false } => ("<div role=\"cell\">", "</div>"),
            Role::Image { alt } => {
                self.alt = Some(alt.clone());
                ("", "")
            }
            Role::Header => ("<header>", "</header>"),
            Role::Footer => ("<footer>", "</footer>"),
            Role::PageNumber => ("<div class=\"page-number\">", "</div>"),
        };
        // An element of its own starts a new line of copied text anyway.
        if !matches!(role, Role::Image { .. } | Role::Marker) {
            self.line = None;
        }
        self.out.push_str(open);
        let line_h = match role {
            Role::Code { line_h } => Some(*line_h),
            _ => None,
        };
        let then = if *role == Role::Marker { " " } else { "" };
        self.open.push(Open {
            close,
            then,
            line_h,
        });
    }

    fn end(&mut self) {
        if let Some(open) = self.open.pop() {
            self.out.push_str(open.close);
            self.out.push_str(open.then);
            if !open.close.is_empty() && open.close != "</span>" {
                self.line = None;
            }
        }
        self.alt = None;
    }

    /// `--name:value;` for each pair.
    fn vars(&mut self, pairs: &[(&str, f32)]) {
        for (name, v) in pairs {
            let _ = write!(self.out, "--{name}:");
            self.out.number(*v);
            self.out.push(';');
        }
    }

    /// A run of text, its box's top set so its baseline is the layout's.
    fn text(&mut self, item: &Item, link: Option<&str>) {
        let Item::Text {
            x,
            y,
            size,
            font,
            fill,
            text,
            ..
        } = item
        else {
            return;
        };
        self.line_break(*y, *size);
        if let Some(url) = link {
            self.out.push_str("<a href=\"");
            escape_into(self.out, url);
            self.out.push_str("\">");
        }
        if font.0 < 4 {
            let _ = write!(self.out, "<span class=\"t f{}\" style=\"", font.0);
        } else {
            self.out.push_str("<span class=\"t\" style=\"");
            self.fallback_font(*font);
        }
        self.vars(&[("x", *x), ("y", *y), ("s", *size)]);
        if *fill != self.text {
            let _ = write!(self.out, "color:{}", fill.hex());
        }
        self.out.push_str("\">");
        escape_into(self.out, text);
        self.out.push_str("</span>");
        if link.is_some() {
            self.out.push_str("</a>");
        }
    }

    /// A fallback face (another script's, emoji) by its family, weight and style.
    fn fallback_font(&mut self, font: FontKey) {
        let f = registry().font(font);
        let generic = if f.monospaced {
            "monospace"
        } else {
            "sans-serif"
        };
        self.out.push_str("font-family:'");
        escape_into(self.out, &f.family.replace(['\'', '\\'], ""));
        let _ = write!(self.out, "',{generic};font-weight:{};", f.weight);
        if f.italic {
            self.out.push_str("font-style:italic;");
        }
        self.vars(&[("k", baseline_drop(font))]);
    }

    /// A line break before a run on a new line of the same part (in code, one per
    /// line passed, blank ones included).
    fn line_break(&mut self, y: f32, size: f32) {
        if let Some((prev_y, prev_size)) = self.line {
            let dy = y - prev_y;
            let code = self.open.iter().rev().find_map(|o| o.line_h);
            let breaks = match code {
                Some(line_h) if line_h > 0.0 => (dy / line_h).round().clamp(0.0, 1000.0) as usize,
                _ => usize::from(dy.abs() > 0.6 * size.max(prev_size)),
            };
            for _ in 0..breaks {
                self.out.push_str("<br>");
            }
        }
        self.line = Some((y, size));
    }

    /// An image in its box (in its clip's, when it has one); announced by its alt
    /// text, or hidden from screen readers when it has none (backgrounds too).
    fn image(&mut self, item: &Item, link: Option<&str>) {
        let Item::Image {
            x,
            y,
            w,
            h,
            asset_id,
            clip,
        } = item
        else {
            return;
        };
        let Some((k, nw, nh)) = self.pics.get(asset_id) else {
            return;
        };
        let (ox, oy) = match clip {
            Some([cx, cy, cw, ch]) => {
                self.out.push_str("<span class=\"c\" style=\"");
                self.vars(&[("x", *cx), ("y", *cy), ("w", *cw), ("h", *ch)]);
                self.out.push_str("\">");
                (*cx, *cy)
            }
            None => (0.0, 0.0),
        };
        if let Some(url) = link {
            self.out.push_str("<a href=\"");
            escape_into(self.out, url);
            self.out.push_str("\">");
        }
        self.out.push_str("<svg class=\"i\" style=\"");
        self.vars(&[("x", x - ox), ("y", y - oy), ("w", *w), ("h", *h)]);
        self.out.push_str("\" viewBox=\"0 0 ");
        self.out.number(nw);
        self.out.push(' ');
        self.out.number(nh);
        self.out.push_str("\" preserveAspectRatio=\"none\"");
        // An image without alt text is decoration, as `alt=""` is in HTML.
        match self.alt.take().filter(|alt| !alt.trim().is_empty()) {
            Some(alt) => {
                self.out.push_str(" role=\"img\" aria-label=\"");
                escape_into(self.out, &alt);
                self.out.push('"');
            }
            None => self.out.push_str(" aria-hidden=\"true\""),
        }
        let _ = write!(self.out, "><use href=\"#pic-{k}\"/></svg>");
        if link.is_some() {
            self.out.push_str("</a>");
        }
        if clip.is_some() {
            self.out.push_str("</span>");
        }
    }

    /// A link's clickable box, as the PDF's annotation: for the pointer only (the
    /// run it covers is the link for the keyboard and screen readers).
    fn link_box(&mut self, (x, y, w, h): (f32, f32, f32, f32), url: &str) {
        // Only allowed schemes reach here (validation), checked again anyway.
        if !link_allowed(url) {
            return;
        }
        self.out.push_str("<a class=\"a\" href=\"");
        escape_into(self.out, url);
        self.out
            .push_str("\" tabindex=\"-1\" aria-hidden=\"true\" style=\"");
        self.vars(&[("x", x), ("y", y), ("w", w), ("h", h)]);
        self.out.push_str("\"></a>");
    }
}

/// The link a text run or inline image is: the layout puts its link's box right after
/// it (after the lines drawn over it), starting where it starts.
fn link_after(items: &[Item], i: usize) -> Option<&str> {
    let start = match &items[i] {
        Item::Text { x, .. } | Item::Image { x, .. } => *x,
        _ => return None,
    };
    for item in &items[i + 1..] {
        match item {
            Item::Rect { .. } | Item::End => continue,
            Item::Link { x, url, .. } if (x - start).abs() < 0.01 && link_allowed(url) => {
                return Some(url.as_str())
            }
            _ => return None,
        }
    }
    None
}
