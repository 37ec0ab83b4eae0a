//! Completion callbacks (docs/api.md, "Completion callbacks"): the URL and address rules
//! and the signing secrets. When an export with a `callback_url` ends, a delivery task is
//! queued with the end (`db::slides`); a worker (`jobs::callbacks`) builds the event from
//! the job as it is then, signs it as Stripe signs webhooks (`Plinth-Signature: t=<unix>,v1=<hex
//! HMAC-SHA256 of "<t>.<body>">`) with the job's owner's secret, and POSTs it. Anything
//! but a 2xx is a failed attempt, retried after the callback back-off with the same event
//! id (at least once; receivers drop repeats by `id`); a 410 ends the retries.
//!
//! Callback URLs must be http or https; an address on the loopback, a private network,
//! link-local or the like is refused (at `exports/create` and again, after the name is
//! resolved, at each delivery, which then connects only to the address it checked)
//! unless `PLINTH_CALLBACK_PRIVATE_NETWORKS` allows it.

use std::net::IpAddr;

use crate::crypto::MasterKey;
use crate::db::Db;

/// The longest callback URL.
const MAX_URL: usize = 2048;

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "plinth-signature";

/// Whether an address is one a callback must not reach by default: loopback, private,
/// link-local, shared (CGNAT), unspecified, multicast, broadcast, documentation,
/// benchmarking and reserved ranges, and IPv6's equivalents. An IPv6 address that
/// carries an IPv4 one (mapped, NAT64, 6to4, Teredo) counts as that address, since the
/// network routes it there (security review N-L2).
pub fn internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || (o[0] == 100 && (64..128).contains(&o[1])) // shared address space
                || o[0] == 0
                || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
                || o[0] >= 240 // reserved
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || (first & 0xffc0) == 0xfec0 // site-local (deprecated, still routed)
                || (first == 0x2001 && v6.segments()[1] == 0x0db8) // documentation
        }
    }
}

/// The IPv4 address an IPv6 one stands for: IPv4-mapped (`::ffff:a.b.c.d`), NAT64
/// (`64:ff9b::/96`, `64:ff9b:1::/48`), 6to4 (`2002:AABB:CCDD::/48`) and Teredo
/// (`2001:0::/32`, client address inverted in the last 32 bits).
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    use std::net::Ipv4Addr;
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let low = |a: u16, b: u16| Ipv4Addr::new((a >> 8) as u8, a as u8, (b >> 8) as u8, b as u8);
    match s {
        [0x64, 0xff9b, 0, 0, 0, 0, a, b] => Some(low(a, b)),
        [0x64, 0xff9b, 1, ..] => Some(low(s[6], s[7])),
        [0x2002, a, b, ..] => Some(low(a, b)),
        [0x2001, 0, ..] => Some(low(!s[6], !s[7])),
        _ => None,
    }
}

/// Why a callback URL is not taken; the text is the message the client reads.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadCallback {
    /// Not an http(s) URL this server could call (a 400).
    #[error("{0}")]
    Invalid(String),
    /// A well-formed URL of a loopback or private address, which this server's policy
    /// refuses (a 403: the request is valid, the destination is not allowed).
    #[error(
        "`callback_url` points at a loopback or private address; this server does not call \
         those (PLINTH_CALLBACK_PRIVATE_NETWORKS)"
    )]
    Internal,
}

/// A callback URL as a client gives it: http(s), a host, at most 2048 characters, no
/// credentials; an internal IP literal only when allowed.
pub fn check_url(text: &str, private_ok: bool) -> Result<reqwest::Url, BadCallback> {
    check_shape(text).and_then(|(url, literal)| match literal {
        Some(ip) if internal(ip) && !private_ok => Err(BadCallback::Internal),
        _ => Ok(url),
    })
}

