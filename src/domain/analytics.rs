//! Analytics rules shared by the handlers: labels, wildcard patterns, visitor ids, site
//! access levels, the short-lived cache of active sites that the track path reads, and
//! how a stats range is read (rollups for whole hours and days, events at the edges).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

use super::Invalid;
use crate::db::analytics::{self as store, Grain, SiteRow};
use crate::db::cache::ReadCache;
use crate::db::sketch::{self, Sketch};
use crate::db::Db;

/// Attachments of events older than this are deleted by the expiry job.
pub const ATTACHMENT_DAYS: chrono::TimeDelta = chrono::TimeDelta::days(30);

/// Longest label kept (after normalization).
pub const MAX_LABEL: usize = 2000;

/// Page labels (starting with `/`) lose their query string and hash; other labels are
/// custom event names, kept as sent.
pub fn normalize_label(raw: &str) -> &str {
    if raw.starts_with('/') {
        let end = raw.find(['?', '#']).unwrap_or(raw.len());
        &raw[..end]
    } else {
        raw
    }
}

/// Most patterns one `stats` call takes, the longest one (characters), the most `*` in
/// one, and the most characters of all of them together (security round 2, M3: twenty
/// 2,000-character patterns once cost seconds of database time per call).
pub const MAX_PATTERNS: usize = 20;
pub const MAX_PATTERN_CHARS: usize = 200;
pub const MAX_PATTERN_STARS: usize = 8;
pub const MAX_PATTERNS_TOTAL: usize = 1_000;

/// A `stats` label pattern: `*` matches any run of characters, every other character
/// itself (`%`, `_` and `\` included), case-sensitively. Matched in time linear in the
/// label: the literal pieces between the stars are found leftmost, one after the other,
/// which is exact for patterns whose only wildcard is `*` (where a SQL `LIKE` backtracks
/// through every way to place its wildcards).
#[derive(Debug, Clone)]
pub struct LabelPattern {
    pieces: Vec<String>,
}

impl LabelPattern {
    /// The patterns of a `stats` request, checked against the bounds above (400 naming
    /// the one exceeded).
    pub fn parse_all(raw: &[String]) -> Result<Vec<LabelPattern>, Invalid> {
        if raw.len() > MAX_PATTERNS {
            return Err(Invalid::new(format!(
                "`labels` may hold at most {MAX_PATTERNS} patterns"
            )));
        }
        let mut total = 0;
        for p in raw {
            let chars = p.chars().count();
            total += chars;
            if chars == 0 || chars > MAX_PATTERN_CHARS {
                return Err(Invalid::new(format!(
                    "each of `labels` must be 1 to {MAX_PATTERN_CHARS} characters"
                )));
            }
            if p.matches('*').count() > MAX_PATTERN_STARS {
                return Err(Invalid::new(format!(
                    "each of `labels` may hold at most {MAX_PATTERN_STARS} `*`"
                )));
            }
        }
        if total > MAX_PATTERNS_TOTAL {
            return Err(Invalid::new(format!(
                "`labels` may hold at most {MAX_PATTERNS_TOTAL} characters in all"
            )));
        }
        Ok(raw.iter().map(|p| LabelPattern::new(p)).collect())
    }

    pub fn new(raw: &str) -> LabelPattern {
        LabelPattern {
            pieces: raw.split('*').map(str::to_owned).collect(),
        }
    }

    pub fn matches(&self, label: &str) -> bool {
        let (first, rest) = self.pieces.split_first().expect("split yields a piece");
        let Some((last, middle)) = rest.split_last() else {
            return label == first;
        };
        if label.len() < first.len() + last.len()
            || !label.starts_with(first.as_str())
            || !label.ends_with(last.as_str())
        {
            return false;
        }
        let mut inside = &label[first.len()..label.len() - last.len()];
        for piece in middle {
            match inside.find(piece.as_str()) {
                Some(at) => inside = &inside[at + piece.len()..],
                None => return false,
            }
        }
        true
    }
}

