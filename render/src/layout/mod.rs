//! The layout engine shared by the SVG and PDF writers: it turns a slide into a flat
//! display list (boxes, positioned single-style text runs, images) on a canvas 1080
//! units tall, as wide as the output's aspect ratio makes it.
//!
//! Text is measured with the embedded fonts' advances (no kerning; both writers draw
//! without kerning too), wrapped greedily at spaces, and the whole slide is shrunk step
//! by step until it fits.

mod blocks;
mod code;
mod lists;
mod page;
mod paragraph;
mod tables;
mod text;

use std::collections::HashMap;
use std::rc::Rc;

use plinth_slides::{
    spans, walk_blocks, Background, BackgroundFit, BackgroundPosition, Block, Deck, Layout, Slide,
};

use crate::fonts::{self, font_metrics, metrics, Face, FontKey};
use crate::highlight;
use crate::Size;

/// Canvas height in layout units; at 1080p a unit is a pixel.
pub const CANVAS_HEIGHT: f32 = 1080.0;

pub use crate::look::slide_palette;
use crate::look::{readable, Kind, Look, TableStyle, MIN_CONTRAST};
pub use crate::palette::{Color, Palette};

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A filled box; `r` is the corner radius.
    Rect {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        r: f32,
        fill: Color,
    },
    /// One run of text in one font; `y` is the baseline. `face` is the style asked
    /// for, `font` the face that draws it (the style's own, or a fallback).
    Text {
        x: f32,
        y: f32,
        size: f32,
        face: Face,
        font: FontKey,
        fill: Color,
        text: String,
    },
    /// An image stretched to the box (the box already has the image's aspect ratio).
    Image {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        asset_id: String,
        /// Only this box (x, y, w, h) of the image shows.
        clip: Option<[f32; 4]>,
    },
    /// A clickable area (PDF link annotation); draws nothing.
    Link {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        url: String,
    },
    /// Where a part of the slide starts: the items up to its [`Item::End`] are that
    /// part. Draws nothing; only [`page_marked`] keeps these, for the HTML export's
    /// markup (what a screen reader announces, what a copy reads as lines).
    Begin(Role),
    End,
}

/// What a part of the slide is, for its markup.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    Title,
    Heading(u8),
    Paragraph,
    List {
        ordered: bool,
    },
    ListItem,
    /// A list item's bullet, number or check box: shown, not read.
    Marker,
    /// A code block whose lines are `line_h` apart (blank lines draw nothing, so the
    /// markup counts them from the gaps).
    Code {
        line_h: f32,
    },
    Quote,
    Table,
    Row,
    Cell {
        header: bool,
    },
    /// The next image item and what it shows (its alt text).
    Image {
        alt: String,
    },
    Header,
    Footer,
    PageNumber,
}

pub struct Page {
    pub width: f32,
    pub height: f32,
    pub background: Color,
    pub items: Vec<Item>,
    /// The shrink step the content was drawn at (1.0 when it fit as it was); the
    /// writers draw the items as placed, so only the tests read it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub scale: f32,
}

/// An image's own size; vector images may be scaled up freely.
#[derive(Debug, Clone, Copy)]
pub struct Natural {
    pub width: f32,
    pub height: f32,
    pub vector: bool,
}

/// Natural sizes of the images a slide uses, by asset id; a missing entry draws a
/// placeholder.
pub type NaturalSizes = HashMap<String, Natural>;

// Type sizes, margins and spacing come from the deck's look (`crate::look`).
/// Between the columns of a slide split by column breaks.
const COLUMN_GAP: f32 = 70.0;
const MIN_IMAGE_HEIGHT: f32 = 160.0;
/// Raster images are not blown up beyond this factor of their pixel size.
const MAX_UPSCALE: f32 = 2.0;
/// Shrink steps tried in order; the last is the floor, where what still overflows is cut.
const SCALES: [f32; 10] = [1.0, 0.92, 0.85, 0.78, 0.72, 0.66, 0.6, 0.55, 0.5, 0.45];
/// Below this a code block's lines are cut with an ellipsis instead of shrinking more.
const MIN_CODE_SIZE: f32 = 13.0;

/// Where a content slide's body goes when it is shorter than the room under the title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Centred in that room: a slide seen across a room.
    Balanced,
    /// At the top: a page read like a document (a PDF's notes pages).
    Top,
}

// The parts of the engine share their helpers with each other.
use blocks::*;
use code::*;
use lists::*;
use paragraph::*;
use tables::*;
use text::*;

pub use page::{page, page_marked, page_with};

fn translate(item: Item, dx: f32, dy: f32) -> Item {
    match item {
        Item::Rect {
            x,
            y,
            w,
            h,
            r,
            fill,
        } => Item::Rect {
            x: x + dx,
            y: y + dy,
            w,
            h,
            r,
            fill,
        },
        Item::Text {
            x,
            y,
            size,
            face,
            font,
            fill,
            text,
        } => Item::Text {
            x: x + dx,
            y: y + dy,
            size,
            face,
            font,
            fill,
            text,
        },
        Item::Image {
            x,
            y,
            w,
            h,
            asset_id,
            clip,
        } => Item::Image {
            x: x + dx,
            y: y + dy,
            w,
            h,
            asset_id,
            clip: clip.map(|[cx, cy, cw, ch]| [cx + dx, cy + dy, cw, ch]),
        },
        Item::Link { x, y, w, h, url } => Item::Link {
            x: x + dx,
            y: y + dy,
            w,
            h,
            url,
        },
        marker @ (Item::Begin(_) | Item::End) => marker,
    }
}

/// `items` as the part `role`.
fn part(role: Role, items: Vec<Item>) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len() + 2);
    out.push(Item::Begin(role));
    out.extend(items);
    out.push(Item::End);
    out
}

fn bottom(item: &Item) -> f32 {
    match item {
        Item::Rect { y, h, .. } | Item::Image { y, h, .. } | Item::Link { y, h, .. } => y + h,
        Item::Text { y, size, face, .. } => y + metrics(*face).descent * size,
        // Markers take no room: a part cut at the floor scale keeps its bounds.
        Item::Begin(_) | Item::End => 0.0,
    }
}

#[cfg(test)]
mod tests;
