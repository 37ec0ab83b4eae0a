//! The front matter: `key: value` lines between two `---` lines at the top of the deck.

use crate::{Aspect, Deck, Invalid, MarpTheme, Slide, Theme};

use super::css;
use super::directives::{directive, Directives, Found};
use super::values::{color, paginate, yaml_scalar, yes_no, PAGINATE_VALUES};
use super::ParseOptions;

/// What the front matter sets beyond the deck's own fields.
#[derive(Default)]
pub(super) struct FrontMatter {
    /// Index of the first line after the front matter.
    pub start: usize,
    /// Marp settings every slide inherits unless it sets its own.
    pub inherited: Directives,
    pub heading_divider: Option<usize>,
    /// Local (`_key`) directives, which here are the first slide's.
    pub first_local: Directives,
    /// Marp splits slides at every thematic break (`***`, `___`, `- - -`), not only `---`.
    pub is_marp: bool,
    /// Where each of the deck's style rules was written.
    pub style_places: Vec<String>,
}

/// Reads the front matter, if the deck has one, into `deck` and the answer.
pub(super) fn read(
    lines: &[&str],
    deck: &mut Deck,
    opts: &ParseOptions,
    warnings: &mut Vec<String>,
) -> Result<FrontMatter, Invalid> {
    let mut fm = FrontMatter::default();
    let Some(end) = front_matter_end(lines) else {
        return Ok(fm);
    };
    let mut marp_theme = None;
    let mut unknown_theme: Option<(usize, String)> = None;
    for (n, line) in lines.iter().enumerate().take(end).skip(1) {
        let at = n + 1;
        if line.starts_with([' ', '\t', '-', '#']) || line.trim().is_empty() {
            continue; // the rest of a multi-line value, or a comment
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if key.trim() == "style" {
            let (css, first) = style_value(value, &lines[n + 1..end], at);
            let place = |l: usize| format!("front matter line {l}");
            css::Sheet {
                rules: &mut deck.styles,
                places: &mut fm.style_places,
                warnings,
                place: &place,
            }
            .read(&css, first);
            continue;
        }
        let mut value = yaml_scalar(value);
        if value.is_empty() {
            // A YAML list (`class:` then `  - invert` lines) reads as its items.
            let items: Vec<String> = lines[n + 1..end]
                .iter()
                .take_while(|l| l.starts_with([' ', '\t', '-']))
                .filter_map(|l| l.trim().strip_prefix('-').map(yaml_scalar))
                .collect();
            value = items.join(" ");
        }
        let bad = |what: &str| Invalid(format!("front matter line {at}: {what}"));
        match key.trim() {
            "theme" => match value.as_str() {
                "light" => deck.theme = Theme::Light,
                "dark" => deck.theme = Theme::Dark,
                "default" => marp_theme = Some(MarpTheme::Default),
                "gaia" => marp_theme = Some(MarpTheme::Gaia),
                "uncover" => marp_theme = Some(MarpTheme::Uncover),
                other => unknown_theme = Some((at, other.to_owned())),
            },
            "marp" => fm.is_marp = yes_no(&value) == Some(true),
            "class" => fm.inherited.class = Some(value),
            "headingDivider" => {
                fm.heading_divider = Some(
                    value
                        .trim_start_matches('[')
                        .split([',', ']'])
                        .filter_map(|v| v.trim().parse::<usize>().ok())
                        .max()
                        .filter(|&n| (1..=6).contains(&n))
                        .ok_or_else(|| bad("headingDivider is a heading level, 1 to 6"))?,
                )
            }
            local if local.starts_with('_') => {
                // A local directive here is the first slide's.
                let mut found = Found::default();
                let mut scratch = Slide::default();
                let body = format!("{local}: {value}");
                directive(&mut scratch, &mut found, &body, at, warnings)?;
                fm.first_local.merge(found.local);
            }
            other => {
                if !deck_key(deck, other, value, opts, &bad)? {
                    warnings.push(format!(
                        "front matter line {at}: `{other}` is not supported and has no effect"
                    ))
                }
            }
        }
    }
    if let Some((at, name)) = unknown_theme {
        // A Marp deck with a custom theme still imports (Marp falls back to its
        // default too); elsewhere an unknown theme is a mistake worth a 400.
        if fm.is_marp {
            warnings.push(format!(
                "front matter line {at}: theme `{name}` is not one plinth has; the deck uses light"
            ));
        } else {
            return Err(Invalid(format!(
                "front matter line {at}: unknown theme `{name}` (light, dark, or Marp's default, gaia, uncover)"
            )));
        }
    }
    // A Marp deck without a theme has Marp's default one.
    deck.marp_theme = marp_theme.or(fm.is_marp.then_some(MarpTheme::Default));
    fm.start = end + 1;
    Ok(fm)
}

/// A front matter key that sets one of the deck's fields; `false` for any other key.
fn deck_key(
    deck: &mut Deck,
    key: &str,
    value: String,
    opts: &ParseOptions,
    bad: &dyn Fn(&str) -> Invalid,
) -> Result<bool, Invalid> {
    match key {
        "title" => deck.title = Some(value),
        "paginate" => deck.paginate = paginate(&value).ok_or_else(|| bad(PAGINATE_VALUES))?.0,
        "header" => deck.header = Some(value),
        "footer" => deck.footer = Some(value),
        "size" => {
            deck.aspect = Some(match value.as_str() {
                "16:9" => Aspect::Wide,
                "4:3" => Aspect::Standard,
                other => return Err(bad(&format!("unknown size `{other}` (16:9 or 4:3)"))),
            })
        }
        "brand" => {
            color(&value).map_err(|e| bad(&e))?;
            deck.brand = Some(value);
        }
        "logo" => {
            let url = value.trim();
            let id = url.strip_prefix("asset:").unwrap_or(url);
            deck.logo = Some(if uuid::Uuid::parse_str(id).is_ok() {
                id.to_owned()
            } else {
                opts.resolve_image
                    .and_then(|r| r(url))
                    .ok_or_else(|| bad(&super::image_refusal(opts, "the logo", url)))?
            });
        }
        "backgroundColor" | "background_color" => {
            color(&value).map_err(|e| bad(&e))?;
            deck.background_color = Some(value);
        }
        "color" => {
            color(&value).map_err(|e| bad(&e))?;
            deck.color = Some(value);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The CSS of a `style:` key on line `at` and the line it starts on: its value on the
/// same line, or the indented lines after it (`style: |`, YAML's block scalar).
fn style_value(value: &str, after: &[&str], at: usize) -> (String, usize) {
    let value = value.trim();
    if !value.is_empty() && !value.starts_with(['|', '>']) {
        return (yaml_scalar(value), at);
    }
    let block: Vec<&str> = after
        .iter()
        .take_while(|l| l.starts_with([' ', '\t']) || l.trim().is_empty())
        .copied()
        .collect();
    (block.join("\n"), at + 1)
}

/// Front matter: the first line is `---`, a later `---` closes it, and every line in
/// between is `key: value` or blank.
fn front_matter_end(lines: &[&str]) -> Option<usize> {
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return None;
    }
    let end = lines.iter().skip(1).position(|l| l.trim_end() == "---")? + 1;
    let all_pairs = lines[1..end].iter().all(|l| {
        l.trim().is_empty()
            || l.starts_with([' ', '\t', '-', '#'])
            || l.split_once(':').is_some_and(|(k, _)| {
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            })
    });
    (all_pairs && end > 1).then_some(end)
}
