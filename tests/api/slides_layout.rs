//! One layout engine (issue 44): a deck rendered three ways puts each line of text in
//! one place. The layout's positions are read from `plinth slides render --format svg`
//! (the display list as drawn, a `<text>` per run at its baseline), the PDF's from
//! `pdftotext -bbox`, the HTML's from headless Chromium; all in units of a 1920-wide
//! slide.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::browser::Browser;
use crate::common::BIN;

/// Marp's way: front matter, a title slide, paragraphs, a nested list, code, a table,
/// header, footer and page numbers. Each line starts with a word of its own on its
/// slide, so a line is found by its first word in every format.
const DECK: &str = r#"---
marp: true
paginate: true
header: Quarterly **Zephyr** review
footer: Northwind Traders
---

# Kestrel launch plan

Marmalade arrives before the quince harvest, and the orchard keeps a ledger of every crate that leaves the valley for the coast.

---

## Xylophone roadmap

- Aardvark milestones for spring
  - Badger dependencies
  - Caribou staffing
- Dromedary budget

```rust
fn gazelle() {
    let hyena = jaguar(3);
}
```

---

## Ibex metrics

| Jackal | Koala |
|--------|------:|
| Lemur  | 42    |
| Mongoose | 7   |

Narwhal footnote under the table.
"#;

/// One run of text where a format put it: the slide, its first word, its start and
/// its baseline (units of a 1920-wide slide).
#[derive(Debug, Clone)]
struct Run {
    slide: usize,
    word: String,
    x: f32,
    y: f32,
}

/// How far apart the formats may put a line (of 1920).
const TOLERANCE: f32 = 3.0;

