//! The shared vocabulary of plinth's crates: [`text_enum!`] (an enum stored and sent as
//! exactly the text it always was) and the closed sets that cross from the root crate to
//! the workers and the actors: slide export formats and states, asset statuses, image
//! formats, the outcome of a job's run, the role of a process, ledger kinds.
//!
//! The macro names `serde`, `schemars` and `sqlx` at its call site: a crate that uses it
//! depends on the three.

/// An enum of text values: serde (exactly these strings), JSON Schema (`enum`), and
/// sqlx encoding and decoding as `TEXT` on both backends.
#[macro_export]
macro_rules! text_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize,
                 serde::Deserialize, schemars::JsonSchema)]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            #[allow(dead_code)]
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        $crate::text_enum!(@sqlx $name, sqlx::Sqlite, sqlx::sqlite::SqliteValueRef<'r>);
        $crate::text_enum!(@sqlx $name, sqlx::Postgres, sqlx::postgres::PgValueRef<'r>);
    };
    (@sqlx $name:ident, $db:ty, $value:ty) => {
        impl sqlx::Type<$db> for $name {
            fn type_info() -> <$db as sqlx::Database>::TypeInfo {
                <String as sqlx::Type<$db>>::type_info()
            }
            fn compatible(ty: &<$db as sqlx::Database>::TypeInfo) -> bool {
                <String as sqlx::Type<$db>>::compatible(ty)
            }
        }
        impl<'r> sqlx::Decode<'r, $db> for $name {
            fn decode(value: $value) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&str as sqlx::Decode<$db>>::decode(value)?;
                $name::parse(text).ok_or_else(|| {
                    format!("unknown {} `{text}`", stringify!($name)).into()
                })
            }
        }
        impl sqlx::Encode<'_, $db> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <$db as sqlx::Database>::ArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<$db>>::encode_by_ref(&self.as_str(), buf)
            }
        }
    };
}

/// The value a table of accepted spellings gives `text` (trimmed, any case): one table
/// that the parser and the document both read.
pub fn spelled<T: Copy>(table: &[(&str, T)], text: &str) -> Option<T> {
    let text = text.trim().to_lowercase();
    table
        .iter()
        .find(|(spelling, _)| *spelling == text)
        .map(|(_, value)| *value)
}

text_enum! {
    /// What an export writes (`slide_jobs.format` is this, with `+notes` for speaker
    /// notes: see [`Export`]).
    pub enum ExportFormat {
        Html = "html",
        Pdf = "pdf",
        Png = "png",
    }
}

/// An export's format, whether it carries speaker notes and whether its PNGs also come
/// as one zip, stored as one text: `pdf`, `pdf+notes`, `html+notes`, `png+zip`...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Export {
    pub format: ExportFormat,
    pub notes: bool,
    /// The PNGs also as one `deck.zip` (`exports/create` with `zip: true`).
    pub zip: bool,
}

impl Export {
    /// The stored text; the text itself when it names no export.
    pub fn parse(text: &str) -> Result<Export, &str> {
        let mut parts = text.split('+');
        let format = parts.next().and_then(ExportFormat::parse).ok_or(text)?;
        let mut export = Export {
            format,
            notes: false,
            zip: false,
        };
        for part in parts {
            match part {
                "notes" if !export.notes => export.notes = true,
                "zip" if !export.zip => export.zip = true,
                _ => return Err(text),
            }
        }
        Ok(export)
    }
}

impl std::fmt::Display for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.format.as_str())?;
        if self.notes {
            f.write_str("+notes")?;
        }
        if self.zip {
            f.write_str("+zip")?;
        }
        Ok(())
    }
}

