//! Memory a process pays for the renderer: RSS after the font warm-up (what a worker
//! does at start), after a slide in fallback scripts and emoji, after a slide with code,
//! after a PDF of both (read from /proc/self/status).
//!
//! cargo run --release -p plinth-render --example idle_rss

use plinth_render::{deck_pdf, slide_png, Budget, Images, Size};

fn status() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("RssAnon") || l.starts_with("RssFile"))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn main() {
    println!("VmRSS / RssAnon / RssFile");
    println!("start                  {}", status());
    plinth_render::warm_up_fonts();
    plinth_render::warm_up_highlighting();
    println!("warm-ups (idle worker) {}", status());
    let md =
        "# Hello 世界 مرحبا 😀\n\n- one\n- two ✓\n\n---\n\n# Code\n\n```rust\nfn main() {}\n```\n";
    let deck = plinth_slides::parse_markdown(md).expect("deck parses");
    let (images, size, budget) = (Images::new(), Size::default(), Budget::unlimited());
    slide_png(&deck, &deck.slides[0], &images, size, &budget).expect("slide renders");
    println!("CJK, Arabic, emoji     {}", status());
    slide_png(&deck, &deck.slides[1], &images, size, &budget).expect("slide renders");
    println!("code slide             {}", status());
    deck_pdf(&deck, &images, size, &budget).expect("PDF renders");
    println!("PDF of both            {}", status());
}
