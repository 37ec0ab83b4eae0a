//! Memory a process pays for the renderer: RSS after the font warm-up, after one
//! rendered slide, after the highlighting warm-up (read from /proc/self/status).
//!
//! cargo run --release -p plinth-render --example idle_rss

use plinth_render::{slide_png, Budget, Images, Size};

fn status() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("RssAnon") || l.starts_with("RssFile"))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn main() {
    println!(
        "start                 VmRSS / RssAnon / RssFile: {}",
        status()
    );
    plinth_render::warm_up_fonts();
    println!(
        "warm_up_fonts         VmRSS / RssAnon / RssFile: {}",
        status()
    );
    let md = "# Hello 世界 مرحبا 😀\n\n- one\n- two ✓\n\n```rust\nfn main() {}\n```\n";
    let deck = plinth_slides::parse_markdown(md).expect("deck parses");
    let png = slide_png(
        &deck,
        &deck.slides[0],
        &Images::new(),
        Size::default(),
        &Budget::unlimited(),
    )
    .expect("slide renders");
    println!(
        "one slide ({} KB PNG) VmRSS / RssAnon / RssFile: {}",
        png.len() / 1024,
        status()
    );
    plinth_render::warm_up_highlighting();
    println!(
        "warm_up_highlighting  VmRSS / RssAnon / RssFile: {}",
        status()
    );
}