/// Whether any pattern matches `label` (every label when there are none). The empty
/// label stands for "no label", which no pattern matches.
pub fn wanted(patterns: &[LabelPattern], label: &str) -> bool {
    patterns.is_empty() || (!label.is_empty() && patterns.iter().any(|p| p.matches(label)))
}

/// The site-scoped visitor id: HMAC-SHA256 keyed by the site's secret salt over the
/// client id (lower-cased UUID), its first 16 bytes as a UUID. Without a client id the
/// input is the UTC day, client address and user agent, so an anonymous visitor is one
/// visitor per day and cannot be followed across days or sites.
pub fn visitor_id(salt: &str, client: Visitor<'_>) -> String {
    let input = match client {
        Visitor::Client(id) => format!("client|{id}"),
        Visitor::Anonymous { day, ip, agent } => format!("anon|{day}|{ip}|{agent}"),
    };
    let mac = crate::crypto::hmac_sha256(salt.as_bytes(), input.as_bytes());
    let bytes: [u8; 16] = mac[..16].try_into().expect("16 of 32 bytes");
    uuid::Uuid::from_bytes(bytes).to_string()
}

pub enum Visitor<'a> {
    Client(&'a uuid::Uuid),
    Anonymous {
        day: &'a str,
        ip: &'a str,
        agent: &'a str,
    },
}

/// What an operation needs on a site.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Viewer (member level 10), admin member, owner or platform admin.
    View,
    /// Admin member (level 100), owner or platform admin.
    Admin,
    /// The owner only (platform admins do not bypass it).
    Owner,
}

/// The caller's standing on a site.
pub struct Standing {
    /// 100 for the owner, the member level otherwise (0 for a platform admin who is
    /// neither).
    pub access_level: i64,
    pub is_owner: bool,
}

/// Active sites by id for the track path (`None`: no such active site), kept
/// [`crate::db::cache::TTL`] (5 s) so a soft delete on another process is honoured within
/// 5 s; this process forgets at once.
#[derive(Clone)]
pub struct SiteCache(Arc<ReadCache<String, Option<Arc<SiteRow>>>>);

impl Default for SiteCache {
    fn default() -> Self {
        Self(Arc::new(ReadCache::new(100_000, 100_000, |_, _| 1)))
    }
}

impl SiteCache {
    pub async fn get(&self, db: &Db, id: &str) -> sqlx::Result<Option<Arc<SiteRow>>> {
        if let Some(hit) = self.0.get(id) {
            return Ok(hit);
        }
        let ticket = self.0.ticket(id);
        let site = store::site(db, id).await?.map(Arc::new);
        self.0.fill(ticket, id.to_owned(), site.clone());
        Ok(site)
    }

    pub fn forget(&self, id: &str) {
        self.0.forget(id);
    }
}