text_enum! {
    /// A slide export job as its client reads it (`slide_jobs.status`).
    pub enum ExportStatus {
        Pending = "pending",
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl ExportStatus {
    /// Whether the job has ended (nothing will change it but an operator's retry).
    pub fn ended(self) -> bool {
        matches!(
            self,
            ExportStatus::Succeeded | ExportStatus::Failed | ExportStatus::Cancelled
        )
    }
}

text_enum! {
    /// A slide image asset: uploaded to its URL, checked by the image queue, then usable
    /// or refused.
    pub enum AssetStatus {
        PendingUpload = "pending_upload",
        Validating = "validating",
        Ready = "ready",
        Rejected = "rejected",
    }
}

text_enum! {
    /// The type of a validated image, from its bytes.
    pub enum ImageFormat {
        Png = "png",
        Jpeg = "jpeg",
        Webp = "webp",
        Svg = "svg",
    }
}

impl ImageFormat {
    /// Every spelling a client may use for an image type, any case: the MIME type, the
    /// common misspellings of it, and the short name (a file extension).
    pub const SPELLINGS: &'static [(&'static str, ImageFormat)] = &[
        ("image/png", ImageFormat::Png),
        ("image/jpeg", ImageFormat::Jpeg),
        ("image/webp", ImageFormat::Webp),
        ("image/svg+xml", ImageFormat::Svg),
        ("png", ImageFormat::Png),
        ("jpg", ImageFormat::Jpeg),
        ("jpeg", ImageFormat::Jpeg),
        ("webp", ImageFormat::Webp),
        ("svg", ImageFormat::Svg),
        ("image/jpg", ImageFormat::Jpeg),
        ("image/svg", ImageFormat::Svg),
    ];

    /// The MIME type an image of this format is stored and served with.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Webp => "image/webp",
            ImageFormat::Svg => "image/svg+xml",
        }
    }

    /// The format exactly this MIME type names (lower case, no parameters).
    pub fn of_mime(mime: &str) -> Option<ImageFormat> {
        ImageFormat::ALL.iter().copied().find(|f| f.mime() == mime)
    }

    /// The format any spelling in [`Self::SPELLINGS`] names, in any case.
    pub fn named(text: &str) -> Option<ImageFormat> {
        spelled(Self::SPELLINGS, text)
    }

    /// The MIME types of every format, for messages and capabilities.
    pub fn mimes() -> Vec<&'static str> {
        ImageFormat::ALL.iter().map(|f| f.mime()).collect()
    }
}

text_enum! {
    /// How one run of a job ended (`job_attempts.outcome`).
    pub enum AttemptOutcome {
        Succeeded = "succeeded",
        /// Failed; the job runs again at its `next_at`.
        Retrying = "retrying",
        /// Failed for good: no attempt left, or a failure no attempt can cure.
        Failed = "failed",
        /// Cancelled while it ran (apalis records the job as `Killed`).
        Cancelled = "cancelled",
    }
}

text_enum! {
    /// What a process that runs workers is (`job_processes.role`).
    pub enum ProcessRole {
        /// `plinth serve`: the API, with workers unless `--no-workers`.
        Serve = "serve",
        /// `plinth worker`: workers only.
        Worker = "worker",
    }
}

text_enum! {
    /// A background job as operators and clients see it (`plinth_workers::queue` maps apalis's own
    /// statuses onto these).
    pub enum JobStatus {
        Pending = "pending",
        /// Waiting for its `run_at`.
        Scheduled = "scheduled",
        Running = "running",
        /// Failed an attempt; the next is at `next_attempt_at`.
        Retrying = "retrying",
        Succeeded = "succeeded",
        /// Out of attempts.
        Failed = "failed",
        Cancelled = "cancelled",
        /// An apalis status this version does not know.
        Unknown = "unknown",
    }
}

text_enum! {
    /// Why a credit account's balance moved (a ledger row's `kind`).
    pub enum LedgerKind {
        /// A metered call's cost.
        Usage = "usage",
        /// A metered call's cost given back (the call failed on the server's side).
        UsageRefund = "usage_refund",
        Deduct = "deduct",
        Bonus = "bonus",
        Monthly = "monthly",
        TransferOut = "transfer_out",
        TransferIn = "transfer_in",
        VendorDistribution = "vendor_distribution",
        /// An app store purchase credited.
        StorePurchase = "store_purchase",
        /// A marketplace order paid in tokens.
        Purchase = "purchase",
        /// An order's tokens given back.
        Refund = "refund",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_is_stored_as_it_always_was() {
        for text in [
            "pdf",
            "png",
            "html",
            "pdf+notes",
            "html+notes",
            "png+notes",
            "png+zip",
        ] {
            assert_eq!(Export::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            Export::parse("pdf+notes"),
            Ok(Export {
                format: ExportFormat::Pdf,
                notes: true,
                zip: false,
            })
        );
        assert_eq!(Export::parse("png+zip").map(|e| e.zip), Ok(true));
        assert_eq!(Export::parse("png+zip+zip"), Err("png+zip+zip"));
        assert_eq!(Export::parse("svg"), Err("svg"));
        assert_eq!(Export::parse("pdf+x"), Err("pdf+x"));
        assert_eq!(
            serde_json::to_string(&AttemptOutcome::Retrying).unwrap(),
            "\"retrying\""
        );
    }
}
