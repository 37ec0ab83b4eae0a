//! `/api/slides*` answers (export jobs: `wire::exports::JobView`).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::slides::{AssetRow, DeckRow, PublicationRow, RevisionRow, RevisionSummary};
use crate::states::PublicationStatus;

/// A deck. Reads and changes of one deck carry its `content` and current `revision`;
/// `GET /api/slides/{id}` adds the caller's `role` and the active `publication`.
#[derive(Serialize, JsonSchema)]
pub struct SlideDeck {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    /// Goes up by one with each change; changes name it as `expected_version`.
    pub version: i64,
    pub title: Option<String>,
    /// `personal` or `organization`.
    pub scope: &'static str,
    pub domain: Option<String>,
    pub organization_id: Option<String>,
    #[schemars(extend("format" = "uuid"))]
    pub owner_id: String,
    /// A JSON object.
    pub data: Value,
    #[schemars(extend("format" = "uuid"))]
    pub revision_id: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The deck document (docs/slides.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<Revision>,
    /// `owner`, `org_admin`, `org_member` or `platform_admin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publication: Option<Publication>,
    /// `create` and `update` only: what the markdown sets that plinth does not draw
    /// (unsupported Marp settings, maths, unknown emoji shortcodes), one line each with
    /// its line number, as `plinth slides check` prints them; empty when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl From<&DeckRow> for SlideDeck {
    fn from(d: &DeckRow) -> SlideDeck {
        SlideDeck {
            id: d.id.clone(),
            version: d.version,
            title: d.title.clone(),
            scope: if d.organization_id.is_some() {
                "organization"
            } else {
                "personal"
            },
            domain: d.domain.clone(),
            organization_id: d.organization_id.clone(),
            owner_id: d.owner_id.clone(),
            data: d.data.0.clone(),
            revision_id: d.current_revision_id.clone(),
            created_at: d.created_at,
            updated_at: d.updated_at,
            content: None,
            revision: None,
            role: None,
            publication: None,
            warnings: None,
        }
    }
}

impl SlideDeck {
    /// The deck with its current revision and content.
    pub fn with_revision(d: &DeckRow, r: &RevisionRow) -> SlideDeck {
        SlideDeck {
            content: Some(r.content.0.clone()),
            revision: Some(Revision::from(&r.summary)),
            ..SlideDeck::from(d)
        }
    }
}

/// `GET /api/slides`.
#[derive(Serialize, JsonSchema)]
pub struct SlideDecks {
    pub data: Vec<SlideDeck>,
    pub count: usize,
}

/// `delete`.
#[derive(Serialize, JsonSchema)]
pub struct SlideDeckDeleted {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub deleted: True,
    /// Publications the deletion revoked.
    pub revoked_publications: Vec<String>,
}

/// A revision; `content` only when one revision is read.
#[derive(Serialize, JsonSchema)]
pub struct Revision {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub deck_id: String,
    pub version: i64,
    /// How it was written: `document`, `markdown`, `template`, `operations` or `restore`.
    pub source: String,
    pub restored_from: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub slide_count: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

impl From<&RevisionSummary> for Revision {
    fn from(r: &RevisionSummary) -> Revision {
        Revision {
            id: r.id.clone(),
            deck_id: r.deck_id.clone(),
            version: r.version,
            source: r.source.clone(),
            restored_from: r.restored_from.clone(),
            created_by: r.created_by.clone(),
            created_at: r.created_at,
            slide_count: r.slide_count,
            content: None,
        }
    }
}

impl From<&RevisionRow> for Revision {
    fn from(r: &RevisionRow) -> Revision {
        Revision {
            content: Some(r.content.0.clone()),
            ..Revision::from(&r.summary)
        }
    }
}

/// `GET /api/slides/revisions`: newest first.
#[derive(Serialize, JsonSchema)]
pub struct Revisions {
    pub data: Vec<Revision>,
    pub count: usize,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
    /// The deck's current version.
    pub version: i64,
}

/// A publication; `url` (its audience address) after `publish`.
#[derive(Serialize, JsonSchema)]
pub struct Publication {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub deck_id: String,
    #[schemars(extend("format" = "uuid"))]
    pub revision_id: String,
    pub status: PublicationStatus,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Audience content (`public/{id}`): the deck without notes or hidden slides, and
    /// `images`, short-lived URLs by asset id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

impl From<&PublicationRow> for Publication {
    fn from(p: &PublicationRow) -> Publication {
        Publication {
            id: p.id.clone(),
            deck_id: p.deck_id.clone(),
            revision_id: p.revision_id.clone(),
            status: p.status,
            created_at: p.created_at,
            revoked_at: p.revoked_at,
            url: None,
            content: None,
        }
    }
}

/// `unpublish`.
#[derive(Serialize, JsonSchema)]
pub struct Unpublished {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub deck_id: String,
    /// Always `revoked`.
    pub status: PublicationStatus,
    pub revoked_publications: Vec<String>,
}

/// `present`: the current revision as audience content.
#[derive(Serialize, JsonSchema)]
pub struct Presentation {
    #[schemars(extend("format" = "uuid"))]
    pub deck_id: String,
    pub version: i64,
    #[schemars(extend("format" = "uuid"))]
    pub revision_id: String,
    /// The deck without notes or hidden slides, and `images`, short-lived URLs by asset id.
    pub content: Value,
}

/// An image asset of a deck. `assets/create` adds where and how to upload it; a read of
/// a `ready` asset adds a short-lived `url`.
#[derive(Serialize, JsonSchema)]
pub struct Asset {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub deck_id: String,
    pub file: String,
    #[serde(rename = "type")]
    pub mime: String,
    pub size: i64,
    pub sha256: String,
    pub status: plinth_vocab::AssetStatus,
    pub reason: Option<String>,
    pub format: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_url: Option<String>,
    /// `PUT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_method: Option<&'static str>,
    /// Headers the upload must send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_headers: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_expires_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_expires_at: Option<DateTime<Utc>>,
}

impl From<&AssetRow> for Asset {
    fn from(a: &AssetRow) -> Asset {
        Asset {
            id: a.id.clone(),
            deck_id: a.deck_id.clone(),
            file: a.file.clone(),
            mime: a.mime.clone(),
            size: a.size,
            sha256: a.sha256.clone(),
            status: a.status,
            reason: a.reason.clone(),
            format: a.format.clone(),
            width: a.width,
            height: a.height,
            created_at: a.created_at,
            updated_at: a.updated_at,
            upload_url: None,
            upload_method: None,
            upload_headers: None,
            upload_expires_at: None,
            url: None,
            url_expires_at: None,
        }
    }
}

/// `assets/delete`.
#[derive(Serialize, JsonSchema)]
pub struct AssetDeleted {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub deleted: True,
}

/// A font family exports draw with.
#[derive(Serialize, JsonSchema)]
pub struct FontFamily {
    pub family: String,
    /// `regular`, `bold`, `italic` faces it has (fallbacks: as found).
    pub styles: Vec<&'static str>,
    /// `text` or `code` for the bundled families, `fallback` for the others.
    #[serde(rename = "use")]
    pub role: &'static str,
    /// `bundled`, `operator` (from `PLINTH_FONTS_DIR`) or `system`.
    pub source: &'static str,
}

impl From<plinth_render::FontFamily> for FontFamily {
    fn from(f: plinth_render::FontFamily) -> FontFamily {
        FontFamily {
            family: f.family,
            styles: f.styles,
            role: f.role,
            source: f.source,
        }
    }
}

/// A template a deck can start from.
#[derive(Serialize, JsonSchema)]
pub struct Template {
    pub name: &'static str,
    pub description: &'static str,
}

/// A slide size in pixels.
#[derive(Serialize, JsonSchema)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

/// The slide sizes by aspect ratio.
#[derive(Serialize, JsonSchema)]
pub struct Aspects {
    #[serde(rename = "16:9")]
    pub wide: Size,
    #[serde(rename = "4:3")]
    pub standard: Size,
}

/// What of Marp's vocabulary a deck may use.
#[derive(Serialize, JsonSchema)]
pub struct MarpSupport {
    /// Marp themes, mapped onto plinth's.
    pub themes: &'static [&'static str],
    pub classes: &'static [&'static str],
}

/// The limits a deck and its assets must keep.
#[derive(Serialize, JsonSchema)]
pub struct SlideLimits {
    pub slides_per_deck: usize,
    pub blocks_per_slide: usize,
    pub text_chars: usize,
    pub markdown_bytes: usize,
    /// How deep lists and quotes may nest.
    pub nesting: usize,
    pub table_columns: usize,
    pub table_cells: usize,
    pub asset_bytes: u64,
    pub image_pixels: u64,
    /// How long an artifact's download URL lives.
    pub artifact_url_seconds: u64,
    /// How long an asset's upload URL lives.
    pub upload_url_seconds: u64,
}

/// `slides/capabilities`: what a deck may contain and what exports make of it.
#[derive(Serialize, JsonSchema)]
pub struct Capabilities {
    pub sources: &'static [&'static str],
    pub formats: &'static [plinth_vocab::ExportFormat],
    /// The bundled families, then the fallbacks found on this server (the operator's
    /// `PLINTH_FONTS_DIR` first, then the system's), in the order they are tried.
    pub fonts: Vec<FontFamily>,
    pub themes: &'static [&'static str],
    pub layouts: &'static [&'static str],
    pub blocks: &'static [&'static str],
    pub operations: &'static [&'static str],
    pub templates: Vec<Template>,
    pub image_types: Vec<&'static str>,
    /// The size of a 16:9 slide's PNG.
    pub png: Size,
    pub aspects: Aspects,
    pub marp: MarpSupport,
    pub limits: SlideLimits,
    /// Where the format is described.
    pub docs: &'static str,
}
