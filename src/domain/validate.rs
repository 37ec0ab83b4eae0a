//! Input rules several areas share: domains, file names, upload content types.

use super::Invalid;

/// A domain as organizations and the public-access list store it: lower-case DNS labels.
pub fn parse_domain(raw: &str) -> Result<String, Invalid> {
    let d = raw.trim().trim_end_matches('.').to_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    if d.len() > 253 || !d.contains('.') || !d.split('.').all(label_ok) {
        return Err(Invalid::new(format!("`{raw}` is not a valid domain")));
    }
    Ok(d)
}

/// A file name kept to `[A-Za-z0-9._-]`, at most 128 characters; `field` names the
/// request field in the error.
pub fn clean_filename(raw: &str, field: &str) -> Result<String, Invalid> {
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches(|c| c == '.' || c == '-').to_owned();
    if name.is_empty() || name.len() > 128 {
        return Err(Invalid::new(format!(
            "`{field}` must have 1 to 128 usable characters"
        )));
    }
    Ok(name)
}

/// Content types an organization may upload (finding L4). Objects are served from the
/// bucket's origin with the type they were uploaded with, so anything a browser would
/// execute there (HTML, SVG, XML, scripts) is refused; parameters such as `charset`
/// are allowed.
pub fn upload_type_allowed(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let Some((top, sub)) = essence.split_once('/') else {
        return false;
    };
    let token = |t: &str| {
        !t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    if !token(top) || !token(sub) {
        return false;
    }
    match top {
        "audio" | "video" | "font" => true,
        "image" => matches!(
            sub,
            "png" | "jpeg" | "gif" | "webp" | "avif" | "bmp" | "tiff" | "heic" | "heif" | "x-icon"
        ),
        "text" => matches!(sub, "plain" | "csv" | "markdown" | "tab-separated-values"),
        "application" => {
            matches!(
                sub,
                "pdf"
                    | "json"
                    | "zip"
                    | "gzip"
                    | "x-tar"
                    | "x-7z-compressed"
                    | "octet-stream"
                    | "msword"
                    | "rtf"
                    | "epub+zip"
                    | "x-ndjson"
            ) || (sub.starts_with("vnd.") && !sub.ends_with("+xml") && !sub.contains("html"))
        }
        _ => false,
    }
}

/// Keywords of a full-text search: letters and digits only (so no index's query syntax
/// applies), lower-cased, at most ten words of at most 64 characters.
pub fn keywords(raw: &str) -> Vec<String> {
    raw.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().chars().take(64).collect())
        .take(10)
        .collect()
}

#[cfg(test)]
mod keyword_tests {
    #[test]
    fn keywords_drop_query_syntax() {
        assert_eq!(
            super::keywords("Red* \"chair\" OR-NEAR(x)"),
            ["red", "chair", "or", "near", "x"]
        );
        assert!(super::keywords("*** ---").is_empty());
        assert_eq!(super::keywords("Größe café").len(), 2);
    }
}
