//! Post rules (part 2, "Post rules"): who reads a post, what `data` flags mean, the deep
//! merge of `posts/update`, slugs, and which types list only published posts.

use serde_json::{Map, Value};

use super::Invalid;
use crate::caller::Caller;
use crate::db::posts::Reader;
use crate::db::Db;
use crate::domain::orgs::Orgs;

/// Types whose `POST /api/posts` list shows published posts only (the spec names the
/// note-editor type and `DIAGRAM_PAGE`; the team-publishing type follows rule 2).
pub const PUBLISHED_ONLY_TYPES: [&str; 3] = ["NOTE", "DIAGRAM_PAGE", "TEAM_POST"];

/// Readable by anybody: `data.public` is literally `true` and `data.private` is not.
pub fn published(data: &Value) -> bool {
    data.get("public") == Some(&Value::Bool(true)) && !flag(data, "private")
}

pub fn flag(data: &Value, key: &str) -> bool {
    data.get(key) == Some(&Value::Bool(true))
}

/// The caller's email domain, lower-cased.
pub fn email_domain(caller: &Caller) -> String {
    caller
        .user
        .email
        .rsplit('@')
        .next()
        .unwrap_or_default()
        .to_lowercase()
}

/// What a post's reader needs to know about it.
pub struct Readable<'a> {
    pub owner_id: &'a str,
    pub organization_id: Option<&'a str>,
    pub data: &'a Value,
}

/// Who reads which post, with what that needs: the permanent admin domains
/// (`PLINTH_ADMIN_DOMAINS`), the public-access table and the organizations' members.
#[derive(Clone)]
pub struct Readers {
    db: Db,
    orgs: Orgs,
    admin_domains: std::sync::Arc<[String]>,
}

impl Readers {
    /// `admin_domains`: lower-case.
    pub fn new(db: Db, orgs: Orgs, admin_domains: Vec<String>) -> Self {
        Self {
            db,
            orgs,
            admin_domains: admin_domains.into(),
        }
    }

    /// A verified account on a permanent admin domain (`PLINTH_ADMIN_DOMAINS`).
    pub fn permanent_admin(&self, caller: &Caller) -> bool {
        caller.user.verified && self.admin_domains.contains(&email_domain(caller))
    }

    /// A verified account whose email domain is a permanent admin domain or granted in the
    /// public-access table (read on every call: a removed grant takes effect at once).
    pub async fn team_previewer(&self, caller: &Caller) -> Result<bool, sqlx::Error> {
        if !caller.user.verified {
            return Ok(false);
        }
        let domain = email_domain(caller);
        Ok(self.admin_domains.contains(&domain)
            || crate::db::public_access::contains(&self.db, &domain).await?)
    }

    /// Whether `caller` may read the post (rule 2): published posts are everybody's; an
    /// unpublished one is its owner's, a platform administrator's, a permanent admin's, its
    /// organization's members', and, when `data.teamPost` is true, a team previewer's (a
    /// verified account on a granted partner domain) — never a personal draft.
    pub async fn may_read(
        &self,
        caller: Option<&Caller>,
        post: &Readable<'_>,
    ) -> Result<bool, sqlx::Error> {
        if published(post.data) {
            return Ok(true);
        }
        let Some(c) = caller else {
            return Ok(false);
        };
        if c.id == post.owner_id || c.is_admin() || self.permanent_admin(c) {
            return Ok(true);
        }
        if let Some(org) = post.organization_id {
            if self.orgs.in_org(c, org).await? {
                return Ok(true);
            }
        }
        if flag(post.data, "teamPost") {
            return self.team_previewer(c).await;
        }
        Ok(false)
    }

