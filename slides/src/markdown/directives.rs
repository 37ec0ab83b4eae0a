//! Directives in HTML comments: Marp's `key: value` settings, `hidden`, `layout`, `fit`,
//! and speaker notes.

use crate::{Deck, Invalid, Layout, Slide, Theme};

use super::values::{color, paginate, yaml_scalar, PAGINATE_VALUES};

/// Marp directives read from comments: `key: value` applies to this slide and the
/// ones after it, `_key: value` to this slide only.
#[derive(Default, Clone)]
pub(super) struct Directives {
    /// The slide chose its layout with `<!-- layout: … -->` (a class does not change it).
    pub(super) layout_set: bool,
    pub(super) class: Option<String>,
    /// As [`paginate`] answers.
    pub(super) paginate: Option<(bool, bool)>,
    pub(super) header: Option<String>,
    pub(super) footer: Option<String>,
    pub(super) background_color: Option<String>,
    pub(super) color: Option<String>,
}

impl Directives {
    pub(super) fn merge(&mut self, other: Directives) {
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f; } )* };
        }
        take!(class, paginate, header, footer, background_color, color);
        self.layout_set |= other.layout_set;
    }

    pub(super) fn apply(
        self,
        slide: &mut Slide,
        deck: &Deck,
        line: usize,
        warnings: &mut Vec<String>,
    ) {
        if let Some(class) = &self.class {
            for c in class.split_whitespace() {
                match c {
                    "lead" if !self.layout_set => slide.layout = Layout::Title,
                    "lead" => {}
                    "invert" => {
                        slide.theme = Some(match deck.theme {
                            Theme::Light => Theme::Dark,
                            Theme::Dark => Theme::Light,
                        })
                    }
                    // Kept for the deck's styles to pick the slide by; a class no
                    // rule names is warned once the whole deck is read.
                    other
                        if crate::is_class_name(other)
                            && slide.classes.len() < crate::MAX_CLASSES =>
                    {
                        if !slide.classes.iter().any(|c| c == other) {
                            slide.classes.push(other.to_owned());
                        }
                    }
                    other => warnings.push(format!(
                        "slide at line {line}: class `{other}` is not supported and has no effect"
                    )),
                }
            }
        }
        if let Some((on, counted)) = self.paginate {
            if on != deck.paginate {
                slide.paginate = Some(on);
            }
            slide.uncounted = !counted;
        }
        if self.header.is_some() && self.header != deck.header {
            slide.header = self.header;
        }
        if self.footer.is_some() && self.footer != deck.footer {
            slide.footer = self.footer;
        }
        if self.background_color.is_some() && self.background_color != deck.background_color {
            slide.background_color = self.background_color;
        }
        if self.color.is_some() && self.color != deck.color {
            slide.color = self.color;
        }
    }
}

/// The text of a complete `<!-- … -->` comment, or `None` while it is still open.
/// `<!-->` and `<!--->` are empty comments (as in HTML); the markers never overlap.
pub(super) fn comment_body(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("<!--")?;
    if rest == ">" || rest == "->" {
        return Some("");
    }
    rest.strip_suffix("-->")
}

/// `hidden`, `layout: title|content`, `notes: …`; any other comment is speaker notes.
/// What one slide's comments set.
#[derive(Default)]
pub(super) struct Found {
    /// `_key: value`: this slide only.
    pub(super) local: Directives,
    /// `key: value`: this slide and the ones after it.
    pub(super) global: Directives,
    /// A `<!-- fit -->` seen in the heading being read.
    pub(super) fit: bool,
}

const MARP_IGNORED: &[&str] = &[
    "theme",
    "style",
    "size",
    "marp",
    "math",
    "lang",
    "headingDivider",
    "backgroundImage",
    "backgroundPosition",
    "backgroundRepeat",
    "backgroundSize",
    "transition",
];

/// `hidden`, `layout: title|content`, `notes: …`, Marp's `fit` and directives
/// (`class`, `paginate`, `header`, `footer`, `backgroundColor`, `color`, each also with a
/// leading `_` for this slide only); any other comment is speaker notes.
pub(super) fn directive(
    slide: &mut Slide,
    found: &mut Found,
    body: &str,
    line: usize,
    warnings: &mut Vec<String>,
) -> Result<(), Invalid> {
    if body == "hidden" || body == "hidden: true" {
        slide.hidden = true;
        return Ok(());
    }
    if body == "fit" {
        found.fit = true;
        return Ok(());
    }
    if let Some(layout) = body.strip_prefix("layout:") {
        slide.layout = match layout.trim() {
            "title" => Layout::Title,
            "content" => Layout::Content,
            other => {
                return Err(Invalid(format!(
                    "invalid markdown on line {line}: unknown layout `{other}` (title or content)"
                )))
            }
        };
        found.local.layout_set = true;
        return Ok(());
    }
    let pairs: Option<Vec<(&str, String)>> = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.split_once(':')?;
            let k = k.trim();
            let bare = k.strip_prefix('_').unwrap_or(k);
            let known = matches!(
                bare,
                "class" | "paginate" | "header" | "footer" | "backgroundColor" | "color"
            ) || MARP_IGNORED.contains(&bare);
            known.then(|| (k, yaml_scalar(v)))
        })
        .collect();
    if let Some(pairs) = pairs.filter(|p| !p.is_empty()) {
        for (key, value) in pairs {
            let (target, bare) = match key.strip_prefix('_') {
                Some(bare) => (&mut found.local, bare),
                None => (&mut found.global, key),
            };
            let bad = |what: &str| Invalid(format!("invalid markdown on line {line}: {what}"));
            match bare {
                "class" => target.class = Some(value),
                "paginate" => {
                    target.paginate = Some(paginate(&value).ok_or_else(|| bad(PAGINATE_VALUES))?)
                }
                "header" => target.header = Some(value),
                "footer" => target.footer = Some(value),
                "backgroundColor" => {
                    color(&value).map_err(|e| bad(&e))?;
                    target.background_color = Some(value);
                }
                "color" => {
                    color(&value).map_err(|e| bad(&e))?;
                    target.color = Some(value);
                }
                other => warnings.push(format!(
                    "line {line}: directive `{other}` is not supported here and has no effect"
                )),
            }
        }
        return Ok(());
    }
    let note = body.strip_prefix("notes:").unwrap_or(body).trim();
    if !note.is_empty() {
        let notes = slide.notes.get_or_insert_with(String::new);
        if !notes.is_empty() {
            notes.push('\n');
        }
        notes.push_str(note);
    }
    Ok(())
}
