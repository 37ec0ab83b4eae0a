//! Markdown decks (syntax in `docs/slides.md`): `---` lines separate slides, an optional
//! front matter sets the deck title and theme, HTML comments carry notes and directives.
//! Each slide's body is CommonMark, parsed with pulldown-cmark.

use pulldown_cmark::{
    Alignment, CodeBlockKind, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd,
};

use crate::{
    Align, Aspect, Background, BackgroundFit, BackgroundPosition, Block, Deck, Invalid, Layout,
    List, ListItem, MarpTheme, Slide, Theme, MAX_COLUMNS, MAX_MARKDOWN_BYTES, MAX_NESTING,
};

/// Maps an image reference to an asset id.
pub type ResolveImage<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// How a markdown deck is read.
#[derive(Default, Clone, Copy)]
pub struct ParseOptions<'a> {
    /// Maps an image reference that is not `asset:<asset id>` (a file name such as
    /// `chart.png`) to an asset id; without it, or when it answers `None`, the image is
    /// refused with its line.
    pub resolve_image: Option<&'a ResolveImage<'a>>,
}

pub fn parse_markdown(source: &str) -> Result<Deck, Invalid> {
    parse_markdown_with(source, &ParseOptions::default())
}

pub fn parse_markdown_with(source: &str, opts: &ParseOptions) -> Result<Deck, Invalid> {
    parse_markdown_report(source, opts).map(|(deck, _)| deck)
}

/// Like [`parse_markdown_with`], and also what was read but has no effect (Marp
/// settings plinth does not draw), one line each, for the caller to show.
pub fn parse_markdown_report(
    source: &str,
    opts: &ParseOptions,
) -> Result<(Deck, Vec<String>), Invalid> {
    if source.len() > MAX_MARKDOWN_BYTES {
        return Err(Invalid(format!(
            "markdown is larger than {MAX_MARKDOWN_BYTES} bytes"
        )));
    }
    let lines: Vec<&str> = source.lines().collect();
    let mut deck = Deck::default();
    let mut warnings = Vec::new();
    let mut start = 0;
    // Marp settings every slide inherits unless it sets its own.
    let mut inherited = Directives::default();
    let mut heading_divider: Option<usize> = None;
    let mut first_local = Directives::default();
    // Marp splits slides at every thematic break (`***`, `___`, `- - -`), not only `---`.
    let mut is_marp = false;
    if let Some(end) = front_matter_end(&lines) {
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
                "title" => deck.title = Some(value),
                "theme" => match value.as_str() {
                    "light" => deck.theme = Theme::Light,
                    "dark" => deck.theme = Theme::Dark,
                    "default" => marp_theme = Some(MarpTheme::Default),
                    "gaia" => marp_theme = Some(MarpTheme::Gaia),
                    "uncover" => marp_theme = Some(MarpTheme::Uncover),
                    other => unknown_theme = Some((at, other.to_owned())),
                },
                "marp" => is_marp = yes_no(&value) == Some(true),
                "paginate" => {
                    deck.paginate = paginate(&value).ok_or_else(|| bad(PAGINATE_VALUES))?.0
                }
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
                        opts.resolve_image.and_then(|r| r(url)).ok_or_else(|| {
                            bad(&format!(
                                "the logo must be an uploaded asset as `asset:<asset id>`, not `{url}`"
                            ))
                        })?
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
                "class" => inherited.class = Some(value),
                "headingDivider" => {
                    heading_divider = Some(
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
                    directive(
                        &mut scratch,
                        &mut found,
                        &format!("{local}: {value}"),
                        at,
                        &mut warnings,
                    )?;
                    first_local.merge(found.local);
                }
                other => warnings.push(format!(
                    "front matter line {at}: `{other}` is not supported and has no effect"
                )),
            }
        }
        if let Some((at, name)) = unknown_theme {
            // A Marp deck with a custom theme still imports (Marp falls back to its
            // default too); elsewhere an unknown theme is a mistake worth a 400.
            if is_marp {
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
        deck.marp_theme = marp_theme.or(is_marp.then_some(MarpTheme::Default));
        start = end + 1;
    }

    // Split on `---` lines outside fenced code (and, in a Marp deck, on every thematic
    // break: elsewhere `***` and `___` are a rule on the slide).
    let mut chunks: Vec<(usize, Vec<&str>)> = vec![(start + 1, Vec::new())];
    let mut fence: Option<(String, usize)> = None;
    for (n, line) in lines.iter().enumerate().skip(start) {
        let trimmed = line.trim_start();
        match &fence {
            Some((marker, _)) => {
                if trimmed.starts_with(marker.as_str())
                    && trimmed
                        .trim_end()
                        .chars()
                        .all(|c| c == marker.chars().next().unwrap())
                {
                    fence = None;
                }
            }
            None => {
                if let Some(marker) = fence_marker(trimmed) {
                    fence = Some((marker, n + 1));
                } else if line.trim_end() == "---" || (is_marp && thematic_break(line)) {
                    chunks.push((n + 2, Vec::new()));
                    continue;
                } else if heading_divider.is_some_and(|d| {
                    let level = line.chars().take_while(|&c| c == '#').count();
                    (1..=d).contains(&level) && line[level..].starts_with([' ', '\t'])
                }) && chunks
                    .last()
                    .is_some_and(|c| c.1.iter().any(|l| !l.trim().is_empty()))
                {
                    // Marp's headingDivider: a new slide before each such heading.
                    chunks.push((n + 1, Vec::new()));
                }
            }
        }
        chunks.last_mut().expect("one chunk at least").1.push(line);
    }
    if let Some((_, line)) = fence {
        return Err(Invalid(format!(
            "invalid markdown: the code fence opened on line {line} is never closed"
        )));
    }
    // A separator right at the start (or after the front matter) does not make an
    // empty first slide.
    if chunks.len() > 1 && chunks[0].1.iter().all(|l| l.trim().is_empty()) {
        chunks.remove(0);
    }
    if chunks.len() > crate::MAX_SLIDES {
        return Err(Invalid(format!(
            "a deck has at most {} slides ({} in the markdown)",
            crate::MAX_SLIDES,
            chunks.len()
        )));
    }
    for (first_line, chunk) in chunks {
        let text = chunk.join("\n");
        let (mut slide, local, mut global) = parse_slide(&text, first_line, opts, &mut warnings)?;
        global.layout_set = false;
        inherited.merge(global);
        let mut applied = inherited.clone();
        applied.merge(std::mem::take(&mut first_local));
        applied.merge(local);
        applied.apply(&mut slide, &deck, first_line, &mut warnings);
        deck.slides.push(slide);
    }
    if deck
        .slides
        .iter()
        .all(|s| s.title.is_none() && s.blocks.is_empty())
    {
        return Err(Invalid("invalid markdown: no slide has any content".into()));
    }
    deck.fill_ids();
    deck.validate()?;
    Ok((deck, warnings))
}

/// A one-line YAML value: quotes removed, a trailing ` # comment` dropped (a value that
/// starts with `#`, such as a colour, is kept as Marp keeps it).
fn yaml_scalar(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(rest) = v.strip_prefix(q) {
            if let Some(end) = rest.find(q) {
                return rest[..end].to_owned();
            }
        }
    }
    let cut = v
        .char_indices()
        .find(|&(i, c)| c == '#' && i > 0 && v[..i].ends_with([' ', '\t']))
        .map_or(v, |(i, _)| &v[..i]);
    cut.trim().to_owned()
}

