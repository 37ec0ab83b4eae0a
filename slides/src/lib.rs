//! The slide deck document: its JSON shape, the markdown and template front doors,
//! validation, slide operations and the audience view. Pure data; no I/O.
//!
//! The format is described for clients in `docs/slides.md` (with a JSON Schema).

mod blocks;
mod deck;
mod inline;
mod markdown;
mod marks;
mod model;
#[cfg(feature = "schema")]
mod schema;
mod style;
mod templates;
mod validate;

use std::collections::HashSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

pub use markdown::{
    parse_markdown, parse_markdown_report, parse_markdown_with, ParseOptions, ResolveImage,
};
pub use templates::{template, TemplateInfo, TEMPLATES};

/// Limits enforced on every saved deck (also listed by `capabilities`).
pub const MAX_SLIDES: usize = 200;
pub const MAX_BLOCKS_PER_SLIDE: usize = 40;
pub const MAX_TEXT_CHARS: usize = 10_000;
pub const MAX_MARKDOWN_BYTES: usize = 512 * 1024;
pub const MAX_ID_CHARS: usize = 64;
/// Operations in one `slides/update` batch. With [`MAX_SLIDES`] checked after every
/// insert, a batch costs at most `MAX_OPERATIONS × MAX_SLIDES` steps (H4).
pub const MAX_OPERATIONS: usize = 500;

pub use blocks::*;
pub use marks::*;
pub use model::*;
pub use style::*;
pub use validate::*;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

fn invalid<T>(msg: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(msg.into()))
}

#[cfg(test)]
mod tests;
