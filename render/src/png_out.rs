//! A slide's pixels as a PNG: RGB, 8 bits, the `Up` filter on every row, compressed by
//! fdeflate (the png crate's fastest deflate) into a buffer each rendering thread keeps.
//!
//! The png crate's stream writer did the same through three more copies of the data
//! (its row buffer, its filter pass and a 1 MB chunk buffer, zeroed per slide, then the
//! chunk copied into the output); here each row is converted, filtered in one pass over
//! two small row buffers and handed to the compressor, and the compressed stream is
//! copied once, into the file's one IDAT chunk. The RGBA→RGB row conversion lives here
//! too: encoding is its one use.

use std::cell::RefCell;

use crate::RenderError;

thread_local! {
    /// The last slide's compressed stream and row buffers on this thread, kept for the
    /// next slide: fresh ones per slide page-faulted (about a fifth of a run's faults).
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

#[derive(Default)]
struct Buffers {
    zlib: Vec<u8>,
    prev: Vec<u8>,
    cur: Vec<u8>,
    filtered: Vec<u8>,
}

/// The PNG of `w`×`h` premultiplied RGBA rows (`data`), alpha dropped (slides are
/// opaque, so premultiplied equals straight colour). Each row is overwritten with
/// `refill` once encoded, while it is in cache (the next slide's canvas).
pub fn encode(
    w: u32,
    h: u32,
    data: &mut [u8],
    refill: Option<[u8; 4]>,
) -> Result<Vec<u8>, RenderError> {
    let width = w as usize;
    if width == 0 || h == 0 || data.len() != width * 4 * h as usize {
        return Err(RenderError::Failed("PNG encoding failed: no pixels".into()));
    }
    let io = |e: std::io::Error| RenderError::Failed(format!("PNG encoding failed: {e}"));
    BUFFERS.with_borrow_mut(|b| {
        let row = width * 3;
        b.zlib.clear();
        b.prev.clear();
        b.prev.resize(row, 0);
        b.cur.resize(row, 0);
        b.filtered.resize(row + 1, 0);
        // PNG filter type 2, `Up`: each byte minus the byte above (zero above the first row).
        b.filtered[0] = 2;
        let mut deflate = fdeflate::Compressor::new(&mut b.zlib).map_err(io)?;
        for line in data.chunks_exact_mut(width * 4) {
            rgb_row(line, &mut b.cur);
            for ((f, c), p) in b.filtered[1..].iter_mut().zip(&b.cur).zip(&b.prev) {
                *f = c.wrapping_sub(*p);
            }
            deflate.write_data(&b.filtered).map_err(io)?;
            std::mem::swap(&mut b.cur, &mut b.prev);
            if let Some(pixel) = refill {
                line.chunks_exact_mut(4)
                    .for_each(|p| p.copy_from_slice(&pixel));
            }
        }
        deflate.finish().map_err(io)?;
        Ok(file(w, h, &b.zlib))
    })
}

/// One row of RGBA pixels as RGB. Four pixels at a time as two 64-bit words packed
/// into 12 bytes (a copy per pixel was most of the conversion's time); the row's last
/// pixels one by one.
fn rgb_row(rgba: &[u8], rgb: &mut [u8]) {
    // Two pixels' colour (6 bytes) in the low 48 bits, little-endian.
    let pack = |v: u64| (v & 0xff_ffff) | ((v >> 8) & 0xffff_ff00_0000);
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let (src4, dst4) = (rgba.chunks_exact(16), rgb.chunks_exact_mut(12));
    let tail = src4.remainder().len() / 4;
    for (s, d) in src4.zip(dst4) {
        let (lo, hi) = (pack(word(&s[..8])), pack(word(&s[8..])));
        d[..8].copy_from_slice(&(lo | hi << 48).to_le_bytes());
        d[8..].copy_from_slice(&((hi >> 16) as u32).to_le_bytes());
    }
    let n = rgba.len() / 4;
    for i in n - tail..n {
        rgb[i * 3..i * 3 + 3].copy_from_slice(&rgba[i * 4..i * 4 + 3]);
    }
}

/// The file: signature, header, the compressed rows in IDAT chunks, end.
fn file(w: u32, h: u32, zlib: &[u8]) -> Vec<u8> {
    // A chunk's length is below 2^31; one chunk is the usual case. The zlib stream is
    // never empty (its header alone is 2 bytes), so there is always one IDAT.
    const MAX_CHUNK: usize = 1 << 30;
    let chunks = zlib.len().div_ceil(MAX_CHUNK);
    let mut out = Vec::with_capacity(8 + 25 + zlib.len() + 12 * chunks + 12);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut header = [0u8; 13];
    header[..4].copy_from_slice(&w.to_be_bytes());
    header[4..8].copy_from_slice(&h.to_be_bytes());
    // 8 bits per sample, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    header[8..].copy_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &header);
    for part in zlib.chunks(MAX_CHUNK) {
        chunk(&mut out, b"IDAT", part);
    }
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 44: the file decodes (png crate, checksums checked) to the RGB of the rows
    /// at odd sizes, twice on one thread (the kept buffers), and the rows are refilled.
    #[test]
    fn rows_encode_to_a_png_that_decodes_to_their_colour() {
        // Larger, then smaller: the kept buffers shrink as well as grow.
        for (w, h) in [(33u32, 20u32), (1, 1), (7, 3)] {
            for round in 0..2u8 {
                let mut data: Vec<u8> = (0..w * h * 4)
                    .map(|i| {
                        if i % 4 == 3 {
                            255
                        } else {
                            (i * 13 + u32::from(round)) as u8
                        }
                    })
                    .collect();
                let want: Vec<u8> = data
                    .chunks_exact(4)
                    .flat_map(|p| [p[0], p[1], p[2]])
                    .collect();
                let file = encode(w, h, &mut data, Some([1, 2, 3, 255])).unwrap();
                let mut reader = png::Decoder::new(std::io::Cursor::new(file))
                    .read_info()
                    .unwrap();
                let mut got = vec![0; reader.output_buffer_size().unwrap()];
                let info = reader.next_frame(&mut got).unwrap();
                assert_eq!((info.width, info.height), (w, h));
                assert_eq!(info.color_type, png::ColorType::Rgb);
                assert_eq!(&got[..info.buffer_size()], &want[..], "{w}x{h}");
                assert!(data.chunks_exact(4).all(|p| p == [1, 2, 3, 255]));
            }
        }
    }

    /// RGBA rows to RGB at every length modulo the four pixels converted at once.
    #[test]
    fn rows_convert_to_rgb_at_every_length() {
        for n in 0..11 {
            let rgba: Vec<u8> = (0..n * 4).map(|i| (i * 7 + 3) as u8).collect();
            let mut rgb = vec![0u8; n * 3];
            rgb_row(&rgba, &mut rgb);
            let want: Vec<u8> = rgba
                .chunks_exact(4)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect();
            assert_eq!(rgb, want, "{n} pixels");
        }
    }
}
