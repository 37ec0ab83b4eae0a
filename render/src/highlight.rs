//! Syntax highlighting of code blocks with syntect: its bundled syntaxes and themes,
//! Oniguruma as the regex engine (a grammar's patterns compile in a few ms), loaded on
//! first use. Compiled patterns stay in the syntax set, so the set is loaded afresh once
//! code in more than [`MAX_LANGUAGES`] languages has been highlighted with it: memory
//! stays bounded whatever languages decks use.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

use crate::palette::Color;

/// One line of code as runs of (colour, text); tabs already four spaces.
pub type Line = Vec<(Color, String)>;

/// Languages whose patterns one loaded syntax set compiles before it is replaced.
pub const MAX_LANGUAGES: usize = 8;

struct Assets {
    syntaxes: SyntaxSet,
    light: Theme,
    dark: Theme,
    /// Syntaxes highlighted with this set (their patterns are compiled in it).
    used: Mutex<HashSet<String>>,
}

impl Assets {
    fn load() -> Assets {
        let mut themes = ThemeSet::load_defaults().themes;
        Assets {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            light: themes
                .remove("InspiredGitHub")
                .expect("syntect bundles InspiredGitHub"),
            dark: themes
                .remove("base16-ocean.dark")
                .expect("syntect bundles base16-ocean.dark"),
            used: Mutex::new(HashSet::new()),
        }
    }
}

static ASSETS: RwLock<Option<Arc<Assets>>> = RwLock::new(None);

fn current() -> Arc<Assets> {
    if let Some(a) = ASSETS.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return a.clone();
    }
    let mut slot = ASSETS.write().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert_with(|| Arc::new(Assets::load())).clone()
}

/// The set to highlight `syntax` with: the current one, or a fresh one when the
/// current one already compiled [`MAX_LANGUAGES`] others (renders still using the old
/// one keep it until they finish).
fn assets_for(syntax: &str) -> Arc<Assets> {
    let a = current();
    let room = {
        let mut used = a.used.lock().unwrap_or_else(|e| e.into_inner());
        let room = used.contains(syntax) || used.len() < MAX_LANGUAGES;
        if room {
            used.insert(syntax.to_owned());
        }
        room
    };
    if room {
        return a;
    }
    let fresh = Arc::new(Assets::load());
    fresh
        .used
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(syntax.to_owned());
    *ASSETS.write().unwrap_or_else(|e| e.into_inner()) = Some(fresh.clone());
    fresh
}

/// Kept for the workers, which call it at start: the syntaxes now load, and their
/// patterns compile, when code first needs them (a few ms per language), so an idle
/// process holds none of it.
pub fn warm_up() {}

/// Names a fence may use for a syntax syntect knows under another name, or that it
/// lacks and a close relative reads well enough (TypeScript as JavaScript).
const ALIASES: &[(&str, &str)] = &[
    ("ts", "js"),
    ("typescript", "js"),
    ("tsx", "js"),
    ("jsx", "js"),
    ("mjs", "js"),
    ("cjs", "js"),
    ("node", "js"),
    ("shell", "bash"),
    ("sh", "bash"),
    ("zsh", "bash"),
    ("console", "bash"),
    ("shellsession", "bash"),
    ("dockerfile", "bash"),
    ("docker", "bash"),
    ("golang", "go"),
    ("c++", "cpp"),
    ("csharp", "cs"),
    ("c#", "cs"),
    ("py3", "py"),
    ("python3", "py"),
    ("yml", "yaml"),
    ("jsonc", "json"),
    ("json5", "json"),
    ("kotlin", "java"),
    ("kt", "java"),
    ("toml", "properties"),
    ("ini", "properties"),
    ("env", "properties"),
    ("ps1", "bat"),
    ("powershell", "bat"),
    ("html5", "html"),
    ("vue", "html"),
    ("svelte", "html"),
    ("scss", "css"),
    ("sass", "css"),
    ("less", "css"),
    ("postgres", "sql"),
    ("postgresql", "sql"),
    ("mysql", "sql"),
    ("sqlite", "sql"),
    ("elixir", "rb"),
    ("swift", "rust"),
];