fn yes_no(v: &str) -> Option<bool> {
    match v {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

const PAGINATE_VALUES: &str = "paginate is true, false, hold, skip or hide";

/// Marp's paginate values: (the number shows, the slide advances the count). `hold`
/// shows the number without advancing it, `skip` neither; `hide` is `false`.
fn paginate(v: &str) -> Option<(bool, bool)> {
    match v {
        "hold" => Some((true, false)),
        "skip" => Some((false, false)),
        "hide" => Some((false, true)),
        v => yes_no(v).map(|on| (on, true)),
    }
}

fn color(v: &str) -> Result<(), String> {
    crate::parse_color(v).map(|_| ()).ok_or_else(|| {
        format!("`{v}` is not a colour (#rrggbb, #rgb, rgb(r, g, b) or a basic name such as white)")
    })
}

/// Marp directives read from comments: `key: value` applies to this slide and the
/// ones after it, `_key: value` to this slide only.
#[derive(Default, Clone)]
struct Directives {
    /// The slide chose its layout with `<!-- layout: … -->` (a class does not change it).
    layout_set: bool,
    class: Option<String>,
    /// As [`paginate`] answers.
    paginate: Option<(bool, bool)>,
    header: Option<String>,
    footer: Option<String>,
    background_color: Option<String>,
    color: Option<String>,
}

impl Directives {
    fn merge(&mut self, other: Directives) {
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f; } )* };
        }
        take!(class, paginate, header, footer, background_color, color);
        self.layout_set |= other.layout_set;
    }

    fn apply(self, slide: &mut Slide, deck: &Deck, line: usize, warnings: &mut Vec<String>) {
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

/// A CommonMark thematic break: up to three spaces, then three or more of one of `-`,
/// `*`, `_`, with only spaces or tabs between them.
fn thematic_break(line: &str) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = line.trim();
    let Some(mark) = rest.chars().next().filter(|c| "-*_".contains(*c)) else {
        return false;
    };
    indent <= 3
        && rest.chars().all(|c| c == mark || c == ' ' || c == '\t')
        && rest.chars().filter(|&c| c == mark).count() >= 3
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

fn fence_marker(trimmed: &str) -> Option<String> {
    for c in ['`', '~'] {
        let n = trimmed.chars().take_while(|&d| d == c).count();
        if n >= 3 {
            return Some(std::iter::repeat_n(c, n).collect());
        }
    }
    None
}

/// Inline text being collected, with marks re-encoded for [`crate::spans`].
#[derive(Default)]
struct Inline {
    text: String,
    /// Images of the paragraph, as (asset id, alt, width, height).
    images: Vec<(String, String, Option<u32>, Option<u32>)>,
    /// Whether anything but images (and white space) was collected.
    other: bool,
}

impl Inline {
    fn push_text(&mut self, t: &str) {
        if !t.trim().is_empty() {
            self.other = true;
        }
        escape_into(&mut self.text, t);
    }
    fn take(&mut self) -> String {
        self.images.clear();
        self.other = false;
        std::mem::take(&mut self.text).trim().to_owned()
    }
}

fn escape_into(out: &mut String, t: &str) {
    // Every `<` too: text events come in pieces, so `\<sub>` cannot be told from a tag
    // by looking at one of them.
    for c in t.chars() {
        if crate::ESCAPABLE.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
}

/// A link or image target as the inline marks carry it: no spaces or brackets.
fn encode_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.trim().chars() {
        match c {
            ' ' => out.push_str("%20"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '[' => out.push_str("%5B"),
            ']' => out.push_str("%5D"),
            '"' => out.push_str("%22"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            '\\' => out.push_str("%5C"),
            c => out.push(c),
        }
    }
    out
}

/// An open container while a slide's events are walked.
enum Frame {
    Quote(Vec<Block>),
    List {
        ordered: bool,
        start: Option<u64>,
        items: Vec<ListItem>,
    },
    Item(ListItem),
    Table {
        align: Vec<Align>,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
        row: Vec<String>,
    },
}

fn kind(block: &Block) -> &'static str {
    match block {
        Block::Heading { .. } => "a heading",
        Block::Text { .. } => "text",
        Block::Bullets { .. } => "a list",
        Block::Code { .. } => "a code block",
        Block::Image { .. } => "an image",
        Block::Quote { .. } => "a block quote",
        Block::Table { .. } => "a table",
        Block::Rule => "a rule",
        Block::ColumnBreak => "a column break",
    }
}

/// Puts a finished block where it belongs: the slide, the open block quote, or the
/// open list item (which takes text only).
fn emit(slide: &mut Slide, stack: &mut [Frame], block: Block, line: usize) -> Result<(), Invalid> {
    match stack.last_mut() {
        None => slide.blocks.push(block),
        Some(Frame::Quote(blocks)) => blocks.push(block),
        Some(Frame::Item(item)) => match block {
            _ if item.list.is_some() => {
                return Err(Invalid(format!(
                    "invalid markdown on line {line}: {} after a nested list in the same list item is not supported",
                    kind(&block)
                )))
            }
            Block::Text { text } if item.blocks.is_empty() => {
                if !item.text.is_empty() {
                    item.text.push('\n');
                }
                item.text.push_str(&text);
            }
            other => item.blocks.push(other),
        },
        Some(Frame::List { .. }) | Some(Frame::Table { .. }) => {
            return Err(Invalid(format!(
                "invalid markdown on line {line}: {} is not supported here",
                kind(&block)
            )))
        }
    }
    Ok(())
}

/// Text collected so far belongs to the open list item (tight lists have no
/// paragraphs): its text, or a text block after its blocks.
fn flush_item(stack: &mut [Frame], inline: &mut Inline, line: usize) -> Result<(), Invalid> {
    if let Some(Frame::Item(item)) = stack.last_mut() {
        if !inline.other && !inline.images.is_empty() && item.list.is_none() {
            // An item that is only images (`- ![w:200](a.png)`): image blocks in it.
            for (asset_id, alt, width, height) in std::mem::take(&mut inline.images) {
                let alt = alt.trim().to_owned();
                item.blocks.push(Block::Image {
                    asset_id,
                    alt: (!alt.is_empty()).then_some(alt),
                    width,
                    height,
                });
            }
            inline.take();
            return Ok(());
        }
        let t = inline.take();
        if t.is_empty() {
            return Ok(());
        }
        if item.list.is_some() {
            return Err(Invalid(format!(
                "invalid markdown on line {line}: text after a nested list in the same list item is not supported"
            )));
        }
        if item.blocks.is_empty() {
            if !item.text.is_empty() {
                item.text.push('\n');
            }
            item.text.push_str(&t);
        } else {
            item.blocks.push(Block::Text { text: t });
        }
    }
    Ok(())
}

fn parse_slide(
    text: &str,
    first_line: usize,
    opts: &ParseOptions,
    warnings: &mut Vec<String>,
) -> Result<(Slide, Directives, Directives), Invalid> {
    let mut found = Found::default();
    let mut slide = Slide::default();
    let mut inline = Inline::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut code: Option<(Option<String>, String)> = None;
    let mut image: Option<(String, String)> = None; // (asset id, alt being collected)
    let mut link: Option<String> = None;
    let mut html = String::new();
    // Byte offset of each line start, so an event's line number is a binary search
    // rather than a rescan of the text before it.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_MATH;
    let mut notes = Footnotes::default();

    // Inside an HTML block that a `<div>` wrapper opened (its next lines are HTML too),
    // and the text of its lines so far (`html_text`), drawn as one paragraph.
    let mut in_div_block = false;
    let mut div_text = String::new();
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        let line = first_line + line_starts.partition_point(|&s| s <= range.start) - 1;
        let block_html = matches!(event, Event::Html(_));
        if !block_html {
            in_div_block = false;
            flush_div_text(&mut slide, &mut stack, &mut div_text, line)?;
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                flush_item(&mut stack, &mut inline, line)?;
                let lang = match kind {
                    CodeBlockKind::Fenced(l) if !l.trim().is_empty() => {
                        Some(l.split_whitespace().next().unwrap_or_default().to_owned())
                    }
                    _ => None,
                };
                code = Some((lang, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((language, mut body)) = code.take() {
                    if body.ends_with('\n') {
                        body.pop();
                    }
                    let block = Block::Code {
                        language,
                        code: body,
                    };
                    emit(&mut slide, &mut stack, block, line)?;
                }
            }
            Event::Text(t) if code.is_some() => code.as_mut().expect("in code").1.push_str(&t),
            Event::Text(t) if image.is_some() => image.as_mut().expect("in image").1.push_str(&t),
            Event::Code(t) if image.is_some() => image.as_mut().expect("in image").1.push_str(&t),
            Event::Text(t) => inline.push_text(&marp_text(&t, line, warnings)),
            Event::FootnoteReference(label) => {
                let n = notes.number(&label);
                inline.text.push_str(&crate::inline::superscript(n));
            }
            Event::Start(Tag::FootnoteDefinition(label)) => {
                flush_item(&mut stack, &mut inline, line)?;
                notes.open.push(label.to_string());
                stack.push(Frame::Quote(Vec::new()));
            }
            Event::End(TagEnd::FootnoteDefinition) => {
                if let (Some(label), Some(Frame::Quote(blocks))) = (notes.open.pop(), stack.pop()) {
                    let n = notes.number(&label);
                    notes.defined.push((n, blocks));
                }
            }
            Event::InlineMath(tex) | Event::DisplayMath(tex)
                if code.is_none() && image.is_none() =>
            {
                // Display maths is written `$$…$$` (pulldown-cmark's DisplayMath).
                let display = text
                    .get(range.clone())
                    .is_some_and(|src| src.starts_with("$$"));
                if tex.len() > crate::MAX_MATHS_BYTES {
                    return Err(Invalid(format!(
                        "invalid markdown on line {line}: a formula is at most {} bytes of TeX",
                        crate::MAX_MATHS_BYTES
                    )));
                }
                let id = crate::maths_ref(&tex, display);
                inline.text.push_str("![](");
                inline.text.push_str(&id);
                inline.text.push(')');
                if display {
                    // Alone in its paragraph, a display formula is a block of its own.
                    inline.images.push((id, String::new(), None, None));
                } else {
                    inline.other = true;
                }
            }
            Event::Code(t) => {
                inline.other = true;
                inline.text.push('`');
                inline.text.push_str(&t.replace('`', "'"));
                inline.text.push('`');
            }
            Event::Start(Tag::Strong) | Event::End(TagEnd::Strong) => inline.text.push_str("**"),
            Event::Start(Tag::Emphasis) | Event::End(TagEnd::Emphasis) => inline.text.push('*'),
            Event::Start(Tag::Strikethrough) | Event::End(TagEnd::Strikethrough) => {
                inline.text.push_str("~~")
            }
            Event::SoftBreak => inline.text.push(' '),
            Event::HardBreak => inline.text.push('\n'),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => {
                let mut url = encode_url(&dest_url);
                if link_type == LinkType::Email && !url.starts_with("mailto:") {
                    url.insert_str(0, "mailto:");
                }
                if !crate::link_allowed(&url) {
                    return Err(Invalid(format!(
                        "invalid markdown on line {line}: link `{dest_url}` is not supported (links go to http, https or mailto addresses)"
                    )));
                }
                inline.other = true;
                inline.text.push('[');
                link = Some(url);
            }
            Event::End(TagEnd::Link) => {
                if let Some(url) = link.take() {
                    inline.text.push_str("](");
                    inline.text.push_str(&url);
                    inline.text.push(')');
                }
            }
            Event::End(TagEnd::Heading(level)) => {
                let t = inline.take();
                if stack.is_empty()
                    && slide.title.is_none()
                    && slide.blocks.is_empty()
                    && level <= HeadingLevel::H2
                {
                    slide.title = Some(t);
                    slide.title_level = Some(level as u8);
                    slide.title_fit = std::mem::take(&mut found.fit);
                } else {
                    let block = Block::Heading {
                        text: t,
                        level: Some(level as u8),
                        fit: std::mem::take(&mut found.fit),
                    };
                    emit(&mut slide, &mut stack, block, line)?;
                }
            }
            Event::End(TagEnd::Paragraph) => {
                let in_text = matches!(stack.last(), Some(Frame::Table { .. }));
                if !inline.other && !inline.images.is_empty() && !in_text {
                    // A paragraph of images only: image blocks.
                    for (asset_id, alt, width, height) in std::mem::take(&mut inline.images) {
                        let alt = alt.trim().to_owned();
                        let block = Block::Image {
                            asset_id,
                            alt: (!alt.is_empty()).then_some(alt),
                            width,
                            height,
                        };
                        emit(&mut slide, &mut stack, block, line)?;
                    }
                    inline.take();
                } else {
                    let t = inline.take();
                    if !t.is_empty() {
                        emit(&mut slide, &mut stack, Block::Text { text: t }, line)?;
                    }
                }
            }
            Event::Start(Tag::BlockQuote(_)) => {
                flush_item(&mut stack, &mut inline, line)?;
                if nesting(&stack) >= MAX_NESTING {
                    return Err(too_deep(line));
                }
                stack.push(Frame::Quote(Vec::new()));
            }
            Event::End(TagEnd::BlockQuote(_)) => {
                if let Some(Frame::Quote(blocks)) = stack.pop() {
                    if !blocks.is_empty() {
                        emit(&mut slide, &mut stack, Block::Quote { blocks }, line)?;
                    }
                }
            }
            Event::Start(Tag::List(first)) => {
                flush_item(&mut stack, &mut inline, line)?;
                if nesting(&stack) >= MAX_NESTING {
                    return Err(too_deep(line));
                }
                stack.push(Frame::List {
                    ordered: first.is_some(),
                    start: first.filter(|&n| n != 1),
                    items: Vec::new(),
                });
            }
            Event::End(TagEnd::List(_)) => {
                let Some(Frame::List {
                    ordered,
                    start,
                    items,
                }) = stack.pop()
                else {
                    continue;
                };
                match stack.last_mut() {
                    Some(Frame::Item(item)) => {
                        if item.list.is_some() {
                            return Err(Invalid(format!(
                                "invalid markdown on line {line}: a list item holds one nested list (here a second one starts with another marker)"
                            )));
                        }
                        item.list = Some(List {
                            items,
                            ordered,
                            start,
                        });
                    }
                    _ => {
                        let block = Block::Bullets {
                            items,
                            ordered,
                            start,
                        };
                        emit(&mut slide, &mut stack, block, line)?;
                    }
                }
            }
            Event::Start(Tag::Item) => stack.push(Frame::Item(ListItem::default())),
            Event::TaskListMarker(done) => {
                if let Some(Frame::Item(item)) = stack.last_mut() {
                    item.checked = Some(done);
                }
            }
            Event::End(TagEnd::Item) => {
                flush_item(&mut stack, &mut inline, line)?;
                if let Some(Frame::Item(item)) = stack.pop() {
                    if let Some(Frame::List { items, .. }) = stack.last_mut() {
                        items.push(item);
                    }
                }
            }
            Event::Start(Tag::Table(aligns)) => {
                flush_item(&mut stack, &mut inline, line)?;
                stack.push(Frame::Table {
                    align: aligns
                        .iter()
                        .map(|a| match a {
                            Alignment::None => Align::Auto,
                            Alignment::Left => Align::Left,
                            Alignment::Center => Align::Center,
                            Alignment::Right => Align::Right,
                        })
                        .collect(),
                    header: Vec::new(),
                    rows: Vec::new(),
                    row: Vec::new(),
                });
            }
            Event::End(TagEnd::TableCell) => {
                let t = inline.take();
                if let Some(Frame::Table { row, .. }) = stack.last_mut() {
                    row.push(t);
                }
            }
            Event::End(TagEnd::TableHead) => {
                if let Some(Frame::Table { header, row, .. }) = stack.last_mut() {
                    *header = std::mem::take(row);
                }
            }
            Event::End(TagEnd::TableRow) => {
                if let Some(Frame::Table { rows, row, .. }) = stack.last_mut() {
                    rows.push(std::mem::take(row));
                }
            }
            Event::End(TagEnd::Table) => {
                if let Some(Frame::Table {
                    mut align,
                    header,
                    rows,
                    ..
                }) = stack.pop()
                {
                    while align.last() == Some(&Align::Auto) {
                        align.pop();
                    }
                    let block = Block::Table {
                        align,
                        header,
                        rows,
                    };
                    emit(&mut slide, &mut stack, block, line)?;
                }
            }
            Event::Rule => {
                flush_item(&mut stack, &mut inline, line)?;
                emit(&mut slide, &mut stack, Block::Rule, line)?
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                if link.is_some() {
                    return Err(Invalid(format!(
                        "invalid markdown on line {line}: an image inside a link is not supported"
                    )));
                }
                let url = dest_url.trim();
                let id = url.strip_prefix("asset:").unwrap_or(url);
                let id = if uuid::Uuid::parse_str(id).is_ok() {
                    id.to_owned()
                } else {
                    match opts.resolve_image.and_then(|r| r(url)) {
                        Some(id) => id,
                        None => {
                            return Err(Invalid(format!(
                                "invalid markdown on line {line}: images must reference an uploaded asset as `asset:<asset id>`, not `{url}`"
                            )))
                        }
                    }
                };
                image = Some((id, String::new()));
            }
            Event::End(TagEnd::Image) => {
                if let Some((asset_id, alt)) = image.take() {
                    let keys = image_keys(&alt);
                    for t in &keys.ignored {
                        warnings.push(format!(
                            "line {line}: image keyword `{t}` is not supported and has no effect"
                        ));
                    }
                    if keys.bg {
                        slide.backgrounds.push(Background {
                            asset_id,
                            position: keys.position,
                            fit: keys.fit,
                            split: keys.split,
                        });
                        continue;
                    }
                    inline.text.push_str("![");
                    escape_into(&mut inline.text, keys.alt.trim());
                    inline.text.push_str("](asset:");
                    inline.text.push_str(&asset_id);
                    inline.text.push(')');
                    inline
                        .images
                        .push((asset_id, keys.alt, keys.width, keys.height));
                }
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                html.push_str(&h);
                let t = html.trim();
                if is_line_break(t) {
                    html.clear();
                    inline.text.push('\n');
                    continue;
                }
                let chars: Vec<char> = t.chars().collect();
                if let Some((tag, closes, _)) = crate::inline_tag(&chars)
                    .filter(|(_, _, len)| *len == chars.len() && !block_html)
                {
                    // Marp's inline HTML allowlist: kept as a mark of the text.
                    html.clear();
                    inline.other = true;
                    inline.text.push_str(if closes { "</" } else { "<" });
                    inline.text.push_str(tag);
                    inline.text.push('>');
                    continue;
                }
                if t.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("<style")) {
                    // Marp's inline theme CSS: plinth draws its own themes.
                    if t.to_ascii_lowercase().contains("</style>") {
                        html.clear();
                        warnings.push(format!(
                            "line {line}: a <style> element has no effect (plinth draws its own themes)"
                        ));
                    }
                    continue;
                }
                if let Some(tag) = wrapper_tags(t) {
                    // Marp decks wrap markdown in `<div class="…">` and `<span>` for their
                    // CSS: the content is drawn, the wrapper is not.
                    html.clear();
                    flush_div_text(&mut slide, &mut stack, &mut div_text, line)?;
                    in_div_block = block_html && (in_div_block || tag == "div");
                    warnings.push(format!(
                        "line {line}: <{tag}> is drawn as its content; its class and style have no effect (plinth draws its own themes)"
                    ));
                    continue;
                }
                let opens_div = t.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("<div"));
                if let Some(text) =
                    html_text(t).filter(|_| block_html && (in_div_block || opens_div))
                {
                    // The lines of a `<div>` block: their text and inline marks, as one
                    // paragraph (`<div class="accent">One line</div>`, or `<strong>Goal</strong><br>`
                    // on the line after `<div class="box">`).
                    let closes = t.to_ascii_lowercase().contains("</div>");
                    html.clear();
                    if !in_div_block {
                        warnings.push(format!(
                            "line {line}: <div> is drawn as its content; its class and style have no effect (plinth draws its own themes)"
                        ));
                    }
                    in_div_block = !closes;
                    if !div_text.is_empty() && !div_text.ends_with('\n') {
                        div_text.push(' ');
                    }
                    div_text.push_str(&text);
                    if !in_div_block {
                        flush_div_text(&mut slide, &mut stack, &mut div_text, line)?;
                    }
                    continue;
                }
                if !t.starts_with("<!--") {
                    // An HTML block (`<div>` with text on its next lines) is not markdown.
                    let hint = if in_div_block {
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
                    html.clear();
                    if body == "column" {
                        if !stack.is_empty() {
                            return Err(Invalid(format!(
                                "invalid markdown on line {line}: `<!-- column -->` starts a column of the slide; it cannot sit inside a list or block quote"
                            )));
                        }
                        let breaks = slide
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
                        slide.blocks.push(Block::ColumnBreak);
                        continue;
                    }
                    directive(&mut slide, &mut found, &body, line, warnings)?;
                }
            }
            _ => {}
        }
    }
    flush_div_text(&mut slide, &mut stack, &mut div_text, first_line)?;
    notes.append_to(&mut slide);
    Ok((slide, found.local, found.global))
}

/// A slide's footnotes: numbered in the order they are first referred to (or defined),
/// drawn as paragraphs at the end of the slide.
#[derive(Default)]
struct Footnotes {
    labels: Vec<String>,
    /// Labels of the definitions being read.
    open: Vec<String>,
    defined: Vec<(usize, Vec<Block>)>,
}

impl Footnotes {
    fn number(&mut self, label: &str) -> usize {
        match self.labels.iter().position(|l| l == label) {
            Some(i) => i + 1,
            None => {
                self.labels.push(label.to_owned());
                self.labels.len()
            }
        }
    }

    fn append_to(mut self, slide: &mut Slide) {
        self.defined.sort_by_key(|(n, _)| *n);
        for (n, blocks) in self.defined {
            let mut blocks = blocks.into_iter();
            let mark = crate::inline::superscript(n);
            match blocks.next() {
                Some(Block::Text { text }) => slide.blocks.push(Block::Text {
                    text: format!("{mark} {text}"),
                }),
                Some(other) => {
                    slide.blocks.push(Block::Text { text: mark });
                    slide.blocks.push(other);
                }
                None => {}
            }
            slide.blocks.extend(blocks);
        }
    }
}

/// A text event of a Marp deck: emoji shortcodes replaced, unknown shortcodes and TeX
/// maths (drawn as their source) warned about, once per line.
fn marp_text(t: &str, line: usize, warnings: &mut Vec<String>) -> String {
    let (text, unknown) = crate::inline::shortcodes(t);
    let mut warn = |w: String| {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    };
    for code in unknown {
        warn(format!(
            "line {line}: `{code}` is not an emoji shortcode and is drawn as written"
        ));
    }
    if crate::inline::has_maths(&text) {
        warn(format!(
            "line {line}: a `$` that opens no formula is drawn as written (maths is `$…$` with no space inside the dollars, or `$$…$$`)"
        ));
    }
    text
}

/// The text gathered from a `<div>` block's lines, as a paragraph.
fn flush_div_text(
    slide: &mut Slide,
    stack: &mut [Frame],
    text: &mut String,
    line: usize,
) -> Result<(), Invalid> {
    let t = std::mem::take(text);
    let t = t.trim_end_matches('\n').trim();
    if t.is_empty() {
        return Ok(());
    }
    emit(slide, stack, Block::Text { text: t.to_owned() }, line)
}

fn nesting(stack: &[Frame]) -> usize {
    stack
        .iter()
        .filter(|f| matches!(f, Frame::Quote(_) | Frame::List { .. }))
        .count()
}

fn too_deep(line: usize) -> Invalid {
    Invalid(format!(
        "invalid markdown on line {line}: block quotes and lists nest at most {MAX_NESTING} levels deep"
    ))
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
fn wrapper_tags(t: &str) -> Option<&'static str> {
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
fn html_text(t: &str) -> Option<String> {
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

/// The text of a complete `<!-- … -->` comment, or `None` while it is still open.
/// `<!-->` and `<!--->` are empty comments (as in HTML); the markers never overlap.
fn comment_body(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("<!--")?;
    if rest == ">" || rest == "->" {
        return Some("");
    }
    rest.strip_suffix("-->")
}

/// `hidden`, `layout: title|content`, `notes: …`; any other comment is speaker notes.
/// What one slide's comments set.
#[derive(Default)]
struct Found {
    /// `_key: value`: this slide only.
    local: Directives,
    /// `key: value`: this slide and the ones after it.
    global: Directives,
    /// A `<!-- fit -->` seen in the heading being read.
    fit: bool,
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
fn directive(
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

/// Marp's image keywords in the alt text: `bg` (with `left`, `right`, `left:40%`,
/// `fit`/`contain`, `cover`), `w:300`, `h:200`, `width:300px`, `height:200px`. What is
/// left is the alt text.
#[derive(Default)]
struct ImageKeys {
    bg: bool,
    position: BackgroundPosition,
    split: Option<u8>,
    fit: BackgroundFit,
    width: Option<u32>,
    height: Option<u32>,
    alt: String,
    ignored: Vec<String>,
}

const MARP_FILTERS: &[&str] = &[
    "blur",
    "brightness",
    "contrast",
    "drop-shadow",
    "grayscale",
    "hue-rotate",
    "invert",
    "opacity",
    "saturate",
    "sepia",
];

fn image_keys(alt: &str) -> ImageKeys {
    let mut k = ImageKeys::default();
    let tokens: Vec<&str> = alt.split_whitespace().collect();
    k.bg = tokens.contains(&"bg");
    // Marp sizes are CSS pixels of a 1280×720 slide; plinth's are of 1920×1080.
    let px = |v: &str| -> Option<u32> {
        let n: f32 = v.strip_suffix("px").unwrap_or(v).parse().ok()?;
        (n > 0.0 && n < 10_000.0).then(|| (n * 1.5).round() as u32)
    };
    let mut alt_words = Vec::new();
    for t in tokens {
        let (key, value) = t.split_once(':').unwrap_or((t, ""));
        match key {
            "bg" => {}
            "w" | "width" if px(value).is_some() => k.width = px(value),
            "h" | "height" if px(value).is_some() => k.height = px(value),
            "left" | "right" if k.bg => {
                k.position = if key == "left" {
                    BackgroundPosition::Left
                } else {
                    BackgroundPosition::Right
                };
                k.split = value
                    .strip_suffix('%')
                    .and_then(|p| p.parse::<f32>().ok())
                    .map(|p| p.round().clamp(10.0, 90.0) as u8);
            }
            "fit" | "contain" if k.bg => k.fit = BackgroundFit::Contain,
            "cover" if k.bg => k.fit = BackgroundFit::Cover,
            "auto" | "vertical" if k.bg => k.ignored.push(t.to_owned()),
            f if MARP_FILTERS.contains(&f) => k.ignored.push(t.to_owned()),
            _ if k.bg && t.ends_with('%') && t[..t.len() - 1].parse::<f32>().is_ok() => {
                k.ignored.push(t.to_owned())
            }
            _ => alt_words.push(t),
        }
    }
    k.alt = alt_words.join(" ");
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "---\ntitle: Demo\ntheme: dark\n---\n\n<!-- layout: title -->\n# Hello\n\nA *small* **deck**\n\n<!-- notes: say hi -->\n\n---\n\n## List\n\n- one\n- two\n  - nested\n1. ignored? no\n\n```rust\nlet x = 1;\n---\n```\n\n---\n<!-- hidden -->\n## Secret\n\n![logo](asset:0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)\n";

    #[test]
    fn parses_slides_notes_and_directives() {
        let deck = parse_markdown(SAMPLE).unwrap();
        assert_eq!(deck.title.as_deref(), Some("Demo"));
        assert_eq!(deck.theme, Theme::Dark);
        assert_eq!(deck.slides.len(), 3, "{deck:#?}");
        let s = &deck.slides[0];
        assert_eq!(s.layout, Layout::Title);
        assert_eq!(s.title.as_deref(), Some("Hello"));
        assert_eq!(s.notes.as_deref(), Some("say hi"));
        assert_eq!(
            s.blocks,
            vec![Block::Text {
                text: "A *small* **deck**".into()
            }]
        );
        let s = &deck.slides[1];
        assert_eq!(
            s.blocks[0],
            Block::Bullets {
                items: vec![
                    "one".into(),
                    ListItem {
                        text: "two".into(),
                        checked: None,
                        blocks: Vec::new(),
                        list: Some(List {
                            items: vec!["nested".into()],
                            ordered: false,
                            start: None
                        })
                    }
                ],
                ordered: false,
                start: None
            }
        );
        assert!(matches!(&s.blocks[2], Block::Code { code, .. } if code == "let x = 1;\n---"));
        let s = &deck.slides[2];
        assert!(s.hidden);
        assert!(matches!(&s.blocks[0], Block::Image { alt: Some(a), .. } if a == "logo"));
        assert_eq!(deck.asset_ids().len(), 1);
    }

    #[test]
    fn rejects_what_it_cannot_show() {
        assert!(parse_markdown("# a\n```\nopen")
            .unwrap_err()
            .0
            .contains("never closed"));
        assert!(parse_markdown("![x](https://example.com/a.png)")
            .unwrap_err()
            .0
            .contains("asset:"));
        assert!(parse_markdown("[x](javascript:alert(1))")
            .unwrap_err()
            .0
            .contains("line 1: link"));
        assert!(
            parse_markdown("# t\n\n- a\n  - b\n\n  ```\n  code\n  ```\n")
                .unwrap_err()
                .0
                .contains("line 6: a code block after a nested list")
        );
        assert!(parse_markdown("<p>x</p>").unwrap_err().0.contains("HTML"));
        assert!(parse_markdown("   \n---\n").is_err());
        assert!(parse_markdown("<!-- layout: wide -->\n# x").is_err());
    }

    #[test]
    fn m6_comment_markers_never_overlap() {
        for src in [
            "# t\n\n<!-->",
            "# t\n\nsome <!--> x",
            "# t\n<!--->",
            "# t\n<!--",
        ] {
            let _ = parse_markdown(src);
        }
        let deck = parse_markdown("# t\n\n<!-->\n\n<!-- notes: n -->").unwrap();
        assert_eq!(deck.slides[0].notes.as_deref(), Some("n"));
        assert_eq!(comment_body("<!---->"), Some(""));
        assert_eq!(comment_body("<!-- a"), None);
    }

    fn one(md: &str) -> Vec<Block> {
        parse_markdown(md).unwrap().slides.remove(0).blocks
    }

    fn item(text: &str, list: Option<List>) -> ListItem {
        ListItem {
            text: text.into(),
            checked: None,
            blocks: Vec::new(),
            list,
        }
    }

    #[test]
    fn lists_nest_three_levels_mixed() {
        let blocks = one("# t\n\n- a\n  1. b\n     - c\n       - [x] d\n  2. e\n- f\n");
        let d = List {
            items: vec![ListItem {
                text: "d".into(),
                checked: Some(true),
                blocks: Vec::new(),
                list: None,
            }],
            ordered: false,
            start: None,
        };
        let b = item(
            "b",
            Some(List {
                items: vec![item("c", Some(d))],
                ordered: false,
                start: None,
            }),
        );
        let expected = Block::Bullets {
            items: vec![
                item(
                    "a",
                    Some(List {
                        items: vec![b, item("e", None)],
                        ordered: true,
                        start: None,
                    }),
                ),
                item("f", None),
            ],
            ordered: false,
            start: None,
        };
        assert_eq!(blocks, vec![expected]);
        // Loose items keep their paragraphs; ordered lists keep their start.
        let blocks = one("# t\n\n3. one\n\n   more\n\n4. two\n");
        assert_eq!(
            blocks,
            vec![Block::Bullets {
                items: vec![item("one\nmore", None), item("two", None)],
                ordered: true,
                start: Some(3)
            }]
        );
        // Task lists.
        let blocks = one("# t\n\n- [ ] open\n- [x] done\n");
        let Block::Bullets { items, .. } = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(items[0].checked, Some(false));
        assert_eq!(items[1].checked, Some(true));
    }

    #[test]
    fn quotes_tables_rules_and_inline_marks() {
        let blocks = one("# t\n\n> quoted **bold**\n>\n> - x\n>\n> > deeper\n\n***\n");
        assert_eq!(
            blocks,
            vec![
                Block::Quote {
                    blocks: vec![
                        Block::Text {
                            text: "quoted **bold**".into()
                        },
                        Block::Bullets {
                            items: vec!["x".into()],
                            ordered: false,
                            start: None
                        },
                        Block::Quote {
                            blocks: vec![Block::Text {
                                text: "deeper".into()
                            }]
                        }
                    ]
                },
                Block::Rule
            ]
        );
        let blocks = one(
            "# t\n\n| Format | 20 slides | Per *slide* |\n|:--|--:|:-:|\n| PDF | 0.06 s | `3 ms` |\n| PNG | ~~0.58 s~~ | 29 ms |\n",
        );
        assert_eq!(
            blocks,
            vec![Block::Table {
                align: vec![Align::Left, Align::Right, Align::Center],
                header: vec!["Format".into(), "20 slides".into(), "Per *slide*".into()],
                rows: vec![
                    vec!["PDF".into(), "0.06 s".into(), "`3 ms`".into()],
                    vec!["PNG".into(), "~~0.58 s~~".into(), "29 ms".into()],
                ],
            }]
        );
        let blocks = one("# t\n\nSee [the *docs*](https://example.com/a_(b)) or <https://x.org>, ~~old~~ 2*3 [x]\n");
        let Block::Text { text } = &blocks[0] else {
            panic!()
        };
        let spans = crate::spans(text);
        let linked: Vec<_> = spans
            .iter()
            .filter_map(|s| s.link.as_deref().map(|l| (s.text.as_str(), l, s.italic)))
            .collect();
        assert_eq!(
            linked,
            vec![
                ("the ", "https://example.com/a_%28b%29", false),
                ("docs", "https://example.com/a_%28b%29", true),
                ("https://x.org", "https://x.org", false)
            ]
        );
        assert!(spans.iter().any(|s| s.strike && s.text == "old"));
        let blocks = one("# t\n\nWrite to <team@example.com>.\n");
        let Block::Text { text: mail } = &blocks[0] else {
            panic!()
        };
        assert!(crate::spans(mail)
            .iter()
            .any(|s| s.link.as_deref() == Some("mailto:team@example.com")));
        assert_eq!(
            crate::plain(text),
            "See the docs or https://x.org, old 2*3 [x]"
        );
    }

    #[test]
    fn list_items_hold_blocks() {
        let blocks = one(
            "# t\n\n1. Install:\n   ```bash\n   cargo install plinth\n   ```\n   then run it\n2. Quote:\n   > wise\n",
        );
        let Block::Bullets { items, .. } = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(items[0].text, "Install:");
        assert_eq!(
            items[0].blocks,
            vec![
                Block::Code {
                    language: Some("bash".into()),
                    code: "cargo install plinth".into()
                },
                Block::Text {
                    text: "then run it".into()
                }
            ]
        );
        assert!(matches!(&items[1].blocks[0], Block::Quote { .. }));
        // Blocks count towards the slide's limit and the nesting bound.
        let deep = format!("# t\n\n{}x\n", "- > ".repeat(5));
        assert!(parse_markdown(&deep)
            .unwrap_err()
            .0
            .contains("nest at most"));
    }

    #[test]
    fn ragged_table_rows_are_evened_out() {
        let blocks = one("# t\n\n| a | b |\n|--|--|\n| 1 |\n| 1 | 2 | 3 |\n");
        assert_eq!(
            blocks,
            vec![Block::Table {
                align: vec![],
                header: vec!["a".into(), "b".into()],
                rows: vec![vec!["1".into(), "".into()], vec!["1".into(), "2".into()]],
            }]
        );
    }

    #[test]
    fn headings_keep_their_level() {
        let blocks = one("# Title\n\n## Two\n\n### Three\n\n###### Six\n");
        let levels: Vec<_> = blocks
            .iter()
            .map(|b| match b {
                Block::Heading { level, .. } => *level,
                _ => None,
            })
            .collect();
        assert_eq!(levels, vec![Some(2), Some(3), Some(6)]);
    }

    #[test]
    fn images_inline_and_as_blocks() {
        let id = "0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10";
        let blocks = one(&format!("# t\n\n![a]({id}) ![b](asset:{id})\n\nLogo ![c]({id}) here\n\n- ![d](asset:{id}) item\n"));
        assert!(matches!(&blocks[0], Block::Image { alt: Some(a), .. } if a == "a"));
        assert!(matches!(&blocks[1], Block::Image { alt: Some(a), .. } if a == "b"));
        let Block::Text { text } = &blocks[2] else {
            panic!("{blocks:?}")
        };
        let img: Vec<_> = crate::spans(text)
            .into_iter()
            .filter(|s| s.image.is_some())
            .collect();
        assert_eq!(img.len(), 1);
        assert_eq!(img[0].image.as_deref(), Some(id));
        assert_eq!(img[0].text, "c");
        let deck = parse_markdown(&format!("# t\n\n- ![d](asset:{id}) item\n")).unwrap();
        assert_eq!(deck.asset_ids(), vec![id.to_owned()]);
        // An item that is only an image holds it as a block, sized as written.
        let blocks = one(&format!("# t\n\n- ![w:200](asset:{id})\n- text\n"));
        let Block::Bullets { items, .. } = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert!(matches!(
            &items[0].blocks[..],
            [Block::Image {
                width: Some(300),
                ..
            }]
        ));
        assert_eq!(items[0].text, "");
        // File names resolve only through the caller's resolver.
        assert!(parse_markdown("![](chart.png)").is_err());
        let resolve = |name: &str| (name == "chart.png").then(|| id.to_owned());
        let opts = ParseOptions {
            resolve_image: Some(&resolve),
        };
        let deck = parse_markdown_with("![](chart.png)", &opts).unwrap();
        assert_eq!(deck.asset_ids(), vec![id.to_owned()]);
    }

    #[test]
    fn nesting_is_bounded_and_fast() {
        for (src, what) in [
            (format!("# t\n\n{}x\n", "> ".repeat(20_000)), "quotes"),
            (format!("# t\n\n{}x\n", "- ".repeat(20_000)), "bullets"),
            (format!("# t\n\n{}x\n", "1. ".repeat(20_000)), "numbers"),
            (
                format!(
                    "# t\n\n{}",
                    (0..20_000)
                        .map(|i| format!("{}- x\n", "  ".repeat(i)))
                        .collect::<String>()
                        .chars()
                        .take(500_000)
                        .collect::<String>()
                ),
                "indented",
            ),
        ] {
            let t = std::time::Instant::now();
            let e = parse_markdown(&src).unwrap_err();
            assert!(e.0.contains("nest at most 8 levels"), "{what}: {e}");
            let line = if what == "indented" {
                "line 11"
            } else {
                "line 3"
            };
            assert!(e.0.contains(line), "{what}: {e}");
            assert!(
                t.elapsed().as_secs_f64() < 5.0,
                "{what} took {:?}",
                t.elapsed()
            );
        }
        // Inline marks nested 20,000 deep: parsed (or refused) quickly, never recursed.
        for (open, close) in [
            ("*", "*"),
            ("_", "_"),
            ("**", "**"),
            ("~~", "~~"),
            ("[", "](https://x.y)"),
        ] {
            let src = format!("# t\n\n{}x{}\n", open.repeat(20_000), close.repeat(20_000));
            let t = std::time::Instant::now();
            if let Ok(deck) = parse_markdown(&src) {
                for block in &deck.slides[0].blocks {
                    for text in crate::block_texts(block) {
                        let _ = crate::spans(text);
                    }
                }
            }
            assert!(t.elapsed().as_secs_f64() < 5.0, "{open}: {:?}", t.elapsed());
        }
        // Eight levels are fine.
        assert!(parse_markdown(&format!("# t\n\n{}x\n", "> ".repeat(8))).is_ok());
        assert!(parse_markdown(&format!("# t\n\n{}x\n", "> ".repeat(9))).is_err());
    }

    const MARP: &str = r#"---
marp: true
theme: gaia
paginate: true
header: "**Acme** roadmap"
footer: Confidential
size: 4:3
class: invert
style: |
  section { font-size: 30px; }
---

<!-- _class: lead -->
<!-- _paginate: false -->

# Roadmap

![bg left:40% fit](0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)

Say hello first.

<!-- Presenter: speak slowly -->

---

<!-- backgroundColor: #123456 -->
<!-- _footer: "" -->

## Numbers

![w:300 h:200 Chart](0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)

---

## Still blue

![bg sepia](0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)
"#;

    #[test]
    fn a_marp_deck_splits_at_every_thematic_break() {
        let md = "---\nmarp: true\n---\n\n# One\n\n***\n\n# Two\n\n___\n\n# Three\n\n* * *\n\n# Four\n\n```\n***\n```\n";
        let deck = parse_markdown(md).unwrap();
        let titles: Vec<_> = deck.slides.iter().map(|s| s.title.clone()).collect();
        assert_eq!(
            titles,
            ["One", "Two", "Three", "Four"].map(|t| Some(t.to_owned()))
        );
        // In code (above) a `***` never splits; without `marp: true` they are rules.
        let plain = parse_markdown("# One\n\n***\n\ntext\n\n___\n").unwrap();
        assert_eq!(plain.slides.len(), 1);
        assert!(!thematic_break("  a ***"));
        assert!(!thematic_break("**"));
        assert!(!thematic_break("    ***"));
        assert!(thematic_break(" _ _ _ "));
    }

    #[test]
    fn marp_decks_import_as_written() {
        let (deck, warnings) = parse_markdown_report(MARP, &ParseOptions::default()).unwrap();
        assert_eq!(deck.aspect, Some(Aspect::Standard));
        assert!(deck.paginate);
        assert_eq!(deck.header.as_deref(), Some("**Acme** roadmap"));
        assert_eq!(deck.footer.as_deref(), Some("Confidential"));
        // Gaia's colours come from the theme, not from settings the deck did not make.
        assert_eq!(deck.marp_theme, Some(MarpTheme::Gaia));
        assert_eq!(deck.background_color, None);
        assert_eq!(deck.slides.len(), 3, "{deck:#?}");
        let s = &deck.slides[0];
        assert_eq!(s.layout, Layout::Title);
        assert_eq!(
            s.theme, None,
            "_class replaces the global class, as in Marp"
        );
        assert_eq!(s.paginate, Some(false));
        assert_eq!(s.notes.as_deref(), Some("Presenter: speak slowly"));
        assert_eq!(
            s.backgrounds,
            vec![Background {
                asset_id: "0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10".into(),
                position: BackgroundPosition::Left,
                fit: BackgroundFit::Contain,
                split: Some(40),
            }]
        );
        assert_eq!(
            s.blocks,
            vec![Block::Text {
                text: "Say hello first.".into()
            }]
        );
        let s = &deck.slides[1];
        assert_eq!(s.layout, Layout::Content, "_class is for one slide");
        assert_eq!(s.theme, Some(Theme::Dark), "class: invert is global");
        assert_eq!(s.background_color.as_deref(), Some("#123456"));
        assert_eq!(s.footer.as_deref(), Some(""));
        assert_eq!(s.paginate, None);
        assert!(matches!(
            &s.blocks[0],
            Block::Image { alt: Some(a), width: Some(450), height: Some(300), .. } if a == "Chart"
        ));
        let s = &deck.slides[2];
        assert_eq!(s.background_color.as_deref(), Some("#123456"), "inherited");
        assert_eq!(s.footer, None);
        assert_eq!(s.backgrounds.len(), 1);
        assert!(
            warnings.iter().any(|w| w.contains("`style`")),
            "{warnings:?}"
        );
        assert!(warnings.iter().any(|w| w.contains("sepia")), "{warnings:?}");
        // The deck's JSON round-trips.
        let json = serde_json::to_value(&deck).unwrap();
        assert_eq!(Deck::from_json(json).unwrap(), deck);

        assert!(parse_markdown("---\ntheme: fancy\n---\n# x")
            .unwrap_err()
            .0
            .contains("line 2"));
        let (deck, warnings) = parse_markdown_report(
            "---\ntheme: corporate\nmarp: true\n---\n# x",
            &ParseOptions::default(),
        )
        .unwrap();
        assert_eq!(deck.theme, Theme::Light);
        assert!(warnings[0].contains("`corporate`"), "{warnings:?}");
        assert!(
            parse_markdown("# x\n\n<!-- backgroundColor: notacolour -->")
                .unwrap_err()
                .0
                .contains("line 3")
        );
        let deck =
            parse_markdown("---\nheadingDivider: 2\n---\n# One\n\ntext\n\n## Two\n\n### three\n")
                .unwrap();
        assert_eq!(deck.slides.len(), 2);
        // Uncover centres every slide itself: its slides keep their own layout.
        let deck = parse_markdown("---\ntheme: uncover\n---\n# One\n").unwrap();
        assert_eq!(deck.marp_theme, Some(MarpTheme::Uncover));
        assert_eq!(deck.slides[0].layout, Layout::Content);
        // Front matter as people write it: YAML comments, dotted keys, lists, local
        // directives, `#` colours; `<style>` is read and has no effect.
        let (deck, warnings) = parse_markdown_report(
            "---\nmarp: true          # enable Marp\n#theme: gaia\nmarkdown.marp.enableHtml: true\npaginate: true # numbers\nbackgroundColor: #f0f8ff\nheader: \"Team #1\"\nclass:\n  - invert\n_class: lead\n_paginate: skip\n---\n\n<style>\nsection { color: red; }\n\nh1 { color: blue; }\n</style>\n\n# One\n\n---\n\n## Two\n",
            &ParseOptions::default(),
        )
        .unwrap();
        assert!(deck.paginate);
        assert_eq!(deck.background_color.as_deref(), Some("#f0f8ff"));
        assert_eq!(deck.header.as_deref(), Some("Team #1"));
        assert_eq!(deck.slides.len(), 2, "{deck:#?}");
        assert_eq!(deck.slides[0].layout, Layout::Title);
        assert_eq!(deck.slides[0].theme, None, "_class replaces class");
        assert_eq!(deck.slides[0].paginate, Some(false));
        assert_eq!(deck.slides[1].theme, Some(Theme::Dark));
        assert_eq!(deck.slides[1].layout, Layout::Content);
        assert!(
            warnings.iter().any(|w| w.contains("<style>")),
            "{warnings:?}"
        );
        let deck = parse_markdown("# <!-- fit --> Big\n\n### <!-- fit --> Small\n").unwrap();
        assert_eq!(deck.slides[0].notes, None);
        assert!(deck.slides[0].title_fit);
        assert_eq!(deck.slides[0].title_level, Some(1));
        assert!(matches!(
            deck.slides[0].blocks[0],
            Block::Heading { fit: true, .. }
        ));
    }

    /// Shortcodes become emoji, footnotes numbers with their text at the end of the
    /// slide; maths and unknown shortcodes are warned about with their line.
    #[test]
    fn shortcodes_footnotes_and_maths() {
        let (deck, warnings) = parse_markdown_report(
            "# Done :tada:\n\nShipped[^a] :rocket: :nosuchcode:\n\n$E = mc^2$\n\n[^a]: On Friday.\n",
            &ParseOptions::default(),
        )
        .unwrap();
        let s = &deck.slides[0];
        assert_eq!(s.title.as_deref(), Some("Done 🎉"));
        assert_eq!(
            s.blocks[0],
            Block::Text {
                text: "Shipped¹ 🚀 :nosuchcode:".into()
            }
        );
        assert_eq!(
            s.blocks.last(),
            Some(&Block::Text {
                text: "¹ On Friday.".into()
            })
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("line 3: `:nosuchcode:`")),
            "{warnings:?}"
        );
        assert!(
            !warnings.iter().any(|w| w.starts_with("line 5")),
            "maths is typeset, not warned: {warnings:?}"
        );
        let maths = crate::maths_ref("E = mc^2", false);
        assert_eq!(
            s.blocks[1],
            Block::Text {
                text: format!("![]({maths})")
            }
        );
    }

    /// `$…$` is an inline formula in its text, `$$…$$` alone in its paragraph a display
    /// formula block; both carry their TeX to the renderer, and money stays text.
    #[test]
    fn maths_inline_and_display() {
        let md = "# Maths\n\nWhen $A v = \\lambda v$ holds, from $5 to $10.\n\n$$\n\\int_0^1 x\\,dx = \\frac{1}{2}\n$$\n";
        let (deck, warnings) = parse_markdown_report(md, &ParseOptions::default()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let s = &deck.slides[0];
        let Block::Text { text } = &s.blocks[0] else {
            panic!("{s:?}")
        };
        let spans = crate::spans(text);
        let formula = spans.iter().find_map(|s| s.image.clone()).unwrap();
        assert_eq!(
            crate::maths_of(&formula),
            Some(("A v = \\lambda v".to_owned(), false))
        );
        assert!(crate::plain(text).contains("from $5 to $10"), "{text}");
        let Block::Image { asset_id, .. } = &s.blocks[1] else {
            panic!("{s:?}")
        };
        let (tex, display) = crate::maths_of(asset_id).unwrap();
        assert!(display && tex.contains("\\frac{1}{2}"), "{tex}");
        // A formula names no asset, and the stored deck keeps it.
        assert!(deck.asset_ids().is_empty());
        let back = crate::Deck::from_json(serde_json::to_value(&deck).unwrap()).unwrap();
        assert_eq!(back, deck);
    }

    /// Marp's inline HTML allowlist is kept as marks of the text; a `<` that only looks
    /// like a tag in the markdown's text stays a character.
    #[test]
    fn inline_html_allowlist_is_drawn() {
        let deck = parse_markdown(
            "# H<sub>2</sub>O\n\nx<sup>2</sup>, <kbd>Ctrl</kbd>, <mark>exam</mark>, <u>u</u>, <small>s</small>, `<sub>` and \\<sub\\>\n",
        )
        .unwrap();
        let s = &deck.slides[0];
        assert_eq!(s.title.as_deref(), Some("H<sub>2</sub>O"));
        let Block::Text { text } = &s.blocks[0] else {
            panic!("{s:?}")
        };
        let spans = crate::spans(text);
        let flagged = |t: &str| spans.iter().find(|s| s.text == t).cloned().unwrap();
        assert!(flagged("2").sup && flagged("Ctrl").code && flagged("exam").mark);
        assert!(flagged("u").underline && flagged("s").small);
        assert!(crate::plain(text).ends_with("<sub> and <sub>"), "{text}");
    }

    /// Marp counts pages as it shows them: `hold` repeats the number, `skip` hides it,
    /// and neither advances the count; `hide` is `false`.
    #[test]
    fn paginate_hold_skip_and_hide() {
        let deck = parse_markdown(
            "---\nmarp: true\npaginate: true\n---\n# A\n\n---\n<!-- _paginate: skip -->\n# B\n\n---\n<!-- _paginate: hold -->\n# C\n\n---\n<!-- _paginate: hide -->\n# D\n",
        )
        .unwrap();
        let s = &deck.slides;
        assert_eq!(deck.marp_theme, Some(MarpTheme::Default));
        assert_eq!((s[0].paginate, s[0].uncounted), (None, false));
        assert_eq!((s[1].paginate, s[1].uncounted), (Some(false), true));
        assert_eq!((s[2].paginate, s[2].uncounted), (None, true));
        assert_eq!((s[3].paginate, s[3].uncounted), (Some(false), false));
        let err = parse_markdown("<!-- paginate: maybe -->\n# A\n").unwrap_err();
        assert!(err.0.contains("hold, skip or hide"), "{err}");
    }

    /// Real Marp decks wrap markdown in `<div class="…">` (a blank line inside, so the
    /// content is markdown) and number chapters with `<span>`: the content is drawn, the
    /// wrappers are reported; an HTML block with text inside, and every other element,
    /// is still refused with its line.
    #[test]
    fn div_and_span_wrappers_are_drawn_as_their_content() {
        let (deck, warnings) = parse_markdown_report(
            "# Cover\n\n<div class=\"meta\">\n\n**Course:** Engines\n\n</div>\n\n\
             <span class=\"chapter-number\">01</span>\n\n\
             <div class=\"columns\">\n<div class=\"col positive\">\n\n- Godot\n\n</div>\n</div>\n",
            &ParseOptions::default(),
        )
        .unwrap();
        let text = format!("{:?}", deck.slides[0].blocks);
        assert!(text.contains("**Course:** Engines"), "{text}");
        assert!(text.contains("01"), "{text}");
        assert!(text.contains("Godot"), "{text}");
        assert!(!text.contains("<div") && !text.contains("<span"), "{text}");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("line 3") && w.contains("<div>")),
            "{warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("<span>")),
            "{warnings:?}"
        );
        // Other elements inside the HTML block: refused, with the fix.
        let err = parse_markdown(
            "# T\n\n<div class=\"box\">\n<table><tr><td>x</td></tr></table>\n</div>\n",
        )
        .unwrap_err()
        .0;
        assert!(
            err.contains("line 4") && err.contains("blank line"),
            "{err}"
        );
        for html in [
            "<script>alert(1)</script>",
            "<div><img src=x></div>",
            "<divx>",
            "</div class=\"x\">",
            "<span>text</span> <blink>bold</blink>",
        ] {
            assert!(
                parse_markdown(&format!("# T\n\n{html}\n")).is_err(),
                "{html} was accepted"
            );
        }
        assert_eq!(wrapper_tags("<div class=\"a\"> </div>"), Some("div"));
        assert_eq!(wrapper_tags("</span>"), Some("span"));
        assert_eq!(wrapper_tags("<div>x</div>"), None);
        // One line of text in a wrapper: the text, as a paragraph.
        let (deck, warnings) = parse_markdown_report(
            "# T\n\n<div class=\"accent\">An NLP system &amp; more</div>\n\nafter\n",
            &ParseOptions::default(),
        )
        .unwrap();
        let text = format!("{:?}", deck.slides[0].blocks);
        assert!(text.contains("An NLP system & more"), "{text}");
        assert!(text.contains("after") && !text.contains("accent"), "{text}");
        assert!(
            warnings.iter().any(|w| w.contains("line 3")),
            "{warnings:?}"
        );
        assert_eq!(
            html_text("<div a=\"b\"><span>x y</span></div>").as_deref(),
            Some("x y")
        );
        assert_eq!(
            html_text("<strong>Goal</strong><br>").as_deref(),
            Some("**Goal**\n")
        );
        assert_eq!(html_text("<div>a <img src=x></div>"), None);
        assert_eq!(html_text("<div></div>"), None);
        assert_eq!(html_text("<p>a</p>"), None);
        // A `<div>` block with HTML lines inside: one paragraph of their text and marks.
        let deck = parse_markdown(
            "# T\n\n<div class=\"box\">\n<strong>Goal</strong><br>\nHelp *households*.\n</div>\n\nafter\n",
        )
        .unwrap();
        let blocks = format!("{:?}", deck.slides[0].blocks);
        assert!(
            blocks.contains("Text { text: \"**Goal**\\nHelp \\\\*households\\\\*.\" }"),
            "{blocks}"
        );
        assert!(blocks.contains("after"), "{blocks}");
    }
}
