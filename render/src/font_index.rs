//! A cached index of the font directories (`plinth slides` on an author's machine):
//! the faces a scan found, with a stamp (size, times, inode) of every directory and
//! font file under the scanned roots. A cold CLI run reads this one small file and
//! checks the stamps with `stat` instead of mapping and parsing every font file; a
//! face's file is then opened only when text is drawn in it.
//!
//! The index is used only when every stamp still matches: a font added, removed,
//! replaced or rewritten in place, a directory created, or a different set of roots
//! makes the caller scan again (and write a fresh index). A file that cannot be read,
//! parsed or written is no error: the scan is the fallback.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use resvg::usvg::fontdb;
use serde::{Deserialize, Serialize};

/// Bumped whenever the format, or what a scan produces, changes.
const FORMAT: u32 = 1;

/// Directories deeper than this under a root are not walked (a link loop the visited
/// set misses cannot run away).
const MAX_DEPTH: usize = 32;

/// The index file for these roots in `dir` (one per set of roots, so a different
/// `PLINTH_FONTS_DIR` does not evict the usual one).
pub fn file_for(dir: &Path, roots: &[Root]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    FORMAT.hash(&mut h);
    roots.hash(&mut h);
    dir.join(format!("fonts-{:016x}.json", h.finish()))
}

/// A directory the scan starts from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Root {
    pub path: PathBuf,
    /// `PLINTH_FONTS_DIR`: its faces come first.
    pub operator: bool,
}

/// What `stat` says of a path; equal stamps mean an unchanged file or directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: PathBuf,
    /// `None`: the path did not exist (only for roots).
    seen: Option<Seen>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    dir: bool,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    dev: u64,
    ino: u64,
}

fn seen(path: &Path) -> Option<Seen> {
    // Links are followed, as the scan follows them.
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(Seen {
            dir: m.is_dir(),
            size: m.len(),
            mtime_ns: m
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
            ctime_ns: m
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.ctime_nsec()),
            dev: m.dev(),
            ino: m.ino(),
        })
    }
    #[cfg(not(unix))]
    {
        let mtime = m
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some(Seen {
            dir: m.is_dir(),
            size: m.len(),
            mtime_ns: mtime.as_nanos() as i64,
            ctime_ns: 0,
            dev: 0,
            ino: 0,
        })
    }
}

/// The stamps of the roots, every directory under them and every font file (by the
/// extensions the scan reads), taken before the scan: a change during the scan then
/// shows as a mismatch on the next run, never as a stale index.
pub struct Stamps {
    stamps: Vec<Stamp>,
    /// Something changed less than [`RACY`] before the stamps were taken: a second
    /// change within the file system's clock tick could leave the same times, so no
    /// index is written from them (a later run writes it).
    racy: bool,
}

/// How recent a change makes stamps untrustworthy (file system clocks tick in
/// milliseconds to a second or two).
const RACY: std::time::Duration = std::time::Duration::from_secs(2);

pub fn stamp(roots: &[Root]) -> Stamps {
    let taken = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(i64::MAX, |d| d.as_nanos() as i64);
    let mut out = Vec::new();
    let mut visited = HashSet::new();
    for root in roots {
        let s = seen(&root.path);
        let is_dir = s.as_ref().is_some_and(|s| s.dir);
        out.push(Stamp {
            path: root.path.clone(),
            seen: s,
        });
        if is_dir {
            walk(&root.path, 0, &mut visited, &mut out);
        }
    }
    // The change time moves on every change (and cannot be set back), so it is the
    // one to compare; a clock set back also counts as recent.
    let racy = out
        .iter()
        .filter_map(|s| s.seen.as_ref())
        .any(|s| s.ctime_ns.max(s.mtime_ns) > taken.saturating_sub(RACY.as_nanos() as i64));
    Stamps { stamps: out, racy }
}

fn walk(dir: &Path, depth: usize, visited: &mut HashSet<PathBuf>, out: &mut Vec<Stamp>) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Ok(canon) = dir.canonicalize() {
        if !visited.insert(canon) {
            return;
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let Some(s) = seen(&path) else {
            continue;
        };
        if s.dir {
            out.push(Stamp {
                path: path.clone(),
                seen: Some(s),
            });
            walk(&path, depth + 1, visited, out);
        } else if is_font_file(&path) {
            out.push(Stamp {
                path,
                seen: Some(s),
            });
        }
    }
}