fn render(dir: &Path, args: &[&str]) {
    let out = Command::new(BIN)
        .args(["slides", "render", "deck.md"])
        .args(args)
        .current_dir(dir)
        .env_remove("PLINTH_DATA_DIR")
        .env_remove("PLINTH_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The leading letters and digits of a text's first word ("gazelle" of "gazelle()"),
/// when the text starts with one.
fn first_word(text: &str) -> Option<String> {
    let word: String = text.chars().take_while(|c| c.is_alphanumeric()).collect();
    (!word.is_empty()).then_some(word)
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// `name="value"` in a tag.
fn attr(tag: &str, name: &str) -> Option<f32> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = start + tag[start..].find('"')?;
    tag[start..end].parse().ok()
}

/// Each `<text x y>` of the layout's SVGs.
fn layout_runs(dir: &Path, slides: usize) -> Vec<Run> {
    let mut runs = Vec::new();
    for slide in 0..slides {
        let svg =
            std::fs::read_to_string(dir.join(format!("svg/slide.{:03}.svg", slide + 1))).unwrap();
        for part in svg.split("<text ").skip(1) {
            let (tag, rest) = part.split_once('>').unwrap();
            // The split ate the space before the first attribute.
            let tag = format!(" {tag}");
            let text = unescape(&rest[..rest.find("</text>").unwrap()]);
            if let (Some(word), Some(x), Some(y)) =
                (first_word(&text), attr(&tag, "x"), attr(&tag, "y"))
            {
                runs.push(Run { slide, word, x, y });
            }
        }
    }
    runs
}

/// Each word `pdftotext -bbox` finds, at its start and baseline (its box's top plus
/// DejaVu's ascent share of its height: 1901 of 1901 + 483).
fn pdf_runs(pdf: &Path) -> Option<Vec<Run>> {
    let out = match Command::new("pdftotext")
        .arg("-bbox")
        .arg(pdf)
        .arg("-")
        .output()
    {
        Ok(out) if out.status.success() => out,
        _ => {
            eprintln!("skipped the PDF side: pdftotext is not installed (apt-get install poppler-utils; .ci/run installs it)");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut runs = Vec::new();
    for (slide, page) in text.split("<page ").skip(1).enumerate() {
        let k = 1920.0 / attr(&format!(" {page}"), "width").unwrap();
        for word in page.split("<word ").skip(1) {
            let (tag, rest) = word.split_once('>').unwrap();
            let text = unescape(&rest[..rest.find("</word>").unwrap()]);
            let (Some(x0), Some(y0), Some(y1)) = (
                attr(&format!(" {tag}"), "xMin"),
                attr(&format!(" {tag}"), "yMin"),
                attr(&format!(" {tag}"), "yMax"),
            ) else {
                continue;
            };
            if let Some(word) = first_word(&text) {
                let baseline = y0 + (y1 - y0) * 1901.0 / 2384.0;
                runs.push(Run {
                    slide,
                    word,
                    x: x0 * k,
                    y: baseline * k,
                });
            }
        }
    }
    Some(runs)
}

/// Each positioned run of the HTML page in headless Chromium, with every slide 1920
/// pixels wide: where a zero-size box at its start sits (its bottom is the baseline).
async fn html_runs(html: &Path) -> Option<Vec<Run>> {
    let browser = Browser::start().await?;
    browser.goto(&format!("file://{}", html.display())).await;
    let found = browser
        .exec(
            r#"var out = [];
            var slides = document.querySelectorAll("section.slide");
            slides.forEach(function (s) { s.style.width = "1920px"; });
            slides.forEach(function (s, i) {
              var box = s.getBoundingClientRect(), k = 1920 / box.width;
              s.querySelectorAll("span.t").forEach(function (t) {
                var probe = document.createElement("i");
                probe.style.cssText = "display:inline-block;width:0;height:0;vertical-align:baseline";
                t.insertBefore(probe, t.firstChild);
                var p = probe.getBoundingClientRect();
                out.push([i, t.textContent, (p.left - box.left) * k, (p.bottom - box.top) * k]);
                t.removeChild(probe);
              });
            });
            return out;"#,
        )
        .await;
    browser.quit().await;
    let runs = found
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            Some(Run {
                slide: r[0].as_u64()? as usize,
                word: first_word(r[1].as_str()?)?,
                x: r[2].as_f64()? as f32,
                y: r[3].as_f64()? as f32,
            })
        })
        .collect();
    Some(runs)
}

/// The runs whose word appears once on its slide, by (slide, word).
fn unique(runs: &[Run]) -> HashMap<(usize, String), Run> {
    let mut count: HashMap<(usize, &str), usize> = HashMap::new();
    for r in runs {
        *count.entry((r.slide, r.word.as_str())).or_default() += 1;
    }
    runs.iter()
        .filter(|r| count[&(r.slide, r.word.as_str())] == 1)
        .map(|r| ((r.slide, r.word.clone()), r.clone()))
        .collect()
}

/// Each layout line (runs on one baseline of one slide): its leftmost run with a word
/// of its own. Every such line must be where the other format puts it.
fn compare(what: &str, layout: &[Run], other: &[Run]) -> usize {
    let ours = unique(layout);
    let theirs = unique(other);
    let mut lines: HashMap<(usize, i32), &Run> = HashMap::new();
    for run in ours.values() {
        let line = lines
            .entry((run.slide, run.y.round() as i32))
            .or_insert(run);
        if run.x < line.x {
            *line = run;
        }
    }
    let mut worst: f32 = 0.0;
    for run in lines.values() {
        let Some(seen) = theirs.get(&(run.slide, run.word.clone())) else {
            panic!("{what}: no {:?} on slide {}", run.word, run.slide + 1);
        };
        let (dx, dy) = ((seen.x - run.x).abs(), (seen.y - run.y).abs());
        worst = worst.max(dx).max(dy);
        assert!(
            dx <= TOLERANCE && dy <= TOLERANCE,
            "{what}: {:?} on slide {} at ({:.2}, {:.2}), the layout has ({:.2}, {:.2})",
            run.word,
            run.slide + 1,
            seen.x,
            seen.y,
            run.x,
            run.y
        );
    }
    eprintln!(
        "{what}: {} lines, at most {worst:.2} of 1920 from the layout",
        lines.len()
    );
    lines.len()
}

#[tokio::test]
async fn one_deck_three_ways_puts_every_line_in_one_place() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deck.md"), DECK).unwrap();
    render(dir.path(), &["-o", "deck.pdf"]);
    render(dir.path(), &["-o", "deck.html"]);
    render(dir.path(), &["-o", "svg/slide.svg"]);
    let layout = layout_runs(dir.path(), 3);
    // Title, paragraph, list, code, table, header, footer, page numbers.
    for word in [
        "Kestrel",
        "Marmalade",
        "Aardvark",
        "Badger",
        "gazelle",
        "let",
        "Jackal",
        "Mongoose",
        "Quarterly",
        "Northwind",
        "Narwhal",
    ] {
        assert!(
            layout.iter().any(|r| r.word == word),
            "{word} missing from the layout: {layout:?}"
        );
    }
    if let Some(pdf) = pdf_runs(&dir.path().join("deck.pdf")) {
        assert!(compare("PDF", &layout, &pdf) >= 15);
    }
    if let Some(html) = html_runs(&dir.path().join("deck.html")).await {
        assert!(compare("HTML", &layout, &html) >= 15);
    }
}
