//! `plinth slides render`, `check` and `watch`: decks on an author's machine, with the
//! renderer the workers use and no server, database or browser (`watch` serves its
//! preview itself, see [`watch`]).
//!
//! Images a deck names by file (`![](chart.png)`, Marp's `![bg](photo.jpg)`) are read
//! from paths relative to the deck. Errors name the deck and, where the parser knows it,
//! the line, and exit 1; warnings (Marp settings without effect, characters no font
//! has) go to stderr and do not change the exit status.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::config::SlidesCommand;
use plinth_render::{Budget, Image, Images, Options, Size};
use plinth_slides::Deck;
use plinth_workers::slides::{PngZip, MAX_ZIP_BYTES};

/// Runs the command; the process's exit status.
pub async fn run(cmd: SlidesCommand) -> i32 {
    if let Some(dir) = cache_dir() {
        plinth_render::keep_font_index_in(dir);
    }
    let result = match cmd {
        SlidesCommand::Render {
            deck,
            output,
            format,
            notes,
            zip,
            allow_outside_images,
        } => render(
            &deck,
            output.as_deref(),
            Asked {
                format: format.as_deref(),
                notes,
                zip,
                outside: allow_outside_images,
            },
        ),
        SlidesCommand::Check {
            deck,
            allow_outside_images,
        } => check(&deck, allow_outside_images),
        SlidesCommand::Watch {
            deck,
            listen,
            notes,
            allow_outside_images,
            open,
        } => {
            watch::run(watch::Asked {
                deck,
                listen,
                notes,
                outside: allow_outside_images,
                open,
            })
            .await
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

mod watch;

/// `$XDG_CACHE_HOME/plinth`, else `~/.cache/plinth`: where the index of the font
/// directories is kept between runs (a cold run then reads one small file instead of
/// every font's header).
fn cache_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".cache"))
        })
        .map(|d| d.join("plinth"))
}

/// A parsed deck with the images it names, read and checked.
struct Loaded {
    deck: Deck,
    images: Images,
    files: usize,
    /// What the parser and the font check warn of, one line each, naming the deck.
    warnings: Vec<String>,
    /// Every image path the deck names, found or not, in its folder as the file system
    /// names it (`watch` watches those folders).
    named: Vec<PathBuf>,
}

/// Warnings on stderr, one a line (`watch` prints them only when they change).
fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

impl Loaded {
    /// The deck, its warnings printed.
    fn warned(self) -> Loaded {
        print_warnings(&self.warnings);
        self
    }
}

/// Reads and parses the deck and its images; `warm` starts compiling its code's
/// highlighting on another thread (for a render).
fn load(path: &Path, warm: bool, outside: bool) -> Result<Loaded, String> {
    let shown = path.display();
    let source = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let base = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    // Images resolve inside the deck's folder, links followed (security review N-L6).
    let root = base
        .canonicalize()
        .map_err(|e| format!("{}: {e}", base.display()))?;
    let escaped = RefCell::new(Vec::<String>::new());
    // File names stand in for asset ids (the parser takes only asset ids).
    let files = RefCell::new(Vec::<(String, PathBuf)>::new());
    let named = RefCell::new(Vec::<PathBuf>::new());
    let resolve = |name: &str| -> Option<String> {
        let asked = base.join(name);
        if let (Some(dir), Some(file)) = (asked.parent(), asked.file_name()) {
            if let Ok(dir) = dir.canonicalize() {
                named.borrow_mut().push(dir.join(file));
            }
        }
        let file = asked.canonicalize().ok()?;
        if !file.is_file() {
            return None;
        }
        if !outside && !file.starts_with(&root) {
            escaped.borrow_mut().push(name.to_owned());
            return None;
        }
        let mut files = files.borrow_mut();
        let n = match files.iter().position(|(_, p)| *p == file) {
            Some(n) => n,
            None => {
                let id = format!("00000000-0000-4000-8000-{:012}", files.len() + 1);
                files.push((id, file));
                files.len() - 1
            }
        };
        Some(files[n].0.clone())
    };
    let opts = plinth_slides::ParseOptions {
        resolve_image: Some(&resolve),
        images_are: "a file in the deck's folder, named from the deck (`img/chart.png`)",
    };
    let parsed = plinth_slides::parse_markdown_report(&source, &opts);
    let escaped = escaped.into_inner();
    if !escaped.is_empty() {
        return Err(format!(
            "{shown}: images outside the deck's folder are not read: {} (pass \
             --allow-outside-images to read them)",
            escaped.join(", ")
        ));
    }
    let (deck, parsed_warnings) = parsed.map_err(|e| format!("{shown}: {}", e.0))?;
    let mut warnings: Vec<String> = parsed_warnings
        .iter()
        .map(|w| format!("{shown}: {w}"))
        .collect();
    if warm {
        // The code's patterns compile on the second core while this one scans the fonts
        // and reads the images (a cold start's two largest costs).
        let code = deck.clone();
        std::thread::spawn(move || plinth_render::warm_up_code(&code));
    }
    let mut images = Images::new();
    let files = files.into_inner();
    for (id, file) in &files {
        let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let info = plinth_render::inspect_image(&bytes, &Budget::unlimited())
            .map_err(|e| format!("{}: {e}", file.display()))?;
        images.insert(
            id.clone(),
            Image {
                mime: info.mime.to_owned(),
                bytes,
            },
        );
    }
    for m in plinth_render::missing_glyphs(&deck) {
        warnings.push(format!(
            "{shown}: slide {}: no installed font has {:?} (in {:?}); it draws as boxes. \
             Install fonts-noto-core, fonts-noto-cjk or fonts-noto-color-emoji, or set PLINTH_FONTS_DIR",
            m.slide, m.missing, m.text
        ));
    }
    Ok(Loaded {
        deck,
        images,
        files: files.len(),
        warnings,
        named: named.into_inner(),
    })
}

