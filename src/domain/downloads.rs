//! Download-link rules shared by the handlers and the expiry work.

/// How long a redeemed link's storage URL works; also the grace window after a link's
/// last allowed download before its clone is deleted ("burn after reading": the last
/// URL handed out still works until it expires, then the clone goes).
pub const URL_TTL: std::time::Duration = std::time::Duration::from_secs(300);
