//! `/api/likes*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::db::likes::LikeRow;

/// A like.
#[derive(Serialize, JsonSchema)]
pub struct Like {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub user_id: String,
    /// The liked entity.
    pub entity_id: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&LikeRow> for Like {
    fn from(l: &LikeRow) -> Like {
        Like {
            id: l.id.clone(),
            user_id: l.user_id.clone(),
            entity_id: l.entity_id.clone(),
            data: l.data.0.clone(),
            created_at: l.created_at,
            updated_at: l.updated_at,
        }
    }
}

/// Someone who liked an entity.
#[derive(Serialize, JsonSchema)]
pub struct Liker {
    pub id: String,
    pub username: Option<String>,
    pub liked_at: DateTime<Utc>,
}

/// `GET /api/likes/{id}`: the count and who liked.
#[derive(Serialize, JsonSchema)]
pub struct LikesOf {
    pub entity_id: String,
    /// Every like of the entity.
    pub count: i64,
    /// The newest 100 likers.
    pub users: Vec<Liker>,
}
