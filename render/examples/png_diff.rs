//! Compares two folders of PNGs pixel by pixel (same file names), for checking that a
//! renderer change keeps what the slides show.
//!
//! cargo run --release -p plinth-render --example png_diff -- BEFORE_DIR AFTER_DIR
//!
//! Prints, per file, the pixels that differ and the largest channel difference, and exits
//! with 1 when any file differs (or is missing, or has another size).

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [before, after] = args.as_slice() else {
        eprintln!("usage: png_diff BEFORE_DIR AFTER_DIR");
        std::process::exit(2);
    };
    let mut names: Vec<_> = std::fs::read_dir(before)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".png"))
        .collect();
    names.sort();
    let mut differing = 0;
    for name in &names {
        let a = decode(&Path::new(before).join(name))?;
        let b = match decode(&Path::new(after).join(name)) {
            Ok(b) => b,
            Err(e) => {
                println!("{name}: {e}");
                differing += 1;
                continue;
            }
        };
        if (a.0, a.1) != (b.0, b.1) {
            println!("{name}: size {}x{} vs {}x{}", a.0, a.1, b.0, b.1);
            differing += 1;
            continue;
        }
        let (mut pixels, mut max) = (0usize, 0u8);
        for (p, q) in a.2.chunks_exact(4).zip(b.2.chunks_exact(4)) {
            let d = p
                .iter()
                .zip(q)
                .map(|(x, y)| x.abs_diff(*y))
                .max()
                .unwrap_or(0);
            if d > 0 {
                pixels += 1;
                max = max.max(d);
            }
        }
        println!("{name}: {pixels} pixels differ, max channel difference {max}");
        differing += usize::from(pixels > 0);
    }
    println!("{} files, {differing} differ", names.len());
    std::process::exit(i32::from(differing > 0));
}

/// Width, height and RGBA8 pixels, whatever the file's colour type (RGB gets alpha 255).
fn decode(path: &Path) -> Result<(u32, u32, Vec<u8>), Box<dyn std::error::Error>> {
    let mut decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path)?));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or("image too large")?];
    let info = reader.next_frame(&mut buf)?;
    buf.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        png::ColorType::Grayscale => buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
        png::ColorType::GrayscaleAlpha => buf
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0], p[1]])
            .collect(),
        png::ColorType::Indexed => return Err("indexed PNG after EXPAND".into()),
    };
    Ok((info.width, info.height, rgba))
}
