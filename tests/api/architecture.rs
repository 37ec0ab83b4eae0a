//! The layering rules of docs/architecture.md, checked on the source text (no server):
//! handler modules do not import each other, nothing below the route table imports the
//! handlers, and data access knows nothing of HTTP.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Code lines (comments dropped) of a file, with their numbers.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.split("//").next().unwrap_or_default().to_owned()))
        .collect()
}

/// The `api` module a file belongs to (`slides` for src/api/slides.rs or
/// src/api/slides/*.rs), if any.
fn api_module(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src().join("api")).ok()?;
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    Some(first.trim_end_matches(".rs").to_owned())
}

#[test]
fn handler_modules_do_not_import_each_other() {
    let mut broken = Vec::new();
    for file in rust_files(&src().join("api")) {
        let own = api_module(&file).unwrap();
        for (n, line) in code_lines(&file) {
            let mut rest = line.as_str();
            while let Some(at) = rest.find("crate::api::") {
                let after = &rest[at + "crate::api::".len()..];
                let module: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                // `idempotent` is the one shared piece of the HTTP layer (it holds no
                // handler): the key of a request and the answers of a keyed change.
                if module != own && own != "mod" && module != "idempotent" {
                    broken.push(format!("{}:{n}: {}", file.display(), line.trim()));
                }
                rest = after;
            }
        }
    }
    assert!(
        broken.is_empty(),
        "api modules importing each other (move the shared rule to src/domain/):\n{}",
        broken.join("\n")
    );
}

#[test]
fn only_the_route_table_imports_the_handlers() {
    let mut broken = Vec::new();
    for file in rust_files(&src()) {
        let rel = file
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("api/") || rel == "routes.rs" {
            continue;
        }
        for (n, line) in code_lines(&file) {
            let imports = line.contains("crate::api")
                || (line.contains("api::")
                    && !line.contains("_api::")
                    && !line.contains("plinth_api"))
                || line.trim() == "use crate::api;";
            if imports && !line.trim_start().starts_with("pub mod api") {
                broken.push(format!("src/{rel}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "modules outside src/api/ and src/routes.rs importing handlers:\n{}",
        broken.join("\n")
    );
}

#[test]
fn data_access_knows_nothing_of_http() {
    const HTTP: &[&str] = &[
        "axum",
        "http::",
        "crate::api",
        "crate::auth",
        "crate::error",
        "crate::extract",
        "crate::reply",
        "crate::usage",
        "crate::routes",
        "crate::state",
    ];
    // A whole path segment: `crate::state` is the HTTP state, `crate::states` is not.
    let mentions = |line: &str, w: &str| {
        line.match_indices(w).any(|(at, _)| {
            w.ends_with("::")
                || !line[at + w.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        })
    };
    let mut broken = Vec::new();
    for file in rust_files(&src().join("db")) {
        for (n, line) in code_lines(&file) {
            if let Some(what) = HTTP.iter().find(|w| mentions(&line, w)) {
                broken.push(format!(
                    "{}:{n}: `{what}` in {}",
                    file.display(),
                    line.trim()
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "src/db/ using HTTP types:\n{}",
        broken.join("\n")
    );
}