/// The URL and, when its host is an IP literal (or `localhost`), that address.
fn check_shape(text: &str) -> Result<(reqwest::Url, Option<IpAddr>), BadCallback> {
    let bad = |m: String| BadCallback::Invalid(m);
    let text = text.trim();
    if text.is_empty() || text.len() > MAX_URL {
        return Err(bad(format!(
            "`callback_url` must be an http or https URL of at most {MAX_URL} characters"
        )));
    }
    let url =
        reqwest::Url::parse(text).map_err(|e| bad(format!("`callback_url` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("`callback_url` must be an http or https URL".into()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("`callback_url` may not carry credentials".into()));
    }
    let host = match url.host_str() {
        Some(h) if !h.is_empty() => h,
        _ => return Err(bad("`callback_url` needs a host".into())),
    };
    let literal = if host.eq_ignore_ascii_case("localhost") {
        Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    } else {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok()
    };
    Ok((url, literal))
}

fn new_secret() -> String {
    format!("whsec_{}", hex::encode(crate::crypto::random_bytes::<32>()))
}

/// The longest a replaced secret stays valid after a rotation (as Stripe's rolled
/// webhook secrets).
pub const MAX_OVERLAP_HOURS: i64 = 24;

/// An account's signing secrets, decrypted.
pub struct Signing {
    pub secret: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// The secret the last rotation replaced and until when it still signs, while it does.
    pub previous: Option<(String, chrono::DateTime<chrono::Utc>)>,
}

impl Signing {
    /// The secrets an event is signed with now: the current one first.
    pub fn keys(&self) -> Vec<&str> {
        std::iter::once(self.secret.as_str())
            .chain(self.previous.as_ref().map(|(s, _)| s.as_str()))
            .collect()
    }
}

/// The account's callback secrets (the current one made on first use).
pub async fn secret(db: &Db, key: &MasterKey, user_id: &str) -> anyhow::Result<Signing> {
    let stored = match crate::db::callbacks::secret(db, user_id).await? {
        Some(s) => s,
        None => {
            let fresh = key.encrypt(new_secret().as_bytes());
            crate::db::callbacks::secret_or_insert(db, user_id, &fresh).await?
        }
    };
    signing(key, stored)
}

/// Replaces the account's secret: events signed from now on use the new one, and also
/// the replaced one for `overlap_hours` (0 to [`MAX_OVERLAP_HOURS`]; 0 ends it at once,
/// as after a leak).
pub async fn rotate(
    db: &Db,
    key: &MasterKey,
    user_id: &str,
    overlap_hours: i64,
) -> anyhow::Result<Signing> {
    let hours = overlap_hours.clamp(0, MAX_OVERLAP_HOURS);
    let keep_until = (hours > 0).then(|| chrono::Utc::now() + chrono::TimeDelta::hours(hours));
    let fresh = key.encrypt(new_secret().as_bytes());
    let stored = crate::db::callbacks::replace(db, user_id, &fresh, keep_until).await?;
    signing(key, stored)
}

fn signing(key: &MasterKey, stored: crate::db::callbacks::Secrets) -> anyhow::Result<Signing> {
    let open = |sealed: &str| {
        key.decrypt(sealed)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| anyhow::anyhow!("a callback secret does not decrypt"))
    };
    let previous = match (stored.previous_secret, stored.previous_expires_at) {
        (Some(sealed), Some(until)) if until > chrono::Utc::now() => Some((open(&sealed)?, until)),
        _ => None,
    };
    Ok(Signing {
        secret: open(&stored.secret)?,
        created_at: stored.created_at,
        previous,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"] {
            assert!(!internal(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn callback_urls_are_checked() {
        assert!(check_url("https://hooks.example.com/plinth?t=1", false).is_ok());
        assert!(check_url("http://127.0.0.1:9000/cb", true).is_ok());
        for bad in [
            "",
            "ftp://example.com/x",
            "https://user:pw@example.com/",
            "http://127.0.0.1:9000/cb",
            "http://localhost/cb",
            "http://[::1]/cb",
            "http://169.254.169.254/latest",
            "not a url",
        ] {
            assert!(check_url(bad, false).is_err(), "{bad}");
        }
        // A private destination is a policy refusal (403), not a malformed URL (400).
        for private in [
            "http://127.0.0.1:9000/cb",
            "http://localhost/cb",
            "http://0/",
        ] {
            assert_eq!(
                check_url(private, false).unwrap_err(),
                BadCallback::Internal
            );
        }
        assert!(matches!(
            check_url("not a url", false),
            Err(BadCallback::Invalid(_))
        ));
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL));
        assert!(check_url(&long, true).is_err());
    }
}
