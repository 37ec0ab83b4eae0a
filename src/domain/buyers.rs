//! Who may buy as a guest: an organization that takes guest checkouts (the extractors
//! that find a buyer are `crate::http::auth`'s).

/// Whether the organization's `data.guest_checkout_enabled` is true (checked at every
/// guest request: turning it off stops live sessions too).
pub fn takes_guests(org: &crate::db::organizations::OrgRow) -> bool {
    org.data.0.get("guest_checkout_enabled") == Some(&serde_json::Value::Bool(true))
}
