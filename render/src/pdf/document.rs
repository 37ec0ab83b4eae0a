//! The document around the pages: fonts and colour glyphs embedded, the file written,
//! compressed and given stable identifiers.

use std::collections::{BTreeMap, BTreeSet};

use printpdf::{PdfDocument, PdfFont, PdfPage, PdfSaveOptions, XObjectId};

use crate::fonts::FontKey;
use crate::image::decode_raster;
use crate::{Budget, RenderError};

use super::images::pixels_xobject;
use super::text::{font_id, subset_font, Bitmap, GlyphMap};

/// Each used font's subset.
pub(super) fn embed_fonts(
    doc: &mut PdfDocument,
    used: &BTreeMap<FontKey, BTreeSet<u16>>,
    budget: &Budget,
) -> Result<(), RenderError> {
    for (font, gids) in used {
        budget.check()?;
        let subset = subset_font(*font, gids)?;
        doc.resources
            .fonts
            .map
            .insert(font_id(*font), PdfFont::new(subset));
    }
    Ok(())
}

/// Each colour glyph drawn, as an image.
pub(super) fn embed_emoji(
    doc: &mut PdfDocument,
    emoji: GlyphMap<Option<(XObjectId, Bitmap)>>,
    budget: &Budget,
) -> Result<(), RenderError> {
    let mut emoji: Vec<_> = emoji.into_values().flatten().collect();
    emoji.sort_by(|a, b| a.0 .0.cmp(&b.0 .0));
    for (id, b) in emoji {
        budget.check()?;
        match decode_raster(&b.png, image::ImageFormat::Png) {
            Ok(img) => {
                doc.resources.xobjects.map.insert(id, pixels_xobject(&img));
            }
            Err(e) => {
                return Err(RenderError::Failed(format!(
                    "a colour glyph could not be decoded: {e}"
                )))
            }
        }
    }
    Ok(())
}

/// The document with its pages, as PDF bytes.
pub(super) fn save(
    mut doc: PdfDocument,
    pages: Vec<PdfPage>,
    budget: &Budget,
) -> Result<Vec<u8>, RenderError> {
    let opts = PdfSaveOptions {
        // Compressed below, faster than printpdf would.
        optimize: false,
        // Already subset above; printpdf would embed the whole font otherwise anyway.
        subset_fonts: false,
        secure: true,
        // Every image is an encoded stream already (above).
        image_optimization: None,
    };
    budget.check()?;
    let mut warnings = Vec::new();
    let mut lo = doc
        .with_pages(pages)
        .to_lopdf_document(&opts, &mut warnings);
    compress_streams(&mut lo);
    let mut pdf = Vec::new();
    lo.save_to(&mut pdf)
        .map_err(|e| RenderError::Failed(format!("the PDF could not be written: {e}")))?;
    stable_file_id(&mut pdf);
    Ok(pdf)
}

/// Compresses every stream that has no filter yet (page contents, font programs) at
/// zlib's default level: printpdf's `optimize` uses the slowest, which took a third of an
/// export for a few percent of the file. A stream that would not shrink stays as it is.
fn compress_streams(doc: &mut lopdf::Document) {
    use std::io::Write;
    for object in doc.objects.values_mut() {
        let lopdf::Object::Stream(stream) = object else {
            continue;
        };
        if stream.dict.get(b"Filter").is_ok() || !stream.allows_compression {
            continue;
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        let Ok(packed) = z.write_all(&stream.content).and_then(|_| z.finish()) else {
            continue;
        };
        if packed.len() + 19 < stream.content.len() {
            stream.dict.set("Filter", "FlateDecode");
            stream.set_content(packed);
        }
    }
}

/// printpdf draws the trailer's file identifiers from a process-wide counter, so the
/// same deck came out different on every call. Both are 32 letters; replacing them
/// with letters from a hash of the document keeps every byte offset valid.
fn stable_file_id(pdf: &mut [u8]) {
    const MARK: &[u8] = b"/ID[(";
    let Some(at) = pdf.windows(MARK.len()).rposition(|w| w == MARK) else {
        return;
    };
    let start = at + MARK.len();
    let fits = pdf.len() > start + 66
        && pdf[start + 32] == b')'
        && pdf[start + 33] == b'('
        && pdf[start + 66] == b')';
    if !fits {
        return;
    }
    // FNV-1a with two seeds: 128 bits, one letter per 4 bits.
    let fnv = |seed: u64| {
        pdf[..at]
            .iter()
            .fold(seed, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
    };
    let (a, b) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4));
    let letters: Vec<u8> = (0..32)
        .map(|i| {
            let h = if i < 16 { a } else { b };
            b'A' + ((h >> ((i % 16) * 4)) & 0xf) as u8
        })
        .collect();
    pdf[start..start + 32].copy_from_slice(&letters);
    pdf[start + 34..start + 66].copy_from_slice(&letters);
}