/// The extensions fontdb's directory scan reads.
fn is_font_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("ttf" | "ttc" | "TTF" | "TTC" | "otf" | "otc" | "OTF" | "OTC")
    )
}

/// One face as the scan found it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Face {
    path: PathBuf,
    index: u32,
    /// Names, each with whether it is the English (US) one (the only language anything
    /// here or in usvg asks for).
    families: Vec<(String, bool)>,
    post_script_name: String,
    /// 0 normal, 1 italic, 2 oblique.
    style: u8,
    weight: u16,
    /// fontdb's `Stretch` as its `to_number()`.
    stretch: u16,
    monospaced: bool,
    operator: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Index {
    format: u32,
    roots: Vec<Root>,
    stamps: Vec<Stamp>,
    faces: Vec<Face>,
}

/// A scanned face for the database, and whether it came from the operator's directory.
pub type Found = (fontdb::FaceInfo, bool);

/// The faces of a valid index for these roots, in the order the scan found them;
/// `None` when there is no index, it does not parse, or anything it stamped changed.
pub fn read(file: &Path, roots: &[Root]) -> Option<Vec<Found>> {
    let bytes = std::fs::read(file).ok()?;
    let index: Index = serde_json::from_slice(&bytes).ok()?;
    if index.format != FORMAT || index.roots != roots {
        return None;
    }
    // Every root must be stamped first, in order (a root absent then is checked too).
    let stamped_roots: Vec<&Path> = index
        .stamps
        .iter()
        .map(|s| s.path.as_path())
        .filter(|p| roots.iter().any(|r| r.path == *p))
        .collect();
    if roots
        .iter()
        .any(|r| !stamped_roots.contains(&r.path.as_path()))
    {
        return None;
    }
    if index.stamps.iter().any(|s| seen(&s.path) != s.seen) {
        return None;
    }
    let stamped: HashSet<&Path> = index.stamps.iter().map(|s| s.path.as_path()).collect();
    index
        .faces
        .into_iter()
        .map(|f| {
            // A face's file is one the stamps cover (or a link's target that the
            // stamped link led to, which the scan resolved): otherwise distrust it.
            if !stamped.contains(f.path.as_path()) && !f.path.is_file() {
                return None;
            }
            let operator = f.operator;
            Some((face_info(f)?, operator))
        })
        .collect()
}

fn face_info(f: Face) -> Option<fontdb::FaceInfo> {
    let style = match f.style {
        0 => fontdb::Style::Normal,
        1 => fontdb::Style::Italic,
        2 => fontdb::Style::Oblique,
        _ => return None,
    };
    let stretch = match f.stretch {
        1 => fontdb::Stretch::UltraCondensed,
        2 => fontdb::Stretch::ExtraCondensed,
        3 => fontdb::Stretch::Condensed,
        4 => fontdb::Stretch::SemiCondensed,
        5 => fontdb::Stretch::Normal,
        6 => fontdb::Stretch::SemiExpanded,
        7 => fontdb::Stretch::Expanded,
        8 => fontdb::Stretch::ExtraExpanded,
        9 => fontdb::Stretch::UltraExpanded,
        _ => return None,
    };
    if f.families.is_empty() {
        return None;
    }
    Some(fontdb::FaceInfo {
        id: fontdb::ID::dummy(),
        source: fontdb::Source::File(f.path),
        index: f.index,
        families: f
            .families
            .into_iter()
            .map(|(name, en)| {
                let lang = if en {
                    fontdb::Language::English_UnitedStates
                } else {
                    fontdb::Language::Unknown
                };
                (name, lang)
            })
            .collect(),
        post_script_name: f.post_script_name,
        style,
        weight: fontdb::Weight(f.weight),
        stretch,
        monospaced: f.monospaced,
    })
}

