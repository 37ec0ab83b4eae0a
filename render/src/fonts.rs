//! Fonts: the four DejaVu faces embedded in the binary (every machine renders Latin,
//! Greek and Cyrillic the same), then fallback faces for every other script and for
//! colour emoji, found in the operator's `PLINTH_FONTS_DIR` and in the system's font
//! directories (Debian: `fonts-noto-core`, `fonts-noto-cjk`, `fonts-noto-color-emoji`).
//!
//! Each character is drawn in the first font that has it, in this order: the style's
//! embedded face; then the fallback families, the operator's first, then Noto families
//! by script, then the rest by name. Right-to-left scripts and emoji prefer a fallback
//! family even where DejaVu has a glyph (DejaVu's Arabic and its monochrome emoji are
//! partial), so a word never changes font half-way.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

// The character classes live in `chars`, re-exported where callers look for them.
use crate::chars::is_mark;
pub use crate::chars::{emoji_presentation, ignorable, rtl};
use resvg::usvg::fontdb;
use skrifa::{instance::LocationRef, instance::Size, MetadataProvider};

use crate::font_index;

/// A style of the embedded family. Bold italic has no face of its own: it uses Bold.
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

    /// The embedded face of this style.
    pub fn font(self) -> FontKey {
        FontKey(self.index() as u16)
    }
}

pub const SANS_FAMILY: &str = "DejaVu Sans";
pub const MONO_FAMILY: &str = "DejaVu Sans Mono";

/// The operator's font directory (read once, at the first render).
pub const FONTS_DIR_ENV: &str = "PLINTH_FONTS_DIR";
/// Where the system's fonts are (Debian puts packaged fonts under the first).
const SYSTEM_DIRS: [&str; 2] = ["/usr/share/fonts", "/usr/local/share/fonts"];

/// Fallback families tried first, in this order, after the operator's own.
const PREFERRED: &[&str] = &[
    "Noto Sans",
    "Noto Sans CJK JP",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
    "Noto Color Emoji",
    "Noto Sans Symbols",
    "Noto Sans Symbols2",
    "Noto Sans Math",
];
/// For code: monospaced families first.
const PREFERRED_MONO: &[&str] = &["Noto Sans Mono", "Noto Sans Mono CJK JP"];

/// Characters whose font is remembered (about 24 bytes each).
const MAX_PICKS: usize = 65_536;

/// One face of the registry: 0–3 are the embedded faces ([`Face::font`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FontKey(pub u16);

pub struct Font {
    pub family: String,
    pub weight: u16,
    pub italic: bool,
    pub monospaced: bool,
    /// From `PLINTH_FONTS_DIR`.
    pub operator: bool,
    id: fontdb::ID,
    embedded: Option<&'static [u8]>,
    index: u32,
    /// The database the file is read through (memory-mapped, for a moment).
    db: Option<Arc<fontdb::Database>>,
    loaded: OnceLock<Option<Metrics>>,
}

impl Font {
    /// The face's metrics, read on first use (`None`: the file went away or does not
    /// parse). A fallback face keeps only the tables layout and shaping read, copied
    /// from its mapped file (about 1 MB of a 20 MB CJK face; the outlines and colour
    /// bitmaps stay on disk until a PDF needs them, see [`full_data`]).
    pub fn metrics(&self) -> Option<&Metrics> {
        self.loaded
            .get_or_init(|| match (self.embedded, &self.db) {
                (Some(b), _) => Metrics::load(b, self.index, true, None),
                (None, Some(db)) => {
                    let (tables, bitmap) = db.with_face_data(self.id, |data, index| {
                        Some((layout_tables(data, index)?, bitmap_only(data, index)))
                    })??;
                    // Kept for the life of the process: only faces that text is
                    // actually drawn in get here.
                    let bytes: &'static [u8] = Box::leak(tables.into_boxed_slice());
                    Metrics::load(bytes, 0, false, Some(bitmap))
                }
                (None, None) => None,
            })
            .as_ref()
    }

