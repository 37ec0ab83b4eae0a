//! Google Cloud Storage V4 signed URLs (`POST /api/data/generate-presigned-url-gcs`), the
//! second upload provider: `PLINTH_GCS_BUCKET` plus a service-account key
//! (`PLINTH_GCS_CREDENTIALS`, the JSON file Google issues); `PLINTH_GCS_ENDPOINT` points it
//! at another host (an emulator). Signing follows Google's V4 process (canonical request,
//! string to sign, RSA-SHA256 with the service account's key) and is checked against
//! Google's published conformance vectors (`fixtures/gcs/`, tests below).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::DecodePrivateKey;
use rsa::sha2::{Digest, Sha256};
use rsa::signature::{SignatureEncoding, Signer};

/// The configuration variables, named in the 503 of an unconfigured provider.
pub const VARIABLES: &str = "PLINTH_GCS_BUCKET and PLINTH_GCS_CREDENTIALS";

pub struct Gcs {
    pub bucket: String,
    email: String,
    key: SigningKey<Sha256>,
    /// `https`, or `http` for an emulator.
    scheme: String,
    /// Host (and port) of URLs.
    host: String,
}

#[derive(serde::Deserialize)]
struct ServiceAccount {
    client_email: String,
    private_key: String,
}

/// One request to sign.
pub struct Request<'a> {
    pub method: &'a str,
    /// `bucket/object` (path style), or what the vector says.
    pub path: &'a str,
    /// The `host` header value.
    pub host: &'a str,
    pub headers: &'a BTreeMap<String, String>,
    pub query: &'a BTreeMap<String, String>,
    pub at: DateTime<Utc>,
    pub expires_secs: u64,
}

/// What signing produced (the parts are kept for the conformance tests).
pub struct Signed {
    pub canonical_request: String,
    pub string_to_sign: String,
    /// The query string of the URL, signature included.
    pub query: String,
}

/// RFC 3986 percent-encoding: everything but unreserved characters (and `/` when
/// `keep_slash`).
fn encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A header value as signed: trimmed, inner runs of whitespace collapsed to one space.
fn canonical_value(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Gcs {
    /// The provider, or `None` when it is not configured.
    pub fn from_config(config: &crate::config::Storage) -> anyhow::Result<Option<Gcs>> {
        let (Some(bucket), Some(creds)) = (&config.gcs_bucket, &config.gcs_credentials) else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(creds)
            .map_err(|e| anyhow::anyhow!("PLINTH_GCS_CREDENTIALS {}: {e}", creds.display()))?;
        let endpoint = config
            .gcs_endpoint
            .as_deref()
            .unwrap_or("https://storage.googleapis.com");
        Ok(Some(Gcs::new(bucket, &text, endpoint)?))
    }

    pub fn new(bucket: &str, service_account_json: &str, endpoint: &str) -> anyhow::Result<Gcs> {
        let sa: ServiceAccount = serde_json::from_str(service_account_json)
            .map_err(|e| anyhow::anyhow!("service account key: {e}"))?;
        let key = rsa::RsaPrivateKey::from_pkcs8_pem(&sa.private_key)
            .map_err(|e| anyhow::anyhow!("service account private key: {e}"))?;
        let (scheme, host) = match endpoint.split_once("://") {
            Some((s, h)) => (s.to_owned(), h.trim_end_matches('/').to_owned()),
            None => (
                "https".to_owned(),
                endpoint.trim_end_matches('/').to_owned(),
            ),
        };
        Ok(Gcs {
            bucket: bucket.to_owned(),
            email: sa.client_email,
            key: SigningKey::<Sha256>::new(key),
            scheme,
            host,
        })
    }

    /// Signs one request (V4, `GOOG4-RSA-SHA256`).
    pub fn sign(&self, r: &Request<'_>) -> Signed {
        let date = r.at.format("%Y%m%d").to_string();
        let stamp = r.at.format("%Y%m%dT%H%M%SZ").to_string();
        let scope = format!("{date}/auto/storage/goog4_request");
        let mut headers: BTreeMap<String, String> = r
            .headers
            .iter()
            .map(|(k, v)| (k.to_lowercase(), canonical_value(v)))
            .collect();
        headers.insert("host".into(), r.host.to_owned());
        let signed_headers = headers.keys().cloned().collect::<Vec<_>>().join(";");
        let mut query: BTreeMap<String, String> = r.query.clone();
        query.insert("X-Goog-Algorithm".into(), "GOOG4-RSA-SHA256".into());
        query.insert(
            "X-Goog-Credential".into(),
            format!("{}/{scope}", self.email),
        );
        query.insert("X-Goog-Date".into(), stamp.clone());
        query.insert("X-Goog-Expires".into(), r.expires_secs.to_string());
        query.insert("X-Goog-SignedHeaders".into(), signed_headers.clone());
        let mut pairs: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (encode(k, false), encode(v, false)))
            .collect();
        pairs.sort();
        let canonical_query = pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
        let payload = headers
            .get("x-goog-content-sha256")
            .cloned()
            .unwrap_or_else(|| "UNSIGNED-PAYLOAD".into());
        let canonical_request = format!(
            "{}\n/{}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{payload}",
            r.method,
            encode(r.path, true)
        );
        let string_to_sign = format!(
            "GOOG4-RSA-SHA256\n{stamp}\n{scope}\n{}",
            hex::encode(Sha256::digest(canonical_request.as_bytes()))
        );
        let signature = hex::encode(self.key.sign(string_to_sign.as_bytes()).to_bytes());
        Signed {
            canonical_request,
            string_to_sign,
            query: format!("{canonical_query}&X-Goog-Signature={signature}"),
        }
    }

    /// A path-style URL for `method` on `object` of the bucket, valid `ttl`, with
    /// `headers` signed (the client must send them as given).
    pub fn url(
        &self,
        method: &str,
        object: &str,
        headers: &BTreeMap<String, String>,
        ttl: std::time::Duration,
    ) -> String {
        let path = format!("{}/{object}", self.bucket);
        // The host header carries no port (as Google's client libraries sign it).
        let host_header = self.host.split(':').next().unwrap_or(&self.host);
        let signed = self.sign(&Request {
            method,
            path: &path,
            host: host_header,
            headers,
            query: &BTreeMap::new(),
            at: Utc::now(),
            expires_secs: ttl.as_secs().min(604_800),
        });
        format!(
            "{}://{}/{}?{}",
            self.scheme,
            self.host,
            encode(&path, true),
            signed.query
        )
    }
}

