//! One slide's markdown, read event by event into a [`Slide`]. [`SlideBuilder`] holds
//! what is open while the events are walked; its methods, one per tag family, live in
//! [`super::blocks`] (headings, paragraphs, code, quotes, lists, tables, footnotes),
//! [`super::inline`] (text, marks, links, images, maths) and [`super::html`].

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::{Block, Invalid, Slide};

use super::directives::{Directives, Found};
use super::frame::{emit, flush_div_text, flush_item, Frame, Inline};
use super::ParseOptions;

/// One slide as read: the slide, the directives it sets for itself (`local`) and for the
/// slides after it (`global`), and its `<style>` elements' CSS with their first lines.
pub(super) struct ReadSlide {
    pub(super) slide: Slide,
    pub(super) local: Directives,
    pub(super) global: Directives,
    pub(super) styles: Vec<(usize, String)>,
}

/// Reads one slide's text, which starts on line `first_line` of the deck.
pub(super) fn parse_slide(
    text: &str,
    first_line: usize,
    opts: &ParseOptions,
    warnings: &mut Vec<String>,
) -> Result<ReadSlide, Invalid> {
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
    let mut b = SlideBuilder::new(text, opts, warnings);
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        b.line = first_line + line_starts.partition_point(|&s| s <= range.start) - 1;
        b.event(event, range)?;
    }
    b.line = first_line;
    b.finish()
}

/// What is open while a slide's events are walked.
pub(super) struct SlideBuilder<'a, 'o> {
    /// The slide's markdown, for what an event does not say (how a formula was written).
    pub(super) source: &'a str,
    pub(super) opts: &'a ParseOptions<'o>,
    pub(super) warnings: &'a mut Vec<String>,
    /// The line of the event being read.
    pub(super) line: usize,
    pub(super) found: Found,
    pub(super) slide: Slide,
    pub(super) inline: Inline,
    pub(super) stack: Vec<Frame>,
    /// The code block being read: its language and text.
    pub(super) code: Option<(Option<String>, String)>,
    /// The image being read: (asset id, alt being collected).
    pub(super) image: Option<(String, String)>,
    /// The target of the link being read.
    pub(super) link: Option<String>,
    /// HTML collected until it is a whole tag or comment.
    pub(super) html: String,
    pub(super) notes: Footnotes,
    /// Inside an HTML block that a `<div>` wrapper opened (its next lines are HTML too),
    /// and the text of its lines so far (`html_text`), drawn as one paragraph.
    pub(super) in_div_block: bool,
    pub(super) div_text: String,
    /// `<style>` elements' CSS and the line each starts on (for the whole deck).
    pub(super) styles: Vec<(usize, String)>,
}

impl<'a, 'o> SlideBuilder<'a, 'o> {
    fn new(source: &'a str, opts: &'a ParseOptions<'o>, warnings: &'a mut Vec<String>) -> Self {
        SlideBuilder {
            source,
            opts,
            warnings,
            line: 0,
            found: Found::default(),
            slide: Slide::default(),
            inline: Inline::default(),
            stack: Vec::new(),
            code: None,
            image: None,
            link: None,
            html: String::new(),
            notes: Footnotes::default(),
            in_div_block: false,
            div_text: String::new(),
            styles: Vec::new(),
        }
    }

