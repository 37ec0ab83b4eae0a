//! Marp's `style:` CSS (front matter and `<style>` elements), read into the deck's
//! [`StyleRule`]s. Only `selector { property: value; }` rules are read: the subset
//! plinth draws is small enough that a strict splitter says more, line by line, about
//! what it skips than a general CSS parser would (see `docs/slides.md`).

use crate::{
    is_class_name, parse_color, FontSize, StyleElement, StyleRule, FONT_EM, FONT_PX,
    MAX_STYLE_RULES,
};

/// Warnings one `style:` or `<style>` gives before the rest are only counted.
const MAX_WARNINGS: usize = 50;

/// Marp's slide is 1280×720 CSS pixels; plinth's canvas is 1920×1080.
const PX_SCALE: f32 = 1.5;

/// What the CSS of one `style:` or `<style>` read into: its rules, where each was
/// written, and a warning for everything else.
pub(super) struct Sheet<'a> {
    pub(super) rules: &'a mut Vec<StyleRule>,
    /// Where each rule in `rules` was written (`front matter line 9`), for warnings
    /// found after reading (contrast).
    pub(super) places: &'a mut Vec<String>,
    pub(super) warnings: &'a mut Vec<String>,
    /// How a line is named: `front matter line 9` or `line 14`.
    pub(super) place: &'a dyn Fn(usize) -> String,
}

impl Sheet<'_> {
    /// Reads `css`, whose first line is line `first` of the deck. At most
    /// [`MAX_WARNINGS`] warnings each, then how many more there were.
    pub(super) fn read(&mut self, css: &str, first: usize) {
        let before = self.warnings.len();
        self.read_all(css, first);
        let said = self.warnings.len() - before;
        if said > MAX_WARNINGS {
            self.warnings.truncate(before + MAX_WARNINGS);
            self.warnings.push(format!(
                "{}: style: {} more warnings about this CSS not shown",
                (self.place)(first),
                said - MAX_WARNINGS
            ));
        }
    }

    fn read_all(&mut self, css: &str, first: usize) {
        let css = without_comments(css);
        // Line starts, searched rather than rescanned: a hostile sheet of many short
        // declarations stays linear.
        let starts: Vec<usize> = css.match_indices('\n').map(|(i, _)| i).collect();
        let line_of = |at: usize| first + starts.partition_point(|&s| s < at);
        let mut at = 0;
        while let Some(skip) = css[at..].find(|c: char| !c.is_whitespace()) {
            let start = at + skip;
            let Some(open) = css[start..].find(['{', ';', '}']).map(|i| start + i) else {
                self.warn(
                    line_of(start),
                    "text outside a rule is not CSS plinth reads",
                );
                return;
            };
            let prelude = css[start..open].trim();
            let at_rule = prelude
                .split_whitespace()
                .next()
                .filter(|n| n.starts_with('@'));
            if let Some(name) = at_rule.filter(|_| !css[open..].starts_with('{')) {
                self.warn(
                    line_of(start),
                    &format!("`{name}` rules are not supported and have no effect"),
                );
                at = open + 1;
                continue;
            }
            if !css[open..].starts_with('{') {
                self.warn(
                    line_of(start),
                    &format!("`{prelude}` is not a rule; ignored"),
                );
                at = open + 1;
                continue;
            }
            let Some(close) = block_end(&css, open) else {
                self.warn(
                    line_of(start),
                    "a rule is not closed with `}`; the rest is ignored",
                );
                return;
            };
            if let Some(name) = at_rule {
                self.warn(
                    line_of(start),
                    &format!("`{name}` rules are not supported and have no effect"),
                );
            } else if css[open + 1..close].contains('{') {
                self.warn(
                    line_of(start),
                    &format!("`{prelude}`: nested rules are not supported and have no effect"),
                );
            } else {
                self.rule(&css, prelude, line_of(start), open + 1..close, &line_of);
            }
            at = close + 1;
        }
    }

    /// One `selectors { declarations }` rule: one [`StyleRule`] per selector plinth
    /// draws, with the declarations it takes.
    fn rule(
        &mut self,
        css: &str,
        prelude: &str,
        line: usize,
        body: std::ops::Range<usize>,
        line_of: &dyn Fn(usize) -> usize,
    ) {
        let mut targets = Vec::new();
        for selector in prelude.split(',').map(str::trim) {
            match target(selector) {
                Some(t) => targets.push(t),
                None => self.warn(line, &format!(
                    "selector `{selector}` is not one plinth styles (section, section.<class>, h1, h2, h3, p, table, th, td, code, pre, header, footer, or `section …` before one); its rule has no effect there"
                )),
            }
        }
        let mut rules: Vec<StyleRule> = targets
            .into_iter()
            .map(|(class, element)| StyleRule {
                class,
                element,
                color: None,
                background_color: None,
                font_size: None,
                font_weight: None,
            })
            .collect();
        let mut offset = body.start;
        for decl in css[body.clone()].split(';') {
            let at = line_of(offset + decl.len() - decl.trim_start().len());
            offset += decl.len() + 1;
            if decl.trim().is_empty() || rules.is_empty() {
                continue;
            }
            let mut why: Vec<String> = rules
                .iter_mut()
                .filter_map(|rule| declaration(rule, decl).err())
                .collect();
            why.dedup(); // once per declaration, not once per selector
            for why in why {
                self.warn(at, &why);
            }
        }
        for rule in rules.into_iter().filter(has_effect) {
            if self.rules.len() >= MAX_STYLE_RULES {
                self.warn(
                    line,
                    &format!("at most {MAX_STYLE_RULES} style rules; this one is ignored"),
                );
                return;
            }
            self.rules.push(rule);
            self.places.push((self.place)(line));
        }
    }

    fn warn(&mut self, line: usize, what: &str) {
        self.warnings
            .push(format!("{}: style: {what}", (self.place)(line)));
    }
}

