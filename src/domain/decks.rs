//! Deck rules outside the document format itself (that is `plinth-slides`): limits that
//! the handlers, the image job adapter and the capabilities answer share.

/// Largest image upload.
pub const MAX_ASSET_BYTES: u64 = 10 * 1024 * 1024;
