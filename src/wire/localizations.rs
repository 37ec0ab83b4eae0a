//! `/api/data/localizations*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use crate::db::localizations::LocalizationRow;

/// A translation of one named field of an entity into one language.
#[derive(Serialize, JsonSchema)]
pub struct Localization {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub entity_id: String,
    /// BCP 47.
    pub language_tag: String,
    /// What is translated (`title`, `description`, ...).
    pub name: String,
    pub value: String,
    /// Who created it (may change and delete it).
    pub user_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<LocalizationRow> for Localization {
    fn from(l: LocalizationRow) -> Localization {
        Localization {
            id: l.id,
            entity_id: l.entity_id,
            language_tag: l.language_tag,
            name: l.name,
            value: l.value,
            user_id: l.user_id,
            created_at: l.created_at,
            updated_at: l.updated_at,
        }
    }
}

/// `get-by-entity-id`: every translation of the entity, by language tag then name.
#[derive(Serialize, JsonSchema)]
pub struct Translations {
    pub entity_id: String,
    pub data: Vec<Localization>,
    pub count: usize,
}