/// A part of a stats range, read from where it is cheapest: whole hours and days from the
/// rollups, the partial hours at either edge from the events.
#[derive(Debug, PartialEq)]
pub enum Piece {
    /// Events in `[from, to)`, or `[from, to]` when `inclusive`.
    Raw {
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        inclusive: bool,
    },
    /// Rollup rows of the whole periods in `[from, to)`.
    Rolled {
        grain: Grain,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
}

fn floor(t: DateTime<Utc>, step: TimeDelta) -> DateTime<Utc> {
    t.duration_trunc(step).expect("UTC times truncate")
}

fn ceil(t: DateTime<Utc>, step: TimeDelta) -> DateTime<Utc> {
    let f = floor(t, step);
    if f == t {
        t
    } else {
        f + step
    }
}

/// The hour `t` falls in: the store's unit of rollups.
pub use store::hour_of;

/// The worker rolls up the hours that ended at least this long ago; a hit of a rolled-up
/// hour that commits later still lands in the rollups (its writer merges it).
pub const ROLLUP_GRACE: TimeDelta = TimeDelta::minutes(1);

/// Rolls up the hours that have ended (the worker, every half minute); returns the
/// events read.
pub async fn roll_up(db: &Db) -> sqlx::Result<u64> {
    store::roll_up(db, hour_of(Utc::now() - ROLLUP_GRACE)).await
}

/// Splits `[from, to]` into disjoint pieces that cover it: raw events up to the first
/// whole hour, whole hours up to the first whole day (whole days only when `days`), whole
/// hours after the last whole day, raw events from the last whole hour to `to`. Only
/// hours before `rolled_until` count as whole: later ones are not in the rollups yet.
pub fn pieces(
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    days: bool,
    rolled_until: Option<DateTime<Utc>>,
) -> Vec<Piece> {
    let (hour, day) = (TimeDelta::hours(1), TimeDelta::days(1));
    let h1 = ceil(from, hour);
    let h2 = match rolled_until {
        Some(r) => floor(to, hour).min(floor(r, hour)),
        None => h1,
    };
    if h1 >= h2 {
        return vec![Piece::Raw {
            from,
            to,
            inclusive: true,
        }];
    }
    let mut out = Vec::with_capacity(5);
    if from < h1 {
        out.push(Piece::Raw {
            from,
            to: h1,
            inclusive: false,
        });
    }
    let rolled = |grain, from, to| Piece::Rolled { grain, from, to };
    let (d1, d2) = (ceil(h1, day), floor(h2, day));
    if days && d1 < d2 {
        if h1 < d1 {
            out.push(rolled(Grain::Hour, h1, d1));
        }
        out.push(rolled(Grain::Day, d1, d2));
        if d2 < h2 {
            out.push(rolled(Grain::Hour, d2, h2));
        }
    } else {
        out.push(rolled(Grain::Hour, h1, h2));
    }
    out.push(Piece::Raw {
        from: h2,
        to,
        inclusive: true,
    });
    out
}

/// Hits and a visitor sketch.
#[derive(Default)]
struct Count(i64, Sketch);

impl Count {
    fn add(&mut self, hits: i64, s: &Sketch) {
        self.0 += hits;
        self.1.merge(s);
    }
}

/// What a stats answer counts: per bucket, in all, and per label when asked.
pub struct Tally {
    grain: Grain,
    buckets: BTreeMap<String, Count>,
    total: Count,
    labels: Option<HashMap<String, Count>>,
}

/// Hits and distinct visitors (exact up to 256, else estimated: src/db/sketch.rs).
#[derive(Debug, PartialEq)]
pub struct Counted {
    pub hits: i64,
    pub visitors: u64,
}

impl Tally {
    fn add(&mut self, period: &str, label: &str, hits: i64, s: &Sketch) {
        let bucket = match self.grain {
            Grain::Hour => &period[..period.len().min(13)],
            Grain::Day => &period[..period.len().min(10)],
        };
        match self.buckets.get_mut(bucket) {
            Some(c) => c.add(hits, s),
            None => {
                let mut c = Count::default();
                c.add(hits, s);
                self.buckets.insert(bucket.to_owned(), c);
            }
        }
        self.total.add(hits, s);
        if let Some(labels) = &mut self.labels {
            if !label.is_empty() {
                labels.entry(label.to_owned()).or_default().add(hits, s);
            }
        }
    }

    /// Per bucket (`YYYY-MM-DDTHH` or `YYYY-MM-DD`), only those with hits.
    pub fn bucket(&self, key: &str) -> Option<Counted> {
        self.buckets.get(key).map(counted)
    }

    pub fn total(&self) -> Counted {
        counted(&self.total)
    }

    /// The most hit labels, ties by label; empty unless asked for.
    pub fn top_labels(&self, limit: usize) -> Vec<(String, Counted)> {
        let mut all: Vec<(&String, &Count)> = self.labels.iter().flatten().collect();
        all.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(b.0)));
        all.into_iter()
            .take(limit)
            .map(|(l, c)| (l.clone(), counted(c)))
            .collect()
    }
}