    /// Whether the face maps `c`, without reading a fallback file whole.
    fn has(&self, db: &fontdb::Database, c: char) -> bool {
        if let Some(m) = self.loaded.get() {
            return m.as_ref().is_some_and(|m| m.glyph(c).is_some());
        }
        db.with_face_data(self.id, |data, index| {
            skrifa::FontRef::from_index(data, index)
                .ok()
                .and_then(|f| f.charmap().map(c))
                .is_some()
        })
        .unwrap_or(false)
    }
}

pub struct Registry {
    /// Every face, for usvg (the PNG path resolves the same families).
    pub db: Arc<fontdb::Database>,
    pub fonts: Vec<Font>,
    /// Fallback families in order of preference, each with its faces.
    families: Vec<(String, Vec<FontKey>)>,
    /// The same, monospaced families first (for code).
    mono_families: Vec<usize>,
    picks: Mutex<HashMap<(Face, char, Pref), Option<FontKey>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Pref {
    Primary,
    Fallback,
    Emoji,
}

pub static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let dir = std::env::var_os(FONTS_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    Registry::load_indexed(
        dir.as_deref(),
        &SYSTEM_DIRS.map(Path::new),
        INDEX_DIR.get().map(PathBuf::as_path),
    )
});

/// Where the process keeps its index of the font directories, if it does.
static INDEX_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Keeps an index of the font directories in `dir` (the CLI's cache directory), read
/// instead of scanning them while nothing in them changes. Only before the first
/// render: later calls, and calls after the fonts are loaded, change nothing.
pub fn keep_index_in(dir: PathBuf) {
    let _ = INDEX_DIR.set(dir);
}

/// The process's font database, as usvg wants it.
pub static FONT_DB: LazyLock<Arc<fontdb::Database>> = LazyLock::new(|| REGISTRY.db.clone());

impl Registry {
    /// Scans without an index (the tests' registries).
    #[cfg(test)]
    pub fn load(operator_dir: Option<&Path>, system_dirs: &[&Path]) -> Registry {
        Registry::load_indexed(operator_dir, system_dirs, None)
    }

    /// The operator's and the system's fonts after the embedded ones; with `index_dir`, the faces come from the index of the
    /// directories kept there when it is still valid, and a scan writes a fresh one
    /// ([`crate::font_index`]): the same faces in the same order either way.
    pub fn load_indexed(
        operator_dir: Option<&Path>,
        system_dirs: &[&Path],
        index_dir: Option<&Path>,
    ) -> Registry {
        let mut db = fontdb::Database::new();
        for face in Face::ALL {
            // Shared with the binary's own copy, not copied.
            db.load_font_source(fontdb::Source::Binary(Arc::new(face.bytes())));
        }
        let embedded: Vec<fontdb::ID> = db.faces().map(|f| f.id).collect();
        let operator_ids = scan(&mut db, operator_dir, system_dirs, index_dir);
        // Copies of the embedded families elsewhere would make the same name mean two
        // files (and the PNG and PDF could draw different versions).
        let shadowing: Vec<fontdb::ID> = db
            .faces()
            .filter(|f| !embedded.contains(&f.id))
            .filter(|f| {
                f.families
                    .iter()
                    .any(|(n, _)| n == SANS_FAMILY || n == MONO_FAMILY)
            })
            .map(|f| f.id)
            .collect();
        for id in shadowing {
            db.remove_face(id);
        }
        db.set_sans_serif_family(SANS_FAMILY);
        db.set_serif_family(SANS_FAMILY);
        db.set_monospace_family(MONO_FAMILY);
        db.set_cursive_family(SANS_FAMILY);
        db.set_fantasy_family(SANS_FAMILY);
        let db = Arc::new(db);

        let mut fonts = Vec::new();
        for (i, face) in Face::ALL.iter().enumerate() {
            let info = db.face(embedded[i]).expect("embedded face loaded");
            fonts.push(Font {
                family: info.families[0].0.clone(),
                weight: info.weight.0,
                italic: info.style != fontdb::Style::Normal,
                monospaced: info.monospaced,
                operator: false,
                id: info.id,
                embedded: Some(face.bytes()),
                index: 0,
                db: None,
                loaded: OnceLock::new(),
            });
        }
        for info in db.faces().filter(|f| !embedded.contains(&f.id)) {
            if matches!(info.source, fontdb::Source::Binary(_)) {
                continue;
            }
            fonts.push(Font {
                family: info.families[0].0.clone(),
                weight: info.weight.0,
                italic: info.style != fontdb::Style::Normal,
                monospaced: info.monospaced,
                operator: operator_ids.contains(&info.id),
                id: info.id,
                embedded: None,
                index: info.index,
                db: Some(db.clone()),
                loaded: OnceLock::new(),
            });
        }

        // Families by preference: operator's, the preferred list, the rest by name.
        let mut by_family: HashMap<&str, Vec<FontKey>> = HashMap::new();
        for (i, f) in fonts.iter().enumerate().skip(Face::ALL.len()) {
            by_family
                .entry(f.family.as_str())
                .or_default()
                .push(FontKey(i as u16));
        }
        let rank = |name: &str, keys: &[FontKey]| {
            let operator = keys.iter().any(|k| fonts[k.0 as usize].operator);
            let preferred = PREFERRED
                .iter()
                .position(|p| *p == name)
                .unwrap_or(PREFERRED.len());
            (!operator, preferred, name.to_owned())
        };
        let mut families: Vec<(String, Vec<FontKey>)> = by_family
            .into_iter()
            .map(|(n, k)| (n.to_owned(), k))
            .collect();
        families.sort_by_cached_key(|(n, k)| rank(n, k));
        let mut mono_families: Vec<usize> = (0..families.len()).collect();
        mono_families.sort_by_key(|&i| {
            let (name, keys) = &families[i];
            let mono = keys.iter().any(|k| fonts[k.0 as usize].monospaced)
                || PREFERRED_MONO.contains(&name.as_str());
            let preferred = PREFERRED_MONO
                .iter()
                .position(|p| *p == name)
                .unwrap_or(PREFERRED_MONO.len());
            (!mono, preferred, i)
        });
        Registry {
            db,
            fonts,
            families,
            mono_families,
            picks: Mutex::new(HashMap::new()),
        }
    }

    pub fn font(&self, key: FontKey) -> &Font {
        &self.fonts[key.0 as usize]
    }

    /// The face's metrics; the embedded faces always load.
    pub fn metrics(&self, key: FontKey) -> &Metrics {
        match self.font(key).metrics() {
            Some(m) => m,
            None => self
                .font(FontKey(0))
                .metrics()
                .expect("embedded font parses"),
        }
    }

    /// Fallback family names in the order they are tried.
    #[cfg(test)]
    pub fn family_names(&self) -> Vec<&str> {
        self.families.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Embedded families, then fallbacks in the order they are tried.
    pub fn families(&self) -> Vec<crate::FontFamily> {
        let styles = |keys: &[FontKey]| {
            let mut s: Vec<&'static str> = Vec::new();
            for k in keys {
                let f = self.font(*k);
                let style = match (f.weight >= 600, f.italic) {
                    (_, true) => "italic",
                    (true, false) => "bold",
                    (false, false) => "regular",
                };
                if !s.contains(&style) {
                    s.push(style);
                }
            }
            s.sort_by_key(|s| ["regular", "bold", "italic"].iter().position(|x| x == s));
            s
        };
        let mut out = vec![
            crate::FontFamily {
                family: SANS_FAMILY.into(),
                role: "text",
                source: "bundled",
                styles: vec!["regular", "bold", "italic"],
            },
            crate::FontFamily {
                family: MONO_FAMILY.into(),
                role: "code",
                source: "bundled",
                styles: vec!["regular"],
            },
        ];
        for (name, keys) in &self.families {
            out.push(crate::FontFamily {
                family: name.clone(),
                role: "fallback",
                source: if keys.iter().any(|k| self.font(*k).operator) {
                    "operator"
                } else {
                    "system"
                },
                styles: styles(keys),
            });
        }
        out
    }

    /// The font that draws `c` in `face`; `None` when no font has it. `prev` is the
    /// font of the character before: joiners, variation selectors and spaces stay in
    /// it, so a run of one script is not cut at every space.
    pub fn pick(&self, face: Face, c: char, prev: Option<FontKey>) -> Option<FontKey> {
        self.pick_in(face, c, prev, None)
    }

    /// As [`Registry::pick`], knowing the next character: U+FE0F after a character
    /// asks for its emoji form.
    pub fn pick_in(
        &self,
        face: Face,
        c: char,
        prev: Option<FontKey>,
        next: Option<char>,
    ) -> Option<FontKey> {
        let primary = face.font();
        if let Some(p) = prev.filter(|&p| p != primary) {
            let joins = ignorable(c)
                || is_mark(c)
                // Spaces stay in a script's font, not in an emoji font's wide space.
                || c == ' ' && self.font(p).metrics().is_some_and(|m| !m.bitmap);
            if joins && (ignorable(c) || self.font(p).has(&self.db, c)) {
                return Some(p);
            }
        }
        let pref = if emoji_presentation(c) || next == Some('\u{fe0f}') && !c.is_ascii() {
            Pref::Emoji
        } else if rtl(c) {
            Pref::Fallback
        } else {
            Pref::Primary
        };
        if pref == Pref::Primary && self.metrics(primary).glyph(c).is_some() {
            return Some(primary);
        }
        if ignorable(c) {
            return Some(prev.unwrap_or(primary));
        }
        let key = (face, c, pref);
        if let Some(hit) = self.picks.lock().ok().and_then(|m| m.get(&key).copied()) {
            return hit;
        }
        let found = self.search(face, c, pref);
        if let Ok(mut m) = self.picks.lock() {
            // Bounded: text in every script could otherwise fill it with a million
            // characters; starting over costs a few lookups.
            if m.len() >= MAX_PICKS {
                m.clear();
            }
            m.insert(key, found);
        }
        found
    }

    fn search(&self, face: Face, c: char, pref: Pref) -> Option<FontKey> {
        let order: Box<dyn Iterator<Item = usize>> = if face == Face::Mono {
            Box::new(self.mono_families.iter().copied())
        } else {
            Box::new(0..self.families.len())
        };
        let order: Vec<usize> = order.collect();
        let emoji_first = order
            .iter()
            .copied()
            .filter(|&i| pref == Pref::Emoji && self.families[i].0.contains("Emoji"));
        let rest = order.iter().copied();
        for i in emoji_first.chain(rest) {
            let (_, keys) = &self.families[i];
            let Some(best) = self.style_match(keys, face) else {
                continue;
            };
            // Coverage is checked on the family's regular face (bold faces of one
            // family cover the same characters), then on the chosen one.
            if self.font(best).has(&self.db, c) && self.font(best).metrics().is_some() {
                return Some(best);
            }
        }
        let primary = face.font();
        self.metrics(primary).glyph(c).map(|_| primary)
    }

    /// The family's face closest to the style: weight 700 for bold, 400 otherwise; an
    /// italic face for italic when the family has one.
    fn style_match(&self, keys: &[FontKey], face: Face) -> Option<FontKey> {
        let want_weight: i32 = if face == Face::Bold { 700 } else { 400 };
        let want_italic = face == Face::Italic;
        keys.iter().copied().min_by_key(|k| {
            let f = self.font(*k);
            (
                f.italic != want_italic,
                (f.weight as i32 - want_weight).abs(),
                k.0,
            )
        })
    }
}

/// Adds the faces of the operator's and the system's directories to `db` (after the
/// embedded ones), from a valid index in `index_dir` or by scanning them; the ids of
/// the operator's faces.
fn scan(
    db: &mut fontdb::Database,
    operator_dir: Option<&Path>,
    system_dirs: &[&Path],
    index_dir: Option<&Path>,
) -> Vec<fontdb::ID> {
    let roots: Vec<font_index::Root> = operator_dir
        .map(|d| font_index::Root {
            path: d.to_owned(),
            operator: true,
        })
        .into_iter()
        .chain(system_dirs.iter().map(|d| font_index::Root {
            path: d.to_path_buf(),
            operator: false,
        }))
        .collect();
    let file = index_dir.map(|d| font_index::file_for(d, &roots));
    if let Some(found) = file.as_deref().and_then(|f| font_index::read(f, &roots)) {
        let mut operator_ids = Vec::new();
        for (info, operator) in found {
            let id = db.push_face_info(info);
            if operator {
                operator_ids.push(id);
            }
        }
        return operator_ids;
    }
    // Stamped before the scan: a font changed meanwhile invalidates the index.
    let stamps = file.is_some().then(|| font_index::stamp(&roots));
    let before: Vec<fontdb::ID> = db.faces().map(|f| f.id).collect();
    let mut operator_ids = Vec::new();
    if let Some(dir) = operator_dir {
        db.load_fonts_dir(dir);
        operator_ids = db
            .faces()
            .map(|f| f.id)
            .filter(|id| !before.contains(id))
            .collect();
    }
    for dir in system_dirs {
        db.load_fonts_dir(dir);
    }
    if let (Some(file), Some(stamps)) = (file, stamps) {
        let found: Vec<font_index::Found> = db
            .faces()
            .filter(|f| !before.contains(&f.id))
            .map(|f| (f.clone(), operator_ids.contains(&f.id)))
            .collect();
        font_index::write(&file, &roots, stamps, &found);
    }
    operator_ids
}

pub fn registry() -> &'static Registry {
    &REGISTRY
}

/// 256 characters' advances, measured on first use.
type AdvanceBlock = OnceLock<Box<[f32; 256]>>;

/// Advances in em; for the embedded faces precomputed for the Basic Multilingual
/// Plane (layout measures every character, and a table lookup keeps that off the
/// profile).
pub struct Metrics {
    pub ascent: f32,
    pub descent: f32,
    pub upem: f32,
    pub bytes: &'static [u8],
    pub index: u32,
    /// Colour bitmap glyphs (CBDT/sbix) and no outlines: drawn as images in PDF.
    pub bitmap: bool,
    /// The embedded faces' advances for the Basic Multilingual Plane, in blocks of 256
    /// characters filled on first use (a cold run measures a few blocks, not 65,536
    /// characters of each face).
    bmp: Option<Box<[AdvanceBlock]>>,
    notdef: f32,
    charmap: skrifa::charmap::Charmap<'static>,
    glyphs: skrifa::metrics::GlyphMetrics<'static>,
    shaper: harfrust::ShaperData,
}

impl Metrics {
    fn load(
        bytes: &'static [u8],
        index: u32,
        table: bool,
        bitmap: Option<bool>,
    ) -> Option<Metrics> {
        let font = skrifa::FontRef::from_index(bytes, index).ok()?;
        let m = font.metrics(Size::unscaled(), LocationRef::default());
        let upem = m.units_per_em as f32;
        if upem <= 0.0 {
            return None;
        }
        let charmap = font.charmap();
        let glyphs = font.glyph_metrics(Size::unscaled(), LocationRef::default());
        let notdef = glyphs.advance_width(skrifa::GlyphId::new(0)).unwrap_or(0.0) / upem;
        let bmp = table.then(|| (0..256).map(|_| OnceLock::new()).collect());
        let bitmap = bitmap.unwrap_or_else(|| bitmap_only(bytes, index));
        let hr = harfrust::FontRef::from_index(bytes, index).ok()?;
        Some(Metrics {
            ascent: m.ascent / upem,
            descent: -m.descent / upem,
            upem,
            bytes,
            index,
            bitmap,
            bmp,
            notdef,
            charmap,
            glyphs,
            shaper: harfrust::ShaperData::new(&hr),
        })
    }

    /// Advance of one character in em (the .notdef advance when the face lacks it).
    pub fn advance(&self, c: char) -> f32 {
        let cp = c as u32;
        if let Some(block) = self.bmp.as_ref().and_then(|t| t.get(cp as usize >> 8)) {
            let block = block.get_or_init(|| {
                let mut advances = Box::new([0.0; 256]);
                for (i, a) in advances.iter_mut().enumerate() {
                    let cp = (cp & !0xff) | i as u32;
                    *a = match char::from_u32(cp).and_then(|c| self.charmap.map(c)) {
                        Some(gid) => self.glyphs.advance_width(gid).unwrap_or(0.0) / self.upem,
                        None => self.notdef,
                    };
                }
                advances
            });
            return block[cp as usize & 0xff];
        }
        let gid = self.charmap.map(c).unwrap_or(skrifa::GlyphId::new(0));
        self.glyph_advance(gid.to_u32() as u16)
    }

    pub fn glyph_advance(&self, gid: u16) -> f32 {
        self.glyphs
            .advance_width(skrifa::GlyphId::new(gid as u32))
            .unwrap_or(0.0)
            / self.upem
    }

    #[cfg(test)]
    pub fn width(&self, text: &str) -> f32 {
        text.chars().map(|c| self.advance(c)).sum()
    }

    /// The face's glyph for `c`, if it has one.
    pub fn glyph(&self, c: char) -> Option<u16> {
        self.charmap.map(c).map(|g| g.to_u32() as u16)
    }

    /// Shapes one run: glyphs in visual order (right-to-left parts reversed, as usvg
    /// does for the PNG), advances and offsets in em, and where each glyph's cluster
    /// starts in the text (what the PDF's text layer maps it back to). Kerning is off, as in
    /// the rest of the layout.
    pub fn shape(&self, text: &str) -> Vec<Shaped> {
        use harfrust::{Direction, Feature, ShapeOptions, Tag, UnicodeBuffer};
        let mut out = Vec::new();
        let Ok(font) = harfrust::FontRef::from_index(self.bytes, self.index) else {
            return out;
        };
        let shaper = self.shaper.shaper(&font).build();
        let features = [Feature::new(Tag::new(b"kern"), 0, ..)];
        let bidi = unicode_bidi::BidiInfo::new(text, Some(unicode_bidi::Level::ltr()));
        for para in &bidi.paragraphs {
            let (levels, runs) = bidi.visual_runs(para, para.range.clone());
            for run in runs {
                let sub = &text[run.clone()];
                if sub.is_empty() {
                    continue;
                }
                let mut buffer = UnicodeBuffer::new();
                buffer.push_str(sub);
                buffer.set_direction(if levels[run.start].is_ltr() {
                    Direction::LeftToRight
                } else {
                    Direction::RightToLeft
                });
                buffer.guess_segment_properties();
                let output = shaper.shape(buffer, ShapeOptions::new().features(&features));
                let infos = output.glyph_infos();
                let positions = output.glyph_positions();
                for (info, pos) in infos.iter().zip(positions) {
                    let start = info.cluster as usize;
                    out.push(Shaped {
                        gid: info.glyph_id as u16,
                        byte: run.start + start,
                        advance: pos.x_advance as f32 / self.upem,
                        dx: pos.x_offset as f32 / self.upem,
                        dy: pos.y_offset as f32 / self.upem,
                    });
                }
            }
        }
        out
    }
}

/// One shaped glyph; lengths in em.
#[derive(Debug, Clone)]
pub struct Shaped {
    pub gid: u16,
    /// Where its cluster starts in the shaped text (bytes).
    pub byte: usize,
    pub advance: f32,
    pub dx: f32,
    pub dy: f32,
}

/// Whether a run needs shaping: anything beyond the simple alphabets (Latin, Greek,
/// Cyrillic, Armenian) may join, reorder, or stack marks.
pub fn needs_shaping(text: &str) -> bool {
    text.chars().any(|c| c as u32 >= 0x0590)
}

/// Colour bitmap glyphs (CBDT/sbix) and no outlines.
fn bitmap_only(data: &[u8], index: u32) -> bool {
    let Ok(font) = skrifa::FontRef::from_index(data, index) else {
        return false;
    };
    let tag = |t: &[u8; 4]| font.table_data(skrifa::Tag::new(t)).is_some();
    (tag(b"CBDT") || tag(b"sbix")) && !tag(b"glyf") && !tag(b"CFF ")
}

/// The tables layout and shaping read (character map, advances, OpenType layout), as
/// a font file of their own with the same glyph numbers.
fn layout_tables(data: &[u8], index: u32) -> Option<Vec<u8>> {
    const TAGS: [&[u8; 4]; 10] = [
        b"GDEF", b"GPOS", b"GSUB", b"OS/2", b"cmap", b"head", b"hhea", b"hmtx", b"maxp", b"post",
    ];
    let font = skrifa::FontRef::from_index(data, index).ok()?;
    let tables: Vec<(&[u8; 4], &[u8])> = TAGS
        .iter()
        .filter_map(|t| Some((*t, font.table_data(skrifa::Tag::new(t))?.as_bytes())))
        .collect();
    let n = tables.len() as u16;
    let mut out = Vec::new();
    out.extend(0x0001_0000u32.to_be_bytes());
    let pow = if n == 0 {
        0
    } else {
        15 - n.leading_zeros() as u16
    };
    for v in [n, 16 << pow, pow, n * 16 - (16 << pow)] {
        out.extend(v.to_be_bytes());
    }
    // Records sorted by tag (readers search them), data 4-byte aligned after them.
    let at = 12 + 16 * tables.len();
    let mut body = Vec::new();
    for (tag, bytes) in &tables {
        out.extend(*tag);
        out.extend(0u32.to_be_bytes());
        out.extend(((at + body.len()) as u32).to_be_bytes());
        out.extend((bytes.len() as u32).to_be_bytes());
        body.extend(*bytes);
        while body.len() % 4 != 0 {
            body.push(0);
        }
    }
    out.extend(body);
    Some(out)
}

/// Runs `f` on the whole font file of a face and its index in it, for what the layout
/// tables lack: PDF subsetting (outlines) and colour emoji (bitmaps). A system face's
/// file is mapped for the call, not read: only the pages `f` looks at are loaded (a
/// CJK collection is 20 MB). A face whose metrics did not load is drawn with the first
/// embedded face, and so answers with it; `None` when the file went away.
pub fn with_full_data<T>(key: FontKey, f: impl FnOnce(&[u8], u32) -> T) -> Option<T> {
    let font = REGISTRY.font(key);
    if font.metrics().is_none() {
        return Some(f(Face::Regular.bytes(), 0));
    }
    match (font.embedded, &font.db) {
        (Some(b), _) => Some(f(b, font.index)),
        (None, Some(db)) => db.with_face_data(font.id, f),
        (None, None) => None,
    }
}

/// The embedded face's metrics.
pub fn metrics(face: Face) -> &'static Metrics {
    REGISTRY.metrics(face.font())
}

/// Metrics of any face of the registry.
pub fn font_metrics(key: FontKey) -> &'static Metrics {
    REGISTRY.metrics(key)
}

/// The advance of `c` in em in the font that draws it for `face`.
pub fn advance(face: Face, c: char) -> f32 {
    let r = &*REGISTRY;
    let key = r.pick(face, c, None).unwrap_or(face.font());
    r.metrics(key).advance(c)
}
