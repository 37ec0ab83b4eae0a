//! `/api/posts*` answers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::posts::{PostRow, Stats};

/// A post.
#[derive(Serialize, JsonSchema)]
pub struct Post {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub r#type: String,
    /// The author.
    pub user_id: String,
    pub organization_id: Option<String>,
    /// The thread this post replies to.
    pub thread_id: Option<String>,
    pub slug: Option<String>,
    pub src: Option<String>,
    /// `title`, `body` (markdown), `description`, `public`, `private`, `teamPost`,
    /// `reception_tracking`, `editorContent` (TipTap/ProseMirror JSON) and any other keys.
    pub data: Value,
    /// Readable by anybody (`data.public` true and `data.private` not).
    pub published: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&PostRow> for Post {
    fn from(p: &PostRow) -> Post {
        Post {
            id: p.id.clone(),
            r#type: p.r#type.clone(),
            user_id: p.user_id.clone(),
            organization_id: p.organization_id.clone(),
            thread_id: p.thread_id.clone(),
            slug: p.slug.clone(),
            src: p.src.clone(),
            data: p.data.0.clone(),
            published: p.published,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// A thread of `all-threads`.
#[derive(Serialize, JsonSchema)]
pub struct Thread {
    #[serde(flatten)]
    pub post: Post,
    /// Its published replies.
    pub reply_count: i64,
}

/// `admin-stats`.
#[derive(Serialize, JsonSchema)]
pub struct AdminStats {
    /// The type asked for; `null` for all.
    pub r#type: Option<String>,
    pub data: PostStats,
    /// Posts per type (without a `type` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_type: Option<BTreeMap<String, i64>>,
}

/// Platform-wide counts, of one type or of all.
#[derive(Serialize, JsonSchema)]
pub struct PostStats {
    pub total: i64,
    pub published: i64,
    pub private: i64,
    pub team_posts: i64,
    pub replies: i64,
    pub authors: i64,
    pub organizations: i64,
}

impl From<Stats> for PostStats {
    fn from(s: Stats) -> PostStats {
        PostStats {
            total: s.total,
            published: s.published,
            private: s.private,
            team_posts: s.team_posts,
            replies: s.replies,
            authors: s.authors,
            organizations: s.organizations,
        }
    }
}

/// `GET /api/posts/reception/{id}`.
#[derive(Serialize, JsonSchema)]
pub struct Reception {
    pub success: True,
    pub data: ReceptionData,
}

#[derive(Serialize, JsonSchema)]
pub struct ReceptionData {
    #[schemars(extend("format" = "uuid"))]
    pub post_id: String,
    /// Visits per day: the day's UTC midnight (RFC 3339) to a count.
    pub visits: BTreeMap<String, i64>,
    /// Per referring domain.
    pub referrers: BTreeMap<String, Referrer>,
    /// Per referring URL.
    pub backlinks: BTreeMap<String, Backlink>,
}

#[derive(Serialize, JsonSchema)]
pub struct Referrer {
    pub visits: i64,
    pub seen_at: DateTime<Utc>,
}

#[derive(Serialize, JsonSchema)]
pub struct Backlink {
    pub domain: String,
    pub seen_at: DateTime<Utc>,
}