fn counted(c: &Count) -> Counted {
    Counted {
        hits: c.0,
        visitors: c.1.count(),
    }
}

/// Counts the events of `site_id` in `[from, to]` whose label matches any `patterns`
/// (all events when empty) per hour or per UTC day, from the rollups and the raw events
/// at the edges and past the rollups, all pieces read at once.
pub async fn tally(
    db: &Db,
    site_id: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    grain: Grain,
    patterns: &[LabelPattern],
    with_labels: bool,
) -> sqlx::Result<Tally> {
    enum Read {
        Cells(Vec<store::Cell>),
        Raw(Vec<store::RawHit>),
    }
    let rolled = store::rolled_until(db).await?;
    let reads = pieces(from, to, grain == Grain::Day, rolled)
        .into_iter()
        .map(|p| async move {
            Ok::<_, sqlx::Error>(match p {
                Piece::Raw {
                    from,
                    to,
                    inclusive,
                } => Read::Raw(store::raw_hits(db, site_id, (from, to), inclusive).await?),
                Piece::Rolled { grain, from, to } => {
                    let range = (grain.period(from), grain.period(to));
                    Read::Cells(store::cells(db, grain, site_id, (&range.0, &range.1)).await?)
                }
            })
        });
    let mut t = Tally {
        grain,
        buckets: BTreeMap::new(),
        total: Count::default(),
        labels: with_labels.then(HashMap::new),
    };
    for read in futures::future::try_join_all(reads).await? {
        match read {
            Read::Cells(cells) => {
                for c in cells.iter().filter(|c| wanted(patterns, &c.label)) {
                    t.add(&c.period, &c.label, c.hits, &Sketch::from_bytes(&c.sketch));
                }
            }
            Read::Raw(hits) => {
                for h in hits
                    .iter()
                    .filter(|h| wanted(patterns, h.label.as_deref().unwrap_or("")))
                {
                    let mut s = Sketch::default();
                    s.insert(sketch::hash(&h.visitor_id));
                    let period = Grain::Hour.period(h.created_at);
                    t.add(&period, h.label.as_deref().unwrap_or(""), 1, &s);
                }
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_labels_lose_query_and_hash() {
        assert_eq!(normalize_label("/pricing?ref=x#top"), "/pricing");
        assert_eq!(normalize_label("/a#b?c"), "/a");
        assert_eq!(normalize_label("signup?x"), "signup?x");
    }

    #[test]
    fn patterns_match_stars_only_and_in_linear_time() {
        let m = |p: &str, l: &str| LabelPattern::new(p).matches(l);
        assert!(m("/blog/*", "/blog/a"));
        assert!(m("/blog/*", "/blog/"));
        assert!(!m("/blog/*", "/blo"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "aXbYc") && m("a*b*c", "abc") && !m("a*b*c", "acb"));
        assert!(m("*ab*ab", "xabyab") && !m("*ab*ab", "ab"));
        assert!(m("100%_a\\*", "100%_a\\x") && !m("100%_a*", "100xxa"));
        assert!(!m("exact", "Exact") && m("exact", "exact"));
        assert!(!wanted(&[LabelPattern::new("*")], ""));
        assert!(wanted(&[], ""));
        // The review's pattern against its label: instant, not seconds.
        let label = "a".repeat(2_000);
        let hostile = format!("*{}b", "a".repeat(198));
        let started = std::time::Instant::now();
        for _ in 0..1_000 {
            assert!(!m(&hostile, &label));
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn pattern_bounds_name_the_limit() {
        let err = |v: Vec<String>| LabelPattern::parse_all(&v).unwrap_err().0;
        assert!(err(vec!["a".repeat(201)]).contains("200"));
        assert!(err(vec!["*a".repeat(9)]).contains("8"));
        assert!(err(vec!["x".to_owned(); 21]).contains("20"));
        assert!(err(vec!["x".repeat(200); 6]).contains("1000"));
        assert!(LabelPattern::parse_all(&vec!["/a*".to_owned(); 20]).is_ok());
    }

    #[test]
    fn visitor_ids_are_per_site() {
        let c = uuid::Uuid::new_v4();
        let a = visitor_id("salt-a", Visitor::Client(&c));
        assert_eq!(a, visitor_id("salt-a", Visitor::Client(&c)));
        assert_ne!(a, visitor_id("salt-b", Visitor::Client(&c)));
        assert!(!a.contains(&c.to_string()));
    }
    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_range_reads_whole_days_and_hours_from_rollups_and_edges_raw() {
        let all = Some(at("2030-01-01T00:00:00Z"));
        let raw = |from, to, inclusive| Piece::Raw {
            from: at(from),
            to: at(to),
            inclusive,
        };
        let rolled = |grain, from, to| Piece::Rolled {
            grain,
            from: at(from),
            to: at(to),
        };
        assert_eq!(
            pieces(
                at("2026-01-01T10:30:00Z"),
                at("2026-01-04T05:15:00Z"),
                true,
                all
            ),
            vec![
                raw("2026-01-01T10:30:00Z", "2026-01-01T11:00:00Z", false),
                rolled(Grain::Hour, "2026-01-01T11:00:00Z", "2026-01-02T00:00:00Z"),
                rolled(Grain::Day, "2026-01-02T00:00:00Z", "2026-01-04T00:00:00Z"),
                rolled(Grain::Hour, "2026-01-04T00:00:00Z", "2026-01-04T05:00:00Z"),
                raw("2026-01-04T05:00:00Z", "2026-01-04T05:15:00Z", true),
            ]
        );
        // Aligned ends: no raw piece before, an empty-width one (the instant `to`) after.
        assert_eq!(
            pieces(
                at("2026-01-01T00:00:00Z"),
                at("2026-01-02T00:00:00Z"),
                true,
                all
            ),
            vec![
                rolled(Grain::Day, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"),
                raw("2026-01-02T00:00:00Z", "2026-01-02T00:00:00Z", true),
            ]
        );
        // Hourly answers never read days; inside one hour everything is raw.
        assert_eq!(
            pieces(
                at("2026-01-01T10:30:00Z"),
                at("2026-01-03T05:15:00Z"),
                false,
                all
            )[1],
            rolled(Grain::Hour, "2026-01-01T11:00:00Z", "2026-01-03T05:00:00Z")
        );
        assert_eq!(
            pieces(
                at("2026-01-01T10:10:00Z"),
                at("2026-01-01T10:50:00Z"),
                true,
                all
            ),
            vec![raw("2026-01-01T10:10:00Z", "2026-01-01T10:50:00Z", true)]
        );
        // Past `rolled_until` everything is read raw; before the first roll, all of it.
        assert_eq!(
            pieces(
                at("2026-01-01T10:30:00Z"),
                at("2026-01-04T05:15:00Z"),
                true,
                Some(at("2026-01-03T02:00:00Z"))
            ),
            vec![
                raw("2026-01-01T10:30:00Z", "2026-01-01T11:00:00Z", false),
                rolled(Grain::Hour, "2026-01-01T11:00:00Z", "2026-01-02T00:00:00Z"),
                rolled(Grain::Day, "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
                rolled(Grain::Hour, "2026-01-03T00:00:00Z", "2026-01-03T02:00:00Z"),
                raw("2026-01-03T02:00:00Z", "2026-01-04T05:15:00Z", true),
            ]
        );
        assert_eq!(
            pieces(
                at("2026-01-01T10:30:00Z"),
                at("2026-01-04T05:15:00Z"),
                true,
                None
            ),
            vec![raw("2026-01-01T10:30:00Z", "2026-01-04T05:15:00Z", true)]
        );
    }
}