fn check(path: &Path, outside: bool) -> Result<(), String> {
    let loaded = load(path, false, outside)?.warned();
    let total = loaded.deck.slides.len();
    let shown = plinth_render::visible(&loaded.deck).len();
    println!(
        "{}: {total} slides ({} hidden), {} images: ok",
        path.display(),
        total - shown,
        loaded.files
    );
    Ok(())
}

/// What `render` was asked for besides the deck and the output.
struct Asked<'a> {
    format: Option<&'a str>,
    notes: bool,
    zip: bool,
    outside: bool,
}

fn render(path: &Path, output: Option<&Path>, asked: Asked) -> Result<(), String> {
    let started = Instant::now();
    let Asked {
        format,
        notes,
        mut zip,
        outside,
    } = asked;
    let format = match (format, output) {
        (Some(f), _) => f.to_owned(),
        (None, Some(o)) => match o.extension().and_then(|e| e.to_str()) {
            Some(e) if ["pdf", "png", "html", "svg"].contains(&e.to_ascii_lowercase().as_str()) => {
                e.to_ascii_lowercase()
            }
            Some("htm") => "html".to_owned(),
            Some(e) if e.eq_ignore_ascii_case("zip") => {
                zip = true;
                "png".to_owned()
            }
            _ if zip => "png".to_owned(),
            _ => "pdf".to_owned(),
        },
        (None, None) if zip => "png".to_owned(),
        (None, None) => "pdf".to_owned(),
    };
    if zip && format != "png" {
        return Err("--zip applies to png (the PNGs as one zip)".into());
    }
    if notes && (format == "png" || format == "svg") {
        return Err(format!(
            "--notes applies to pdf and html ({format} files are the slides alone)"
        ));
    }
    let output = output
        .map(Path::to_owned)
        .unwrap_or_else(|| path.with_extension(if zip { "zip" } else { format.as_str() }));
    let Loaded { deck, images, .. } = load(path, true, outside)?.warned();
    let options = Options {
        notes,
        created: Some(chrono::Utc::now().timestamp()),
    };
    let size = Size::default();
    let written = match format.as_str() {
        "pdf" => {
            let budget = Budget::unlimited();
            let pdf =
                plinth_render::deck_pdf_with(&deck, &images, size, options, &budget, &mut |_| true)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            write(&output, &pdf)?;
            output.display().to_string()
        }
        "html" => {
            let html = plinth_render::deck_html_with(&deck, &images, options, &Budget::unlimited())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            write(&output, html.as_bytes())?;
            output.display().to_string()
        }
        _ if zip => {
            let slides = plinth_render::visible(&deck);
            let pngs = std::sync::Mutex::new(vec![Vec::new(); slides.len()]);
            render_slides(path, &deck, &slides, &images, size, "png", &|i, png| {
                if let Ok(mut pngs) = pngs.lock() {
                    pngs[i] = png;
                }
                Ok(())
            })?;
            let pngs = pngs.into_inner().map_err(|_| "a render thread panicked")?;
            let mut bundle = PngZip::new(chrono::Utc::now(), MAX_ZIP_BYTES);
            for (i, png) in pngs.iter().enumerate() {
                bundle
                    .add(&format!("slide-{:03}.png", i + 1), png)
                    .map_err(|e| format!("{}: {e}", output.display()))?;
            }
            let bytes = bundle
                .finish()
                .map_err(|e| format!("{}: {e}", output.display()))?;
            write(&output, &bytes)?;
            format!("{} ({} slides)", output.display(), slides.len())
        }
        _ => {
            let slides = plinth_render::visible(&deck);
            let (dir, stem) = if output.is_dir() {
                (output.clone(), "slide".to_owned())
            } else {
                let stem = output
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "slide".into());
                let dir = output
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .to_owned();
                (dir, stem)
            };
            render_slides(path, &deck, &slides, &images, size, &format, &|i, bytes| {
                write(&dir.join(format!("{stem}.{:03}.{format}", i + 1)), &bytes)
            })?;
            format!(
                "{} ({} files)",
                dir.join(format!("{stem}.NNN.{format}")).display(),
                slides.len()
            )
        }
    };
    eprintln!(
        "{} → {written} in {} ms",
        path.display(),
        started.elapsed().as_millis()
    );
    Ok(())
}

/// Writes a file; `-o shots/deck.png` makes `shots/` as it writes, as the docs'
/// examples expect.
fn write(file: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(file, bytes).map_err(|e| format!("{}: {e}", file.display()))
}

/// Draws the slides as PNGs (or SVGs: each slide's layout as the PNG draws it), one
/// slide per core at a time, and hands each to `done` with its 0-based position (in
/// whatever order they finish).
fn render_slides(
    path: &Path,
    deck: &Deck,
    slides: &[&plinth_slides::Slide],
    images: &Images,
    size: Size,
    format: &str,
    done: &(dyn Fn(usize, Vec<u8>) -> Result<(), String> + Sync),
) -> Result<(), String> {
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(slides.len().max(1));
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| -> Result<(), String> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(slide) = slides.get(i) else {
                            return Ok(());
                        };
                        let budget = Budget::unlimited();
                        let bytes = if format == "svg" {
                            plinth_render::slide_svg(deck, slide, images, size, &budget)
                                .map(String::into_bytes)
                        } else {
                            plinth_render::slide_png(deck, slide, images, size, &budget)
                        }
                        .map_err(|e| format!("{}: slide {}: {e}", path.display(), i + 1))?;
                        done(i, bytes)?;
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("a render thread panicked".into()))
            })
            .collect()
    });
    results.into_iter().collect()
}
