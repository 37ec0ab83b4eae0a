//! The deck's own styles (Marp's `style:` CSS, in the subset plinth draws): the rules,
//! their limits, and what they set for one element of one slide.

use crate::*;

/// Style rules a deck may carry.
pub const MAX_STYLE_RULES: usize = 64;
/// Marp classes one slide may carry beyond `lead` and `invert`, and their length.
pub const MAX_CLASSES: usize = 8;
/// Font sizes a rule may set: canvas pixels (1920×1080) and `em` of the slide's text.
pub const FONT_PX: (f32, f32) = (6.0, 600.0);
pub const FONT_EM: (f32, f32) = (0.1, 10.0);

/// One rule: colours, a size and a weight for an element of every slide, or of the
/// slides with a Marp class (`section.invert h1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StyleRule {
    /// Only slides with this class: `lead` (title layout), `invert` (the other theme)
    /// or one in a slide's `classes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = MAX_ID_CHARS)))]
    pub class: Option<String>,
    pub element: StyleElement,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::color"))]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::color"))]
    pub background_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub font_size: Option<FontSize>,
    /// 1 to 1000; 600 and above draw bold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub font_weight: Option<u16>,
}

/// What a rule styles: the slide itself (`section`) or one kind of element on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StyleElement {
    Section,
    H1,
    H2,
    H3,
    P,
    Table,
    Th,
    Td,
    /// Inline code and code blocks (`pre` wins for blocks).
    Code,
    Pre,
    Header,
    Footer,
}

impl StyleElement {
    /// Its CSS name, as the markdown's `style:` writes it.
    pub const NAMES: &'static [(&'static str, StyleElement)] = &[
        ("section", StyleElement::Section),
        ("h1", StyleElement::H1),
        ("h2", StyleElement::H2),
        ("h3", StyleElement::H3),
        ("p", StyleElement::P),
        ("table", StyleElement::Table),
        ("th", StyleElement::Th),
        ("td", StyleElement::Td),
        ("code", StyleElement::Code),
        ("pre", StyleElement::Pre),
        ("header", StyleElement::Header),
        ("footer", StyleElement::Footer),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, e)| *e == self)
            .map_or("section", |(n, _)| n)
    }
}

/// A font size: canvas pixels of a 1920×1080 slide, or `em` of the slide's text size
/// (for `section`, of the theme's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FontSize {
    Px(#[cfg_attr(feature = "schema", schemars(range(min = 6.0, max = 600.0)))] f32),
    Em(#[cfg_attr(feature = "schema", schemars(range(min = 0.1, max = 10.0)))] f32),
}

impl FontSize {
    /// The size in canvas pixels, `em` being `base`.
    pub fn px(self, base: f32) -> f32 {
        match self {
            FontSize::Px(px) => px,
            FontSize::Em(em) => em * base,
        }
    }

    pub(crate) fn in_range(self) -> bool {
        let ((lo, hi), v) = match self {
            FontSize::Px(v) => (FONT_PX, v),
            FontSize::Em(v) => (FONT_EM, v),
        };
        v.is_finite() && (lo..=hi).contains(&v)
    }
}

/// What the deck's rules set for one element of one slide: later rules win, and a
/// rule for one of the slide's classes wins over one for every slide.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Styled {
    pub color: Option<(u8, u8, u8)>,
    pub background: Option<(u8, u8, u8)>,
    pub font_size: Option<FontSize>,
    pub bold: Option<bool>,
}

impl Deck {
    /// See [`Styled`].
    pub fn styled(&self, slide: &Slide, element: StyleElement) -> Styled {
        let mut out = Styled::default();
        let applies = |r: &&StyleRule| {
            r.element == element
                && r.class
                    .as_deref()
                    .is_none_or(|c| self.slide_has_class(slide, c))
        };
        let plain = self.styles.iter().filter(|r| r.class.is_none());
        let classed = self.styles.iter().filter(|r| r.class.is_some());
        for rule in plain.chain(classed).filter(applies) {
            let rgb = |c: &Option<String>| c.as_deref().and_then(parse_color);
            out.color = rgb(&rule.color).or(out.color);
            out.background = rgb(&rule.background_color).or(out.background);
            out.font_size = rule.font_size.or(out.font_size);
            out.bold = rule.font_weight.map(|w| w >= 600).or(out.bold);
        }
        out
    }

