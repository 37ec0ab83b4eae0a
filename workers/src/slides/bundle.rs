//! A PNG export's PNGs as one zip (`exports/create` with `zip: true`, `plinth slides
//! render --format png --zip`), built in memory as the slides are drawn and stored only
//! when whole.

use std::io::{Cursor, Write};

use chrono::{Datelike, Timelike};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// The largest zip an export makes (it is held in memory until stored).
pub const MAX_ZIP_BYTES: u64 = 256 * 1024 * 1024;

/// Room for an entry's local header and its central directory record (each about
/// 50 bytes plus the name) and the archive's end record.
const OVERHEAD_PER_ENTRY: u64 = 256;

/// Why no zip was made.
#[derive(Debug, thiserror::Error)]
pub enum ZipError {
    #[error(
        "the PNGs come to more than {} MiB, the most one zip holds; export without `zip` \
         and download the PNGs one by one",
        MAX_ZIP_BYTES / (1024 * 1024)
    )]
    TooLarge,
    #[error("the zip could not be written: {0}")]
    Write(String),
}

/// The zip being written: entries in the order they are added.
pub struct PngZip {
    writer: ZipWriter<Cursor<Vec<u8>>>,
    options: SimpleFileOptions,
    /// Bytes the finished zip will take at most, so far.
    size: u64,
    max: u64,
}

impl PngZip {
    /// An empty zip whose entries are dated `now` (UTC) and hold at most `max` bytes in all.
    pub fn new(now: chrono::DateTime<chrono::Utc>, max: u64) -> PngZip {
        // PNGs are deflated already: stored entries cost no CPU and lose nothing.
        let mut options =
            SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        if let Ok(t) = zip::DateTime::from_date_and_time(
            u16::try_from(now.year()).unwrap_or(1980),
            now.month() as u8,
            now.day() as u8,
            now.hour() as u8,
            now.minute() as u8,
            now.second() as u8,
        ) {
            options = options.last_modified_time(t);
        }
        PngZip {
            writer: ZipWriter::new(Cursor::new(Vec::new())),
            options,
            size: OVERHEAD_PER_ENTRY,
            max,
        }
    }

    /// Adds one file; refused (and the zip is then of no use) past the size limit.
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<(), ZipError> {
        self.size += bytes.len() as u64 + OVERHEAD_PER_ENTRY + 2 * name.len() as u64;
        if self.size > self.max {
            return Err(ZipError::TooLarge);
        }
        let write = |e: &dyn std::fmt::Display| ZipError::Write(e.to_string());
        self.writer
            .start_file(name, self.options)
            .map_err(|e| write(&e))?;
        self.writer.write_all(bytes).map_err(|e| write(&e))
    }

    /// The whole zip.
    pub fn finish(self) -> Result<Vec<u8>, ZipError> {
        let cursor = self
            .writer
            .finish()
            .map_err(|e| ZipError::Write(e.to_string()))?;
        Ok(cursor.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_their_order_and_bytes() {
        let mut z = PngZip::new(chrono::Utc::now(), MAX_ZIP_BYTES);
        z.add("slide-001.png", b"one").unwrap();
        z.add("slide-002.png", b"second").unwrap();
        let bytes = z.finish().unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let names: Vec<String> = (0..archive.len())
            .map(|i| archive.by_index(i).unwrap().name().unwrap().into_owned())
            .collect();
        assert_eq!(names, ["slide-001.png", "slide-002.png"]);
        let mut second = archive.by_index(1).unwrap();
        assert_eq!(second.compression(), CompressionMethod::Stored);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut second, &mut text).unwrap();
        assert_eq!(text, "second");
    }

    #[test]
    fn a_zip_past_its_limit_is_refused() {
        let mut z = PngZip::new(chrono::Utc::now(), 1000);
        z.add("slide-001.png", &[0; 400]).unwrap();
        let e = z.add("slide-002.png", &[0; 400]).unwrap_err();
        assert!(matches!(e, ZipError::TooLarge), "{e}");
        assert!(e.to_string().contains("256 MiB"), "{e}");
    }
}