    /// The limit a post list puts on what it shows this caller: `None` for those who read
    /// every post (platform and permanent admins), else their id and whether they preview
    /// team posts, which `db::posts::list` applies as [`Self::may_read`] does.
    pub async fn list_reader<'a>(
        &self,
        caller: Option<&'a Caller>,
    ) -> Result<Option<Reader<'a>>, sqlx::Error> {
        Ok(match caller {
            None => Some(Reader::default()),
            Some(c) if c.is_admin() || self.permanent_admin(c) => None,
            Some(c) => Some(Reader {
                user_id: Some(&c.id),
                team_previewer: self.team_previewer(c).await?,
            }),
        })
    }
}

/// `posts/update`'s merge of `updates.data`: objects merge key by key at every depth,
/// anything else replaces, `null` removes the key.
pub fn deep_merge(stored: &mut Map<String, Value>, changes: &Map<String, Value>) {
    for (k, v) in changes {
        match (stored.get_mut(k), v) {
            (_, Value::Null) => {
                stored.remove(k);
            }
            (Some(Value::Object(inner)), Value::Object(more)) => deep_merge(inner, more),
            _ => {
                stored.insert(k.clone(), v.clone());
            }
        }
    }
}

/// A slug: trimmed and lower-cased, 1 to 200 of `a-z`, `0-9`, `-`, `_`, `.`, starting
/// with a letter or digit.
pub fn slug(raw: &str) -> Result<String, Invalid> {
    let s = raw.trim().to_lowercase();
    let ok = !s.is_empty()
        && s.len() <= 200
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c));
    if !ok {
        return Err(Invalid::new(
            "`slug` must be 1 to 200 of a-z, 0-9, `-`, `_` and `.`, starting with a letter or digit",
        ));
    }
    Ok(s)
}

/// A `src` (a unique source identifier): 1 to 500 characters.
pub fn src(raw: &str) -> Result<String, Invalid> {
    let s = raw.trim();
    if s.is_empty() || s.chars().count() > 500 {
        return Err(Invalid::new(
            "`src` must be a string of 1 to 500 characters",
        ));
    }
    Ok(s.to_owned())
}

/// The domain of a referrer or backlink URL (`https://news.example.com/a` →
/// `news.example.com`); `None` for anything that is not an http(s) URL.
pub fn url_domain(url: &str) -> Option<String> {
    let rest = url
        .trim()
        .strip_prefix("https://")
        .or_else(|| url.trim().strip_prefix("http://"))?;
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit('@').next()?.split(':').next()?.to_lowercase();
    (!host.is_empty() && host.len() <= 253).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn published_needs_a_literal_true_and_no_private_flag() {
        assert!(published(&json!({"public": true})));
        assert!(!published(&json!({"public": "true"})));
        assert!(!published(&json!({"public": 1})));
        assert!(!published(&json!({"public": true, "private": true})));
        assert!(published(&json!({"public": true, "private": false})));
        assert!(!published(&json!({})));
    }

    #[test]
    fn deep_merge_recurses_into_objects_and_null_removes() {
        let mut stored = json!({"a": {"x": 1, "y": 2}, "b": 1, "c": [1]})
            .as_object()
            .cloned()
            .unwrap();
        let changes = json!({"a": {"y": null, "z": 3}, "b": {"k": 1}, "c": [2], "teamPost": true});
        deep_merge(&mut stored, changes.as_object().unwrap());
        assert_eq!(
            Value::Object(stored),
            json!({"a": {"x": 1, "z": 3}, "b": {"k": 1}, "c": [2], "teamPost": true})
        );
    }

    #[test]
    fn slugs_and_referrer_domains() {
        assert_eq!(slug(" Hello-World ").unwrap(), "hello-world");
        assert!(slug("-x").is_err() && slug("a b").is_err() && slug("").is_err());
        assert_eq!(
            url_domain("https://News.Example.com:443/a?b#c").as_deref(),
            Some("news.example.com")
        );
        assert_eq!(url_domain("javascript:alert(1)"), None);
        assert_eq!(
            url_domain("https://user@host.test/").as_deref(),
            Some("host.test")
        );
    }
}