#[cfg(test)]
mod tests {
    //! Google's V4 signing conformance vectors (googleapis/conformance-tests,
    //! `storage/v1/v4_signatures.json` and its test service-account key), copied into
    //! `fixtures/gcs/` with their license.
    use super::*;
    use serde_json::Value;

    const VECTORS: &str = include_str!("../../fixtures/gcs/v4_signatures.json");
    const ACCOUNT: &str = include_str!("../../fixtures/gcs/test_service_account.not-a-test.json");

    fn strings(v: &Value) -> BTreeMap<String, String> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn google_v4_signing_conformance_vectors() {
        let vectors: Value = serde_json::from_str(VECTORS).unwrap();
        let gcs = Gcs::new("unused", ACCOUNT, "https://storage.googleapis.com").unwrap();
        let mut checked = 0;
        for t in vectors["signingV4Tests"].as_array().unwrap() {
            let name = t["description"].as_str().unwrap();
            let bucket = t["bucket"].as_str().unwrap();
            let object = t["object"].as_str();
            let style = t["urlStyle"].as_str().unwrap_or("PATH_STYLE");
            // The host a client library signs: a bucket-bound hostname, else the first of
            // hostname, client endpoint, emulator host, else storage.<universe domain>;
            // without a port.
            let base = ["hostname", "clientEndpoint", "emulatorHostname"]
                .iter()
                .find_map(|k| t[*k].as_str())
                .map(|h| h.split("://").last().unwrap().to_owned())
                .unwrap_or_else(|| {
                    format!(
                        "storage.{}",
                        t["universeDomain"].as_str().unwrap_or("googleapis.com")
                    )
                });
            let base = base.split(':').next().unwrap().to_owned();
            let (host, path) = match style {
                "BUCKET_BOUND_HOSTNAME" => (
                    t["bucketBoundHostname"].as_str().unwrap().to_owned(),
                    object.unwrap_or("").to_owned(),
                ),
                // Virtual-hosted URLs sign the object path alone.
                "VIRTUAL_HOSTED_STYLE" => {
                    (format!("{bucket}.{base}"), object.unwrap_or("").to_owned())
                }
                _ => (
                    base,
                    match object {
                        Some(o) => format!("{bucket}/{o}"),
                        None => bucket.to_owned(),
                    },
                ),
            };
            let at = DateTime::parse_from_rfc3339(t["timestamp"].as_str().unwrap())
                .unwrap()
                .with_timezone(&Utc);
            let signed = gcs.sign(&Request {
                method: t["method"].as_str().unwrap(),
                path: &path,
                host: &host,
                headers: &strings(&t["headers"]),
                query: &strings(&t["queryParameters"]),
                at,
                expires_secs: t["expiration"].as_u64().unwrap(),
            });
            // One published vector ("Universe domain with virtual hosted style") lists a
            // canonical request whose hash is not the one in its own string to sign; its
            // string to sign and signature are checked, its canonical request cannot be.
            let expected_canonical = t["expectedCanonicalRequest"].as_str().unwrap();
            let consistent = t["expectedStringToSign"]
                .as_str()
                .unwrap()
                .ends_with(&hex::encode(Sha256::digest(expected_canonical.as_bytes())));
            if consistent {
                assert_eq!(
                    signed.canonical_request, expected_canonical,
                    "{name}: canonical request"
                );
            }
            assert_eq!(
                signed.string_to_sign,
                t["expectedStringToSign"].as_str().unwrap(),
                "{name}: string to sign"
            );
            let expected_url = t["expectedUrl"].as_str().unwrap();
            let expected_query = expected_url.split_once('?').unwrap().1;
            assert_eq!(signed.query, expected_query, "{name}: signature");
            checked += 1;
        }
        assert_eq!(checked, 29);
    }

    #[test]
    fn urls_sign_the_size_header_and_keep_the_port() {
        let gcs = Gcs::new("b", ACCOUNT, "http://localhost:4443").unwrap();
        let mut headers = BTreeMap::new();
        headers.insert(
            "x-goog-content-length-range".to_owned(),
            "0,15728640".to_owned(),
        );
        let url = gcs.url(
            "PUT",
            "orgs/1/a b.txt",
            &headers,
            std::time::Duration::from_secs(900),
        );
        assert!(
            url.starts_with("http://localhost:4443/b/orgs/1/a%20b.txt?"),
            "{url}"
        );
        assert!(
            url.contains("X-Goog-SignedHeaders=host%3Bx-goog-content-length-range"),
            "{url}"
        );
        assert!(url.contains("X-Goog-Expires=900"));
    }
}