    /// One event, handed to the method for its tag family.
    fn event(&mut self, event: Event<'_>, range: Range<usize>) -> Result<(), Invalid> {
        let block_html = matches!(event, Event::Html(_));
        if !block_html {
            self.in_div_block = false;
            self.flush_div_text()?;
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => self.start_code(kind)?,
            Event::End(TagEnd::CodeBlock) => self.end_code()?,
            Event::Text(t) if self.code.is_some() => {
                self.code.as_mut().expect("in code").1.push_str(&t)
            }
            Event::Text(t) if self.image.is_some() => {
                self.image.as_mut().expect("in image").1.push_str(&t)
            }
            Event::Code(t) if self.image.is_some() => {
                self.image.as_mut().expect("in image").1.push_str(&t)
            }
            Event::Text(t) => self.text(&t),
            Event::FootnoteReference(label) => self.footnote_reference(&label),
            Event::Start(Tag::FootnoteDefinition(label)) => self.start_footnote(&label)?,
            Event::End(TagEnd::FootnoteDefinition) => self.end_footnote(),
            Event::InlineMath(tex) | Event::DisplayMath(tex)
                if self.code.is_none() && self.image.is_none() =>
            {
                self.maths(&tex, range)?
            }
            Event::Code(t) => self.code_span(&t),
            Event::Start(Tag::Strong) | Event::End(TagEnd::Strong) => {
                self.inline.text.push_str("**")
            }
            Event::Start(Tag::Emphasis) | Event::End(TagEnd::Emphasis) => {
                self.inline.text.push('*')
            }
            Event::Start(Tag::Strikethrough) | Event::End(TagEnd::Strikethrough) => {
                self.inline.text.push_str("~~")
            }
            Event::SoftBreak => self.inline.text.push(' '),
            Event::HardBreak => self.inline.text.push('\n'),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => self.start_link(link_type, &dest_url)?,
            Event::End(TagEnd::Link) => self.end_link(),
            Event::End(TagEnd::Heading(level)) => self.end_heading(level)?,
            Event::End(TagEnd::Paragraph) => self.end_paragraph()?,
            Event::Start(Tag::BlockQuote(_)) => self.start_quote()?,
            Event::End(TagEnd::BlockQuote(_)) => self.end_quote()?,
            Event::Start(Tag::List(first)) => self.start_list(first)?,
            Event::End(TagEnd::List(_)) => self.end_list()?,
            Event::Start(Tag::Item) => self.start_item(),
            Event::TaskListMarker(done) => self.task_marker(done),
            Event::End(TagEnd::Item) => self.end_item()?,
            Event::Start(Tag::Table(aligns)) => self.start_table(&aligns)?,
            Event::End(TagEnd::TableCell) => self.end_cell(),
            Event::End(TagEnd::TableHead) => self.end_table_head(),
            Event::End(TagEnd::TableRow) => self.end_table_row(),
            Event::End(TagEnd::Table) => self.end_table()?,
            Event::Rule => {
                self.flush_item()?;
                self.emit(Block::Rule)?
            }
            Event::Start(Tag::Image { dest_url, .. }) => self.start_image(&dest_url)?,
            Event::End(TagEnd::Image) => self.end_image(),
            Event::Html(h) | Event::InlineHtml(h) => self.html(&h, block_html)?,
            _ => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Result<ReadSlide, Invalid> {
        self.flush_div_text()?;
        self.notes.append_to(&mut self.slide);
        Ok(ReadSlide {
            slide: self.slide,
            local: self.found.local,
            global: self.found.global,
            styles: self.styles,
        })
    }

    /// Puts a finished block where it belongs (see [`emit`]).
    pub(super) fn emit(&mut self, block: Block) -> Result<(), Invalid> {
        emit(&mut self.slide, &mut self.stack, block, self.line)
    }

    /// See [`flush_item`].
    pub(super) fn flush_item(&mut self) -> Result<(), Invalid> {
        flush_item(&mut self.stack, &mut self.inline, self.line)
    }

    /// See [`flush_div_text`].
    pub(super) fn flush_div_text(&mut self) -> Result<(), Invalid> {
        flush_div_text(
            &mut self.slide,
            &mut self.stack,
            &mut self.div_text,
            self.line,
        )
    }
}

/// A slide's footnotes: numbered in the order they are first referred to (or defined),
/// drawn as paragraphs at the end of the slide.
#[derive(Default)]
pub(super) struct Footnotes {
    labels: Vec<String>,
    /// Labels of the definitions being read.
    pub(super) open: Vec<String>,
    pub(super) defined: Vec<(usize, Vec<Block>)>,
}

impl Footnotes {
    pub(super) fn number(&mut self, label: &str) -> usize {
        match self.labels.iter().position(|l| l == label) {
            Some(i) => i + 1,
            None => {
                self.labels.push(label.to_owned());
                self.labels.len()
            }
        }
    }

    pub(super) fn append_to(mut self, slide: &mut Slide) {
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