/// Writes the index of a scan (faces in the database's order), atomically; failures
/// are ignored (the next run scans again).
pub fn write(file: &Path, roots: &[Root], stamps: Stamps, faces: &[Found]) {
    if stamps.racy {
        return;
    }
    let mut out = Vec::with_capacity(faces.len());
    for (info, operator) in faces {
        let path = match &info.source {
            fontdb::Source::File(p) | fontdb::Source::SharedFile(p, _) => p.clone(),
            fontdb::Source::Binary(_) => continue,
        };
        out.push(Face {
            path,
            index: info.index,
            families: info
                .families
                .iter()
                .map(|(n, l)| (n.clone(), *l == fontdb::Language::English_UnitedStates))
                .collect(),
            post_script_name: info.post_script_name.clone(),
            style: match info.style {
                fontdb::Style::Normal => 0,
                fontdb::Style::Italic => 1,
                fontdb::Style::Oblique => 2,
            },
            weight: info.weight.0,
            stretch: info.stretch.to_number(),
            monospaced: info.monospaced,
            operator: *operator,
        });
    }
    let index = Index {
        format: FORMAT,
        roots: roots.to_vec(),
        stamps: stamps.stamps,
        faces: out,
    };
    let Ok(json) = serde_json::to_vec(&index) else {
        return;
    };
    let Some(dir) = file.parent() else {
        return;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("fonts"),
        std::process::id()
    ));
    if std::fs::write(&tmp, json).is_ok() && std::fs::rename(&tmp, file).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fonts::{Face as Style, Registry};

    /// An embedded face renamed (same length, in the name table's UTF-16 and Mac
    /// encodings), so it is a family of its own rather than a copy of the embedded one.
    fn renamed(face: Style, to: &str) -> Vec<u8> {
        let from = "DejaVu Sans";
        assert_eq!(from.len(), to.len());
        let wide = |s: &str| -> Vec<u8> { s.encode_utf16().flat_map(u16::to_be_bytes).collect() };
        let mut bytes = face.bytes().to_vec();
        for (a, b) in [
            (from.as_bytes().to_vec(), to.as_bytes().to_vec()),
            (wide(from), wide(to)),
        ] {
            let mut i = 0;
            while i + a.len() <= bytes.len() {
                if bytes[i..i + a.len()] == a[..] {
                    bytes[i..i + a.len()].copy_from_slice(&b);
                    i += a.len();
                } else {
                    i += 1;
                }
            }
        }
        bytes
    }

    /// What a registry holds: its fallback families in order, and every face of its
    /// database as usvg sees it.
    fn summary(r: &Registry) -> (Vec<crate::FontFamily>, Vec<String>) {
        let faces =
            r.db.faces()
                .map(|f| {
                    let path = match &f.source {
                        fontdb::Source::File(p) | fontdb::Source::SharedFile(p, _) => {
                            p.display().to_string()
                        }
                        fontdb::Source::Binary(_) => "embedded".into(),
                    };
                    let names: Vec<(&str, bool)> = f
                        .families
                        .iter()
                        .map(|(n, l)| (n.as_str(), *l == fontdb::Language::English_UnitedStates))
                        .collect();
                    format!(
                        "{path}#{} {names:?} {} {:?} {} {} {}",
                        f.index,
                        f.post_script_name,
                        f.style,
                        f.weight.0,
                        f.stretch.to_number(),
                        f.monospaced
                    )
                })
                .collect();
        (r.families(), faces)
    }

    struct Dirs {
        tmp: PathBuf,
        operator: PathBuf,
        system: PathBuf,
        cache: PathBuf,
    }

    impl Drop for Dirs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }

    fn dirs(name: &str) -> Dirs {
        let tmp = std::env::temp_dir().join(format!("plinth-index-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let d = Dirs {
            operator: tmp.join("operator"),
            system: tmp.join("system"),
            cache: tmp.join("cache"),
            tmp,
        };
        std::fs::create_dir_all(d.operator.join("nested")).unwrap();
        std::fs::create_dir_all(&d.system).unwrap();
        std::fs::write(
            d.operator.join("a.ttf"),
            renamed(Style::Regular, "Plinth Test"),
        )
        .unwrap();
        std::fs::write(
            d.operator.join("nested/b.ttf"),
            renamed(Style::Bold, "Plinth Test"),
        )
        .unwrap();
        std::fs::write(d.system.join("c.ttf"), renamed(Style::Mono, "Plinth Code")).unwrap();
        // A copy of an embedded family: the registry drops it whichever way it loads.
        std::fs::write(d.system.join("dejavu.ttf"), Style::Italic.bytes()).unwrap();
        std::fs::write(d.system.join("notes.txt"), "not a font").unwrap();
        d
    }

    fn load(d: &Dirs, index: bool) -> Registry {
        let system = [d.system.as_path()];
        Registry::load_indexed(
            Some(d.operator.as_path()),
            &system,
            index.then_some(d.cache.as_path()),
        )
    }

    fn roots(d: &Dirs) -> Vec<Root> {
        vec![
            Root {
                path: d.operator.clone(),
                operator: true,
            },
            Root {
                path: d.system.clone(),
                operator: false,
            },
        ]
    }

    fn valid(d: &Dirs) -> bool {
        read(&file_for(&d.cache, &roots(d)), &roots(d)).is_some()
    }

    /// The same faces, families and order from the index as from a scan; any change
    /// to a font or a directory, a different set of roots or a damaged index means a
    /// scan again.
    #[test]
    fn an_index_gives_what_a_scan_gives_until_anything_changes() {
        let d = dirs("same");
        // Fonts written just now are too recent to trust their times: no index yet.
        let scanned = summary(&load(&d, false));
        assert_eq!(summary(&load(&d, true)), scanned);
        assert!(!valid(&d), "an index of fonts changed within {RACY:?}");
        std::thread::sleep(RACY + std::time::Duration::from_millis(100));
        assert_eq!(summary(&load(&d, true)), scanned);
        assert!(valid(&d), "the scan wrote an index");
        let indexed = load(&d, true);
        assert_eq!(summary(&indexed), scanned);
        let names: Vec<String> = indexed.families().into_iter().map(|f| f.family).collect();
        assert_eq!(
            names,
            [
                "DejaVu Sans",
                "DejaVu Sans Mono",
                "Plinth Test",
                "Plinth Code Mono"
            ]
        );
        assert!(indexed.families()[2].source == "operator");
        // Another set of roots has an index of its own.
        let other = Registry::load_indexed(None, &[d.system.as_path()], Some(d.cache.as_path()));
        assert_eq!(
            summary(&other),
            summary(&Registry::load(None, &[d.system.as_path()]))
        );
        assert!(valid(&d));

        // A font rewritten in place (same size, another family) …
        std::fs::write(
            d.operator.join("a.ttf"),
            renamed(Style::Regular, "Plinth Tesu"),
        )
        .unwrap();
        assert!(!valid(&d));
        let changed = summary(&load(&d, true));
        assert_eq!(changed, summary(&load(&d, false)));
        assert_ne!(changed, scanned);
        assert!(changed.0.iter().any(|f| f.family == "Plinth Tesu"));
        // … one added in a new folder, one removed …
        std::thread::sleep(RACY + std::time::Duration::from_millis(100));
        load(&d, true);
        assert!(valid(&d));
        std::fs::create_dir_all(d.system.join("new")).unwrap();
        std::fs::write(
            d.system.join("new/e.ttf"),
            renamed(Style::Bold, "Plinth Mono"),
        )
        .unwrap();
        assert!(!valid(&d));
        assert_eq!(summary(&load(&d, true)), summary(&load(&d, false)));
        std::thread::sleep(RACY + std::time::Duration::from_millis(100));
        load(&d, true);
        assert!(valid(&d));
        std::fs::remove_file(d.operator.join("nested/b.ttf")).unwrap();
        assert!(!valid(&d));
        assert_eq!(summary(&load(&d, true)), summary(&load(&d, false)));

        // A damaged index is ignored.
        std::thread::sleep(RACY + std::time::Duration::from_millis(100));
        load(&d, true);
        let file = file_for(&d.cache, &roots(&d));
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        assert!(!valid(&d));
        assert_eq!(summary(&load(&d, true)), summary(&load(&d, false)));
    }

    /// A root that did not exist when the index was written and does now, or the
    /// reverse, is a change.
    #[test]
    fn a_root_appearing_is_a_change() {
        let d = dirs("root");
        std::fs::remove_dir_all(&d.operator).unwrap();
        std::thread::sleep(RACY + std::time::Duration::from_millis(100));
        load(&d, true);
        assert!(valid(&d));
        std::fs::create_dir_all(&d.operator).unwrap();
        std::fs::write(
            d.operator.join("a.ttf"),
            renamed(Style::Regular, "Plinth Test"),
        )
        .unwrap();
        assert!(!valid(&d));
        let names: Vec<String> = load(&d, true)
            .families()
            .into_iter()
            .map(|f| f.family)
            .collect();
        assert!(names.contains(&"Plinth Test".to_owned()), "{names:?}");
    }
}
