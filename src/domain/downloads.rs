//! Download-link rules shared by the handlers and the expiry work: whose objects a link
//! may copy, and an item's `download_asset`.

use serde_json::Value;

use super::Invalid;

/// Why a link's source or an item's `download_asset` is refused.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A valid key, but not one of the organization's own objects (a 403).
    #[error(
        "`{field}` must name one of the organization's own objects: under \
         catalog/{org_id}/ (upload with data/generate-presigned-url and \
         `purpose: \"catalog\"`) or orgs/{org_id}/uploads/"
    )]
    NotOwn { field: String, org_id: String },
}

/// How long a redeemed link's storage URL works; also the grace window after a link's
/// last allowed download before its clone is deleted ("burn after reading": the last
/// URL handed out still works until it expires, then the clone goes). One minute: long
/// enough to start the download, short enough that a redeemed URL passed around after
/// the counter ran out stops working soon (security round 2, L1).
pub const URL_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// Defaults when neither the request nor the item's `download_asset` says.
pub const DEFAULT_MAX_DOWNLOADS: i64 = 5;
pub const DEFAULT_EXPIRES_IN: i64 = 7 * 24 * 3600;
pub const MAX_EXPIRES_IN: i64 = 365 * 24 * 3600;

/// Whether `key` is one of the organization's own objects: its catalog
/// (`catalog/<organization id>/`, where `data/generate-presigned-url` with
/// `purpose: "catalog"` uploads) or its uploads (`orgs/<organization id>/uploads/`).
/// Links and purchases copy only these (security round 2, H2: any key written into an
/// item once let its link copy another seller's file).
pub fn owned_by(org_id: &str, key: &str) -> bool {
    key.strip_prefix("catalog/")
        .or_else(|| key.strip_prefix("orgs/"))
        .and_then(|rest| rest.strip_prefix(org_id))
        .is_some_and(|rest| {
            rest.starts_with('/') && (key.starts_with("catalog/") || rest.starts_with("/uploads/"))
        })
}

/// A source key as given (trimmed, without a leading `/`), if it is a valid key of one of
/// the organization's own objects: 400 when it is not a valid key, 403 when it is not
/// the organization's.
pub fn own_source(org_id: &str, field: &str, raw: &str) -> Result<String, SourceError> {
    let key = raw.trim().trim_start_matches('/').to_owned();
    if !crate::adapters::storage::valid_key(&key) {
        return Err(Invalid(format!("`{field}` is not a valid object key")).into());
    }
    if !owned_by(org_id, &key) {
        return Err(SourceError::NotOwn {
            field: field.to_owned(),
            org_id: org_id.to_owned(),
        });
    }
    Ok(key)
}

/// `n` when it lies in `range`; 400 naming `field` otherwise.
pub fn bounded(
    field: &str,
    v: Option<i64>,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, Invalid> {
    match v {
        Some(n) if !range.contains(&n) => Err(Invalid(format!(
            "`{field}` must be {} to {}",
            range.start(),
            range.end()
        ))),
        other => Ok(other),
    }
}

/// An inventory item's `data.download_asset` (`{key, bucket?, file_name, mime_type,
/// max_downloads?, expires_in_seconds?}`), read and checked in one place: when the item
/// is written and again when a link is minted from it.
#[derive(Debug, Default)]
pub struct DownloadAsset {
    /// Always one of the organization's own keys ([`own_source`]).
    pub key: Option<String>,
    pub file_name: Option<String>,
    pub mime_type: Option<String>,
    pub max_downloads: Option<i64>,
    pub expires_in_seconds: Option<i64>,
}

impl DownloadAsset {
    /// The asset of an item's `data`, `None` when it has none; 400 when it names a bucket
    /// or a limit is out of range, 403 when its key is not the organization's.
    pub fn of(org_id: &str, data: &Value) -> Result<Option<DownloadAsset>, SourceError> {
        let Some(asset) = data.get("download_asset").filter(|a| !a.is_null()) else {
            return Ok(None);
        };
        if !asset.is_object() {
            return Err(Invalid::new(
                "`data.download_asset` must be an object {key, file_name, mime_type, ...}",
            )
            .into());
        }
        if asset.get("bucket").is_some_and(|v| !v.is_null()) {
            return Err(Invalid::new(
                "the item's `download_asset.bucket` cannot be used: links read from the \
                 configured object store",
            )
            .into());
        }
        let text = |k: &str| asset.get(k).and_then(Value::as_str).map(str::to_owned);
        let number = |k: &str| asset.get(k).and_then(Value::as_i64);
        let key = text("key")
            .map(|k| own_source(org_id, "download_asset.key", &k))
            .transpose()?;
        Ok(Some(DownloadAsset {
            key,
            file_name: text("file_name"),
            mime_type: text("mime_type"),
            max_downloads: bounded("max_downloads", number("max_downloads"), 1..=1000)?,
            expires_in_seconds: bounded(
                "expires_in_seconds",
                number("expires_in_seconds"),
                60..=MAX_EXPIRES_IN,
            )?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_organizations_own_prefixes_are_owned() {
        let org = "o1";
        for (key, owned) in [
            ("catalog/o1/product.zip", true),
            ("catalog/o1/a/b.zip", true),
            ("orgs/o1/uploads/u/p.zip", true),
            ("catalog/o10/product.zip", false),
            ("catalog/o1", false),
            ("orgs/o1/other/p.zip", false),
            ("orgs/o2/uploads/u/p.zip", false),
            ("clones/x.zip", false),
            ("decks/o1/x.png", false),
            ("public/catalog/o1/x", false),
        ] {
            assert_eq!(owned_by(org, key), owned, "{key}");
        }
        assert!(own_source(org, "k", " /catalog/o1/x.zip").is_ok());
        assert!(matches!(
            own_source(org, "k", "catalog/o2/x.zip"),
            Err(SourceError::NotOwn { .. })
        ));
        assert!(matches!(
            own_source(org, "k", "catalog/o1/../o2/x"),
            Err(SourceError::Invalid(_))
        ));
    }
}