fn has_effect(r: &StyleRule) -> bool {
    r.color.is_some()
        || r.background_color.is_some()
        || r.font_size.is_some()
        || r.font_weight.is_some()
}

/// The CSS with its `/* … */` comments blanked out, line breaks kept (so lines still
/// count); an unclosed comment runs to the end, as in CSS.
fn without_comments(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        let end = rest[i + 2..]
            .find("*/")
            .map_or(rest.len(), |j| i + 2 + j + 2);
        out.extend(
            rest[i..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The `}` that closes the block opened at `open` (nested blocks counted).
fn block_end(css: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in css[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A selector plinth styles: `h1`, `section`, `section.lead`, `section h1`,
/// `section.invert h1` (a section's class, then an element in it).
fn target(selector: &str) -> Option<(Option<String>, StyleElement)> {
    let parts: Vec<&str> = selector.split_whitespace().collect();
    let element = |name: &str| {
        StyleElement::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, e)| *e)
    };
    let section = |part: &str| -> Option<Option<String>> {
        let (name, class) = part
            .split_once('.')
            .map_or((part, None), |(n, c)| (n, Some(c)));
        if !name.eq_ignore_ascii_case("section") || class.is_some_and(|c| !is_class_name(c)) {
            return None;
        }
        Some(class.map(str::to_owned))
    };
    match parts.as_slice() {
        [one] => match section(one) {
            Some(class) => Some((class, StyleElement::Section)),
            None => Some((None, element(one)?)),
        },
        [outer, inner] => {
            let class = section(outer)?;
            Some((
                class,
                element(inner).filter(|e| *e != StyleElement::Section)?,
            ))
        }
        _ => None,
    }
}

/// One `property: value` into `rule`, or why it has no effect.
fn declaration(rule: &mut StyleRule, decl: &str) -> Result<(), String> {
    let Some((name, value)) = decl.split_once(':') else {
        return Err(format!(
            "`{}` is not a `property: value` declaration",
            decl.trim()
        ));
    };
    let name = name.trim().to_ascii_lowercase();
    let value = value.trim();
    let value = value
        .strip_suffix("!important")
        .map_or(value, str::trim_end);
    let element = rule.element;
    let unsupported = || format!("`{name}` is not supported and has no effect");
    let on = |ok: &[StyleElement]| {
        if ok.contains(&element) {
            Ok(())
        } else {
            Err(format!(
                "`{name}` on `{}` is not supported and has no effect",
                element.name()
            ))
        }
    };
    let colour = |v: &str| {
        parse_color(v).map(|_| v.to_owned()).ok_or_else(|| {
            format!("`{name}: {v}`: plinth reads #rrggbb, #rgb, rgb(r, g, b) or a basic colour name; no effect")
        })
    };
    use StyleElement::*;
    match name.as_str() {
        "color" => rule.color = Some(colour(value)?),
        "background-color" | "background" => {
            on(&[Section, Table, Th, Td, Code, Pre])?;
            if name == "background" && parse_color(value).is_none() {
                return Err(format!(
                    "`background: {value}`: only a plain colour is supported; no effect"
                ));
            }
            rule.background_color = Some(colour(value)?);
        }
        "font-size" => {
            on(&[Section, H1, H2, H3, P, Table, Code, Pre, Header, Footer])?;
            rule.font_size = Some(font_size(value).ok_or_else(|| {
                format!(
                    "`font-size: {value}`: plinth reads px ({}–{}), em, rem or %; no effect",
                    FONT_PX.0 / PX_SCALE,
                    FONT_PX.1 / PX_SCALE
                )
            })?);
        }
        "font-weight" => {
            on(&[H1, H2, H3, P, Header, Footer])?;
            rule.font_weight = Some(match value.to_ascii_lowercase().as_str() {
                "normal" => 400,
                "bold" => 700,
                v => v
                    .parse::<u16>()
                    .ok()
                    .filter(|w| (1..=1000).contains(w))
                    .ok_or_else(|| format!("`font-weight: {value}`: plinth reads normal, bold or 1 to 1000; no effect"))?,
            });
        }
        _ => return Err(unsupported()),
    }
    Ok(())
}

/// `40px` (Marp's pixels, ×1.5 on plinth's canvas), `1.5em`, `1.5rem` or `150%`.
fn font_size(v: &str) -> Option<FontSize> {
    let v = v.to_ascii_lowercase();
    let num = |s: &str| s.trim().parse::<f32>().ok().filter(|n| n.is_finite());
    let size = if let Some(px) = v.strip_suffix("px") {
        FontSize::Px(num(px)? * PX_SCALE)
    } else if let Some(em) = v.strip_suffix("rem").or_else(|| v.strip_suffix("em")) {
        FontSize::Em(num(em)?)
    } else if let Some(pc) = v.strip_suffix('%') {
        FontSize::Em(num(pc)? / 100.0)
    } else {
        return None;
    };
    let ok = match size {
        FontSize::Px(px) => (FONT_PX.0..=FONT_PX.1).contains(&px),
        FontSize::Em(em) => (FONT_EM.0..=FONT_EM.1).contains(&em),
    };
    ok.then_some(size)
}
