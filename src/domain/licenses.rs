//! License keys: their shape (five groups of five Crockford base32 characters, the
//! first two led by the deployment's 3-character brand prefix, 19 random characters:
//! 95 bits), and the outcome codes of a validation.

use serde_json::Value;

use crate::domain::Invalid;
use crate::states::LicenseStatus;

/// What an inventory item's `data` says of the licenses sold with it; each optional.
#[derive(Debug, Default)]
pub struct Terms {
    /// `license_product_id`: what the key unlocks; an item without it is not licensed.
    pub product_id: Option<String>,
    /// `license_activations_allowed`: machines per key.
    pub activations_allowed: Option<i64>,
    /// `license_duration_seconds`: how long a key lasts from its minting.
    pub duration_seconds: Option<i64>,
}

/// An item's license terms; 400 when a number is malformed.
pub fn terms(data: &Value) -> Result<Terms, Invalid> {
    let number = |k: &str| -> Result<Option<i64>, Invalid> {
        match data.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_i64().filter(|n| *n >= 1).map(Some).ok_or_else(|| {
                Invalid(format!(
                    "the item's `data.{k}` must be a whole number from 1"
                ))
            }),
        }
    };
    Ok(Terms {
        product_id: data
            .get("license_product_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        activations_allowed: number("license_activations_allowed")?,
        duration_seconds: number("license_duration_seconds")?,
    })
}

/// Crockford's base32 alphabet (no I, L, O, U).
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Whether `prefix` can lead a key: exactly 3 Crockford base32 characters.
pub fn valid_prefix(prefix: &str) -> bool {
    prefix.len() == 3 && prefix.bytes().all(|b| ALPHABET.contains(&b))
}

/// A new key `PPPxx-PPPxx-xxxxx-xxxxx-xxxxx` from 12 random bytes (95 of their bits).
pub fn new_key(prefix: &str, random: [u8; 12]) -> String {
    let bits = u128::from_be_bytes({
        let mut b = [0u8; 16];
        b[4..].copy_from_slice(&random);
        b
    });
    let chars: Vec<char> = (0..19)
        .map(|i| ALPHABET[((bits >> (5 * i)) & 31) as usize] as char)
        .collect();
    let r: String = chars.into_iter().collect();
    format!(
        "{prefix}{}-{prefix}{}-{}-{}-{}",
        &r[0..2],
        &r[2..4],
        &r[4..9],
        &r[9..14],
        &r[14..19]
    )
}

/// A key as typed by a person: trimmed and upper-cased (keys are matched by the hash of
/// this form).
pub fn normalize(key: &str) -> String {
    key.trim().to_ascii_uppercase()
}

/// What a license reads as now: `expired` once its duration has passed.
pub fn status(
    stored: LicenseStatus,
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
) -> LicenseStatus {
    match (stored, expires_at) {
        (LicenseStatus::Active, Some(e)) if e <= chrono::Utc::now() => LicenseStatus::Expired,
        (s, _) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_spec_shape() {
        let k = new_key("PTH", [0xA5; 12]);
        let groups: Vec<&str> = k.split('-').collect();
        assert_eq!(groups.len(), 5);
        assert!(groups.iter().all(|g| g.len() == 5));
        assert!(groups[0].starts_with("PTH") && groups[1].starts_with("PTH"));
        assert!(k.bytes().all(|b| b == b'-' || ALPHABET.contains(&b)));
        assert_ne!(new_key("PTH", [1; 12]), new_key("PTH", [2; 12]));
        assert!(valid_prefix("PTH") && !valid_prefix("PLN") && !valid_prefix("PT"));
        assert_eq!(normalize(" pln12-abc "), "PLN12-ABC");
    }
}
