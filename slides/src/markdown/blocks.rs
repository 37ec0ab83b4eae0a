//! Block-level events: code blocks, headings, paragraphs, block quotes, lists, tables and
//! footnote definitions, and where a finished block goes.

use pulldown_cmark::{Alignment, CodeBlockKind, HeadingLevel};

use crate::{Align, Block, Invalid, List, ListItem, MAX_NESTING};

use super::builder::SlideBuilder;
use super::frame::Frame;

impl SlideBuilder<'_, '_> {
    pub(super) fn start_code(&mut self, kind: CodeBlockKind<'_>) -> Result<(), Invalid> {
        self.flush_item()?;
        let lang = match kind {
            CodeBlockKind::Fenced(l) if !l.trim().is_empty() => {
                Some(l.split_whitespace().next().unwrap_or_default().to_owned())
            }
            _ => None,
        };
        self.code = Some((lang, String::new()));
        Ok(())
    }

    pub(super) fn end_code(&mut self) -> Result<(), Invalid> {
        if let Some((language, mut body)) = self.code.take() {
            if body.ends_with('\n') {
                body.pop();
            }
            let block = Block::Code {
                language,
                code: body,
            };
            self.emit(block)?;
        }
        Ok(())
    }

    /// The first heading of level 1 or 2, before any block, is the slide's title.
    pub(super) fn end_heading(&mut self, level: HeadingLevel) -> Result<(), Invalid> {
        let t = self.inline.take();
        if self.stack.is_empty()
            && self.slide.title.is_none()
            && self.slide.blocks.is_empty()
            && level <= HeadingLevel::H2
        {
            self.slide.title = Some(t);
            self.slide.title_level = Some(level as u8);
            self.slide.title_fit = std::mem::take(&mut self.found.fit);
            Ok(())
        } else {
            let block = Block::Heading {
                text: t,
                level: Some(level as u8),
                fit: std::mem::take(&mut self.found.fit),
            };
            self.emit(block)
        }
    }

    pub(super) fn end_paragraph(&mut self) -> Result<(), Invalid> {
        let in_text = matches!(self.stack.last(), Some(Frame::Table { .. }));
        if !self.inline.other && !self.inline.images.is_empty() && !in_text {
            // A paragraph of images only: image blocks.
            for (asset_id, alt, width, height) in std::mem::take(&mut self.inline.images) {
                let alt = alt.trim().to_owned();
                let block = Block::Image {
                    asset_id,
                    alt: (!alt.is_empty()).then_some(alt),
                    width,
                    height,
                };
                self.emit(block)?;
            }
            self.inline.take();
        } else {
            let t = self.inline.take();
            if !t.is_empty() {
                self.emit(Block::Text { text: t })?;
            }
        }
        Ok(())
    }

    pub(super) fn start_quote(&mut self) -> Result<(), Invalid> {
        self.flush_item()?;
        if nesting(&self.stack) >= MAX_NESTING {
            return Err(too_deep(self.line));
        }
        self.stack.push(Frame::Quote(Vec::new()));
        Ok(())
    }

    pub(super) fn end_quote(&mut self) -> Result<(), Invalid> {
        if let Some(Frame::Quote(blocks)) = self.stack.pop() {
            if !blocks.is_empty() {
                self.emit(Block::Quote { blocks })?;
            }
        }
        Ok(())
    }

    /// A footnote definition is read like a block quote, then kept for the slide's end.
    pub(super) fn start_footnote(&mut self, label: &str) -> Result<(), Invalid> {
        self.flush_item()?;
        self.notes.open.push(label.to_string());
        self.stack.push(Frame::Quote(Vec::new()));
        Ok(())
    }

    pub(super) fn end_footnote(&mut self) {
        if let (Some(label), Some(Frame::Quote(blocks))) = (self.notes.open.pop(), self.stack.pop())
        {
            let n = self.notes.number(&label);
            self.notes.defined.push((n, blocks));
        }
    }

    pub(super) fn start_list(&mut self, first: Option<u64>) -> Result<(), Invalid> {
        self.flush_item()?;
        if nesting(&self.stack) >= MAX_NESTING {
            return Err(too_deep(self.line));
        }
        self.stack.push(Frame::List {
            ordered: first.is_some(),
            start: first.filter(|&n| n != 1),
            items: Vec::new(),
        });
        Ok(())
    }

    /// A finished list is the open item's nested list, or a block.
    pub(super) fn end_list(&mut self) -> Result<(), Invalid> {
        let Some(Frame::List {
            ordered,
            start,
            items,
        }) = self.stack.pop()
        else {
            return Ok(());
        };
        match self.stack.last_mut() {
            Some(Frame::Item(item)) => {
                if item.list.is_some() {
                    return Err(Invalid(format!(
                        "invalid markdown on line {}: a list item holds one nested list (here a second one starts with another marker)",
                        self.line
                    )));
                }
                item.list = Some(List {
                    items,
                    ordered,
                    start,
                });
                Ok(())
            }
            _ => {
                let block = Block::Bullets {
                    items,
                    ordered,
                    start,
                };
                self.emit(block)
            }
        }
    }

    pub(super) fn start_item(&mut self) {
        self.stack.push(Frame::Item(ListItem::default()));
    }

    pub(super) fn task_marker(&mut self, done: bool) {
        if let Some(Frame::Item(item)) = self.stack.last_mut() {
            item.checked = Some(done);
        }
    }

    pub(super) fn end_item(&mut self) -> Result<(), Invalid> {
        self.flush_item()?;
        if let Some(Frame::Item(item)) = self.stack.pop() {
            if let Some(Frame::List { items, .. }) = self.stack.last_mut() {
                items.push(item);
            }
        }
        Ok(())
    }

    pub(super) fn start_table(&mut self, aligns: &[Alignment]) -> Result<(), Invalid> {
        self.flush_item()?;
        self.stack.push(Frame::Table {
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
        Ok(())
    }

    pub(super) fn end_cell(&mut self) {
        let t = self.inline.take();
        if let Some(Frame::Table { row, .. }) = self.stack.last_mut() {
            row.push(t);
        }
    }

    pub(super) fn end_table_head(&mut self) {
        if let Some(Frame::Table { header, row, .. }) = self.stack.last_mut() {
            *header = std::mem::take(row);
        }
    }

    pub(super) fn end_table_row(&mut self) {
        if let Some(Frame::Table { rows, row, .. }) = self.stack.last_mut() {
            rows.push(std::mem::take(row));
        }
    }

    pub(super) fn end_table(&mut self) -> Result<(), Invalid> {
        if let Some(Frame::Table {
            mut align,
            header,
            rows,
            ..
        }) = self.stack.pop()
        {
            while align.last() == Some(&Align::Auto) {
                align.pop();
            }
            let block = Block::Table {
                align,
                header,
                rows,
            };
            self.emit(block)?;
        }
        Ok(())
    }
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
