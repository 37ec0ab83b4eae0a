//! The four DejaVu faces, embedded in the binary so every machine renders the same
//! pixels, and their glyph advances for the layout engine.

use std::sync::{Arc, LazyLock};

use resvg::usvg::fontdb;
use skrifa::{instance::LocationRef, instance::Size, MetadataProvider};

/// A face of the embedded family. Bold italic has no face of its own: it uses Bold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Face {
    Regular,
    Bold,
    Italic,
    Mono,
}

impl Face {
    pub const ALL: [Face; 4] = [Face::Regular, Face::Bold, Face::Italic, Face::Mono];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn bytes(self) -> &'static [u8] {
        match self {
            Face::Regular => include_bytes!("../../fixtures/fonts/DejaVuSans.ttf"),
            Face::Bold => include_bytes!("../../fixtures/fonts/DejaVuSans-Bold.ttf"),
            Face::Italic => include_bytes!("../../fixtures/fonts/DejaVuSans-Oblique.ttf"),
            Face::Mono => include_bytes!("../../fixtures/fonts/DejaVuSansMono.ttf"),
        }
    }

    /// SVG/CSS font attributes that select exactly this face from the font database.
    pub fn family(self) -> &'static str {
        match self {
            Face::Mono => MONO_FAMILY,
            _ => SANS_FAMILY,
        }
    }

    pub fn bold(self) -> bool {
        self == Face::Bold
    }

    pub fn italic(self) -> bool {
        self == Face::Italic
    }
}

pub const SANS_FAMILY: &str = "DejaVu Sans";
pub const MONO_FAMILY: &str = "DejaVu Sans Mono";

/// Only the embedded faces, never system fonts; generic families point at them
/// (usvg's defaults map `sans-serif` to Arial, which is not here).
pub static FONT_DB: LazyLock<Arc<fontdb::Database>> = LazyLock::new(|| {
    let mut db = fontdb::Database::new();
    for face in Face::ALL {
        db.load_font_data(face.bytes().to_vec());
    }
    db.set_sans_serif_family(SANS_FAMILY);
    db.set_serif_family(SANS_FAMILY);
    db.set_monospace_family(MONO_FAMILY);
    db.set_cursive_family(SANS_FAMILY);
    db.set_fantasy_family(SANS_FAMILY);
    Arc::new(db)
});

/// Advances in em, precomputed for the Basic Multilingual Plane: layout measures
/// every character, and a table lookup keeps that off the profile.
pub struct Metrics {
    pub ascent: f32,
    pub descent: f32,
    bmp: Vec<f32>,
    font: skrifa::FontRef<'static>,
    upem: f32,
}

impl Metrics {
    fn load(face: Face) -> Metrics {
        let font = skrifa::FontRef::new(face.bytes()).expect("embedded font parses");
        let m = font.metrics(Size::unscaled(), LocationRef::default());
        let upem = m.units_per_em as f32;
        let mut bmp = vec![0.0; 0x1_0000];
        let charmap = font.charmap();
        let glyphs = font.glyph_metrics(Size::unscaled(), LocationRef::default());
        let notdef = glyphs.advance_width(skrifa::GlyphId::new(0)).unwrap_or(0.0) / upem;
        for (cp, slot) in bmp.iter_mut().enumerate() {
            *slot = match char::from_u32(cp as u32).and_then(|c| charmap.map(c)) {
                Some(gid) => glyphs.advance_width(gid).unwrap_or(0.0) / upem,
                None => notdef,
            };
        }
        Metrics {
            ascent: m.ascent / upem,
            descent: -m.descent / upem,
            bmp,
            font,
            upem,
        }
    }

    /// Advance of one character in em (the .notdef advance when the face lacks it).
    pub fn advance(&self, c: char) -> f32 {
        match self.bmp.get(c as usize) {
            Some(a) => *a,
            None => {
                let glyphs = self
                    .font
                    .glyph_metrics(Size::unscaled(), LocationRef::default());
                let gid = self
                    .font
                    .charmap()
                    .map(c)
                    .unwrap_or(skrifa::GlyphId::new(0));
                glyphs.advance_width(gid).unwrap_or(0.0) / self.upem
            }
        }
    }

    pub fn width(&self, text: &str) -> f32 {
        text.chars().map(|c| self.advance(c)).sum()
    }

    /// The face's glyph for `c`, if it has one (used to pick glyphs when subsetting).
    pub fn glyph(&self, c: char) -> Option<u16> {
        self.font.charmap().map(c).map(|g| g.to_u32() as u16)
    }
}

static METRICS: LazyLock<[Metrics; 4]> = LazyLock::new(|| Face::ALL.map(Metrics::load));

pub fn metrics(face: Face) -> &'static Metrics {
    &METRICS[face.index()]
}