    /// Marp's classes as plinth keeps them: `lead` is the title layout, `invert` the
    /// theme other than the deck's, any other is in the slide's `classes`.
    pub fn slide_has_class(&self, slide: &Slide, class: &str) -> bool {
        match class {
            "lead" => slide.layout == Layout::Title,
            "invert" => slide.theme.is_some_and(|t| t != self.theme),
            other => slide.classes.iter().any(|c| c == other),
        }
    }
}

/// A class name: letters, digits, `-` and `_`, at most [`MAX_ID_CHARS`].
pub fn is_class_name(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= MAX_ID_CHARS
        && c.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub(crate) fn check_styles(styles: &[StyleRule]) -> Result<(), Invalid> {
    if styles.len() > MAX_STYLE_RULES {
        return invalid(format!("a deck has at most {MAX_STYLE_RULES} style rules"));
    }
    for (i, rule) in styles.iter().enumerate() {
        let at = format!("styles[{i}]");
        if rule.class.as_deref().is_some_and(|c| !is_class_name(c)) {
            return invalid(format!(
                "{at}: a class is 1 to {MAX_ID_CHARS} letters, digits, '-' or '_'"
            ));
        }
        check_color(&format!("{at} color"), rule.color.as_deref())?;
        check_color(
            &format!("{at} background_color"),
            rule.background_color.as_deref(),
        )?;
        if rule.font_size.is_some_and(|s| !s.in_range()) {
            return invalid(format!(
                "{at}: a font size is {} to {} px or {} to {} em",
                FONT_PX.0, FONT_PX.1, FONT_EM.0, FONT_EM.1
            ));
        }
        if rule.font_weight.is_some_and(|w| !(1..=1000).contains(&w)) {
            return invalid(format!("{at}: a font weight is 1 to 1000"));
        }
    }
    Ok(())
}

pub(crate) fn check_classes(at: &str, classes: &[String]) -> Result<(), Invalid> {
    if classes.len() > MAX_CLASSES {
        return invalid(format!("{at}: at most {MAX_CLASSES} classes"));
    }
    match classes.iter().find(|c| !is_class_name(c)) {
        Some(c) => invalid(format!(
            "{at}: class `{c}` is not 1 to {MAX_ID_CHARS} letters, digits, '-' or '_'"
        )),
        None => Ok(()),
    }
}

/// WCAG's relative luminance of an sRGB colour (the renderer's contrast rules use it too).
pub fn relative_luminance((r, g, b): (u8, u8, u8)) -> f32 {
    let lin = |v: u8| {
        let v = v as f32 / 255.0;
        if v <= 0.03928 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}

/// WCAG's contrast ratio of two colours.
pub fn contrast_ratio(a: (u8, u8, u8), b: (u8, u8, u8)) -> f32 {
    let (la, lb) = (relative_luminance(a), relative_luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// Rules whose colour is under 4.5:1 against the background the rules themselves give
/// it (its element's own, else its slides' `section`): (rule index, why). The author's
/// colour is drawn as written; this says so.
pub fn style_contrast_warnings(styles: &[StyleRule]) -> Vec<(usize, String)> {
    let bg_of = |class: &Option<String>, element: StyleElement| {
        styles
            .iter()
            .rev()
            .filter(|r| r.element == element && &r.class == class)
            .find_map(|r| r.background_color.as_deref().and_then(parse_color))
    };
    let mut out = Vec::new();
    for (i, rule) in styles.iter().enumerate() {
        let Some(fg) = rule.color.as_deref().and_then(parse_color) else {
            continue;
        };
        let bg = bg_of(&rule.class, rule.element)
            .or_else(|| bg_of(&rule.class, StyleElement::Section))
            .or_else(|| bg_of(&None, StyleElement::Section));
        let Some(bg) = bg else { continue };
        let ratio = contrast_ratio(fg, bg);
        if ratio < 4.5 {
            let hex = |(r, g, b): (u8, u8, u8)| format!("#{r:02x}{g:02x}{b:02x}");
            out.push((
                i,
                format!(
                    "`{}` colour {} on {} has contrast {ratio:.1}:1, under 4.5:1; drawn as written",
                    rule.element.name(),
                    hex(fg),
                    hex(bg)
                ),
            ));
        }
    }
    out
}
