//! `/api/downloads*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::True;
use crate::db::downloads::LinkRow;
use crate::states::{LinkState, LinkStatus};

/// A download link as its organization's admins see it (never its token).
#[derive(Serialize, JsonSchema)]
pub struct Link {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    /// Its organization's domain.
    pub domain: String,
    pub inventory_item_id: Option<String>,
    pub order_id: Option<String>,
    /// Who the link is for, if anyone.
    pub user_id: Option<String>,
    /// The organization's object the link's clone was copied from.
    pub source_s3_key: String,
    pub file_name: String,
    pub mime_type: String,
    pub status: LinkState,
    pub max_downloads: i64,
    pub download_count: i64,
    pub downloads_left: i64,
    pub expires_at: DateTime<Utc>,
    pub last_download_at: Option<DateTime<Utc>>,
    /// The link's own copy of the file is gone (after it was used up, revoked or expired).
    pub clone_deleted: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Link {
    pub fn of(l: &LinkRow, domain: &str) -> Link {
        Link {
            id: l.id.clone(),
            domain: domain.to_owned(),
            inventory_item_id: l.item_id.clone(),
            order_id: l.order_id.clone(),
            user_id: l.user_id.clone(),
            source_s3_key: l.source_key.clone(),
            file_name: l.file_name.clone(),
            mime_type: l.mime_type.clone(),
            status: state(l),
            max_downloads: l.max_downloads,
            download_count: l.download_count,
            downloads_left: (l.max_downloads - l.download_count).max(0),
            expires_at: l.expires_at,
            last_download_at: l.last_download_at,
            clone_deleted: l.clone_deleted_at.is_some(),
            created_at: l.created_at,
            updated_at: l.updated_at,
        }
    }
}

/// What a link reads as now.
pub fn state(l: &LinkRow) -> LinkState {
    if l.status == LinkStatus::Revoked {
        LinkState::Revoked
    } else if l.download_count >= l.max_downloads {
        LinkState::Exhausted
    } else if l.expires_at <= Utc::now() {
        LinkState::Expired
    } else {
        LinkState::Live
    }
}

/// A link as its minting answer shows it: with its token and URL, the only time.
#[derive(Serialize, JsonSchema)]
pub struct Issued {
    #[serde(flatten)]
    pub link: Link,
    /// The secret of the link (stored only as its hash).
    pub token: String,
    /// `<public url>/api/downloads/<token>`: counts a download and redirects to the file.
    pub url: String,
}

/// `revoke`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "LinkRevoked")]
pub struct Revoked {
    pub success: True,
    pub already_revoked: bool,
    pub data: Link,
}

/// `downloads/purchase`: the checkout's answer and one link per unit bought, with its
/// token this once.
#[derive(Serialize, JsonSchema)]
pub struct LinksPurchased {
    #[serde(flatten)]
    pub checkout: super::marketplace::Placed,
    pub links: Vec<Issued>,
}
