//! Analytics rules shared by the handlers: labels, wildcard patterns, visitor ids, site
//! access levels, and the short-lived cache of active sites that the track path reads.

use std::sync::Arc;
use std::time::Duration;

use crate::db::analytics::{self as store, SiteRow};
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

/// A `stats` label pattern as a SQL `LIKE` pattern: `*` matches anything; `%`, `_` and
/// `\` match themselves (escaped with `\`).
pub fn like_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 4);
    for c in pattern.chars() {
        match c {
            '*' => out.push('%'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
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

/// Active sites by id for the track path (`None`: no such active site), kept 5 s so a
/// soft delete on another process is honoured within 5 s; this process forgets at once.
#[derive(Clone)]
pub struct SiteCache(moka::sync::Cache<String, Option<Arc<SiteRow>>>);

impl Default for SiteCache {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(Duration::from_secs(5))
                .build(),
        )
    }
}

impl SiteCache {
    pub async fn get(&self, db: &Db, id: &str) -> sqlx::Result<Option<Arc<SiteRow>>> {
        if let Some(hit) = self.0.get(id) {
            return Ok(hit);
        }
        let site = store::site(db, id).await?.map(Arc::new);
        self.0.insert(id.to_owned(), site.clone());
        Ok(site)
    }

    pub fn forget(&self, id: &str) {
        self.0.invalidate(id);
    }
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
    fn patterns_escape_like_metacharacters() {
        assert_eq!(like_pattern("/blog/*"), "/blog/%");
        assert_eq!(like_pattern("100%_a\\*"), "100\\%\\_a\\\\%");
    }

    #[test]
    fn visitor_ids_are_per_site() {
        let c = uuid::Uuid::new_v4();
        let a = visitor_id("salt-a", Visitor::Client(&c));
        assert_eq!(a, visitor_id("salt-a", Visitor::Client(&c)));
        assert_ne!(a, visitor_id("salt-b", Visitor::Client(&c)));
        assert!(!a.contains(&c.to_string()));
    }
}