fn syntax<'a>(ss: &'a SyntaxSet, language: &str) -> Option<&'a SyntaxReference> {
    let lang = language.trim().to_ascii_lowercase();
    let lang = ALIASES
        .iter()
        .find(|(from, _)| *from == lang)
        .map_or(lang.as_str(), |(_, to)| to);
    ss.find_syntax_by_token(lang)
        .or_else(|| ss.find_syntax_by_extension(lang))
}

/// Whether a fence's language is one the highlighter knows (directly or by alias).
pub fn knows(language: &str) -> bool {
    syntax(&current().syntaxes, language).is_some()
}

/// The code's lines as coloured runs, or `None` for a language it does not know
/// (the caller draws the code in one colour).
pub fn highlight(code: &str, language: Option<&str>, dark: bool) -> Option<Vec<Line>> {
    let name = syntax(&current().syntaxes, language?)?.name.clone();
    let a = assets_for(&name);
    let syntax = a.syntaxes.find_syntax_by_name(&name)?;
    let theme = if dark { &a.dark } else { &a.light };
    let mut h = HighlightLines::new(syntax, theme);
    let mut out = Vec::new();
    for line in LinesWithEndings::from(code.trim_end_matches(['\n', '\r'])) {
        let ranges = h.highlight_line(line, &a.syntaxes).ok()?;
        let mut runs: Line = Vec::new();
        for (style, text) in ranges {
            let text: String = text
                .chars()
                .filter(|&c| c != '\n' && c != '\r')
                .flat_map(|c| {
                    let n = if c == '\t' { 4 } else { 1 };
                    std::iter::repeat_n(if c == '\t' { ' ' } else { c }, n)
                })
                .filter(|c| !c.is_control())
                .collect();
            if text.is_empty() {
                continue;
            }
            let f = style.foreground;
            let color = Color(f.r, f.g, f.b);
            match runs.last_mut() {
                Some((c, t)) if *c == color || text.trim().is_empty() => t.push_str(&text),
                _ => runs.push((color, text)),
            }
        }
        out.push(runs);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thirty_most_used_languages_are_known() {
        for lang in [
            "javascript",
            "python",
            "java",
            "typescript",
            "c",
            "cpp",
            "csharp",
            "go",
            "rust",
            "php",
            "ruby",
            "kotlin",
            "swift",
            "bash",
            "sql",
            "html",
            "css",
            "json",
            "yaml",
            "xml",
            "markdown",
            "scala",
            "r",
            "lua",
            "perl",
            "haskell",
            "clojure",
            "erlang",
            "ocaml",
            "makefile",
            "dockerfile",
            "toml",
            "diff",
            "latex",
            "sh",
            "ts",
            "py",
            "js",
        ] {
            assert!(knows(lang), "{lang}");
        }
        assert!(!knows("no-such-language"));
    }

    #[test]
    #[ignore]
    fn list_syntaxes() {
        for s in current().syntaxes.syntaxes() {
            eprintln!("{} {:?}", s.name, s.file_extensions);
        }
    }

    #[test]
    fn code_comes_out_in_colours() {
        let lines = highlight(
            "fn main() {\n\tlet x = \"hi\"; // note\n}\n",
            Some("rust"),
            false,
        )
        .unwrap();
        assert_eq!(lines.len(), 3);
        let text: String = lines[1].iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(text, "    let x = \"hi\"; // note");
        let colours: std::collections::HashSet<_> =
            lines.iter().flatten().map(|(c, _)| *c).collect();
        assert!(colours.len() >= 3, "{lines:?}");
        assert!(highlight("x", Some("nope"), false).is_none());
        assert!(highlight("x", None, true).is_none());
    }
}
