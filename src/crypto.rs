//! Secrets at rest: sha256 for lookup, AES-256-CTR where the plaintext must be shown
//! again, argon2 for passwords, constant-time comparison everywhere a secret is compared.
//! Token-exchange grants (`GrantKey`) are encrypt-then-MAC: AES-256-CTR plus
//! HMAC-SHA256, under keys derived from `PLINTH_AUTH_TOKEN_KEY` (never the master key).

use std::path::Path;

use aes::Aes256;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

type Aes256Ctr = ctr::Ctr128BE<Aes256>;

/// The AES-256 key for data encrypted at rest.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl MasterKey {
    /// A key for one purpose (`label`), derived with HMAC-SHA256, so that the master key
    /// itself never signs anything else.
    pub fn subkey(&self, label: &[u8]) -> [u8; 32] {
        hmac_sha256(&self.0, label)
    }

    pub fn from_hex(s: &str) -> anyhow::Result<Self> {
        let bytes = hex::decode(s.trim())?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| anyhow::anyhow!("master key must be 64 hex characters (32 bytes)"))?;
        Ok(Self(key))
    }

    pub fn generate() -> Self {
        Self(random_bytes())
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Constant-time equality of two keys (the token-exchange key must differ from the
    /// master key).
    pub fn same_as(&self, other: &MasterKey) -> bool {
        ct_eq(&self.0, &other.0)
    }

    /// A short public fingerprint (sha256 of a derived value, never of the key itself).
    pub fn fingerprint(&self) -> String {
        sha256_hex(&hmac_sha256(&self.0, b"plinth key fingerprint v1"))[..16].to_owned()
    }

    /// HMAC-SHA256(key, "plinth-master-key-check") in hex: what the database keeps to
    /// refuse a process started with another key (it reveals nothing of the key).
    pub fn check_value(&self) -> String {
        hex::encode(hmac_sha256(&self.0, b"plinth-master-key-check"))
    }

    /// The key kept in the file at `path`, generated into it (mode 0600) when there is
    /// none; `true` when generated. Processes starting together on one data dir race to
    /// create it: the key is written under a temporary name and linked into place, so no
    /// process reads a half-written file, and the loser reads the winner's key.
    pub fn load_or_create(path: &Path) -> anyhow::Result<(Self, bool)> {
        use anyhow::Context;
        for _ in 0..40 {
            match std::fs::read_to_string(path) {
                // Shorter than a key: a file still being written in place (by an older
                // plinth); wait for the rest.
                Ok(text) if text.trim().len() < 64 => {}
                Ok(text) => {
                    let key = Self::from_hex(&text).with_context(|| path.display().to_string())?;
                    return Ok((key, false));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let key = Self::generate();
                    match create_private(path, &key.to_hex()) {
                        Ok(()) => return Ok((key, true)),
                        // Another process created it first: read its key.
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                        Err(e) => {
                            return Err(e).with_context(|| format!("creating {}", path.display()))
                        }
                    }
                }
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        anyhow::bail!(
            "{} stays shorter than a master key (64 hex characters)",
            path.display()
        )
    }

    /// hex(iv || ciphertext), with a fresh random IV per message.
    pub fn encrypt(&self, plaintext: &[u8]) -> String {
        let iv: [u8; 16] = random_bytes();
        let mut buf = plaintext.to_vec();
        Aes256Ctr::new(&self.0.into(), &iv.into()).apply_keystream(&mut buf);
        let mut out = iv.to_vec();
        out.extend_from_slice(&buf);
        hex::encode(out)
    }

    /// Inverse of [`encrypt`](Self::encrypt). `None` for anything that is not hex or is
    /// shorter than an IV; CTR has no integrity, so callers check what they decrypted.
    pub fn decrypt(&self, hex_text: &str) -> Option<Vec<u8>> {
        let raw = hex::decode(hex_text.trim()).ok()?;
        if raw.len() < 16 {
            return None;
        }
        let (iv, body) = raw.split_at(16);
        let iv: [u8; 16] = iv.try_into().ok()?;
        let mut buf = body.to_vec();
        Aes256Ctr::new(&self.0.into(), &iv.into()).apply_keystream(&mut buf);
        Some(buf)
    }
}

/// Creates `path` holding `text`, readable by the owner only; `AlreadyExists` when the
/// file exists. The text is complete before the file appears under its name (a hard link
/// of a finished temporary file), unless the file system has no hard links.
fn create_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let open_new = |p: &Path| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        opts.open(p)
    };
    let tmp = path.with_extension(format!("{}.tmp", hex::encode(random_bytes::<8>())));
    let linked = open_new(&tmp)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            let mut f = open_new(path)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()
        }
        other => other,
    }
}

pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Length of a grant's authentication tag (HMAC-SHA256).
pub const GRANT_TAG_LEN: usize = 32;

/// Key of token-exchange grants. Two keys are derived from the configured secret with
/// HMAC-SHA256 (labels `plinth grant enc v1` and `plinth grant mac v1`), so the cipher
/// key is never used as a MAC key. A sealed grant is `hex(iv || ct || tag)` with a
/// random 16-byte IV, AES-256-CTR, and `tag = HMAC-SHA256(mac_key, iv || ct)`: any
/// changed byte fails the tag check before anything is decrypted (docs/api.md).
#[derive(Clone)]
pub struct GrantKey {
    enc: [u8; 32],
    mac: [u8; 32],
}

impl GrantKey {
    pub fn new(secret: &MasterKey) -> Self {
        Self {
            enc: hmac_sha256(&secret.0, b"plinth grant enc v1"),
            mac: hmac_sha256(&secret.0, b"plinth grant mac v1"),
        }
    }

    pub fn seal(&self, plaintext: &[u8]) -> String {
        let iv: [u8; 16] = random_bytes();
        let mut out = iv.to_vec();
        let mut body = plaintext.to_vec();
        Aes256Ctr::new(&self.enc.into(), &iv.into()).apply_keystream(&mut body);
        out.extend_from_slice(&body);
        let tag = hmac_sha256(&self.mac, &out);
        out.extend_from_slice(&tag);
        hex::encode(out)
    }

    /// The plaintext of a grant whose tag verifies; `None` for anything else.
    pub fn open(&self, hex_text: &str) -> Option<Vec<u8>> {
        let raw = hex::decode(hex_text.trim()).ok()?;
        if raw.len() < 16 + GRANT_TAG_LEN {
            return None;
        }
        let (signed, tag) = raw.split_at(raw.len() - GRANT_TAG_LEN);
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.mac).expect("HMAC takes any key");
        mac.update(signed);
        // `verify_slice` compares in constant time.
        mac.verify_slice(tag).ok()?;
        let (iv, body) = signed.split_at(16);
        let iv: [u8; 16] = iv.try_into().ok()?;
        let mut buf = body.to_vec();
        Aes256Ctr::new(&self.enc.into(), &iv.into()).apply_keystream(&mut buf);
        Some(buf)
    }
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    rand::rng().fill_bytes(&mut b);
    b
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// API keys: `pk_` and 48 hex characters (192 random bits).
pub fn new_api_key() -> String {
    format!("pk_{}", hex::encode(random_bytes::<24>()))
}

/// One-time codes sent by email (verification, password reset): 32 hex characters.
pub fn new_code() -> String {
    hex::encode(random_bytes::<16>())
}

pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

/// argon2id with the crate's default parameters. CPU-heavy: call from `spawn_blocking`.
pub fn hash_password(password: &str) -> String {
    let salt = SaltString::encode_b64(&random_bytes::<16>()).expect("16 bytes is a valid salt");
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 with default params cannot fail")
        .to_string()
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_round_trip_and_fresh_iv() {
        let k = MasterKey::generate();
        let a = k.encrypt(b"hello");
        let b = k.encrypt(b"hello");
        assert_ne!(a, b);
        assert_eq!(k.decrypt(&a).unwrap(), b"hello");
        assert!(k.decrypt("zz").is_none());
        assert!(k.decrypt("00").is_none());
    }

    #[test]
    fn grants_are_authenticated() {
        let k = GrantKey::new(&MasterKey::generate());
        let sealed = k.seal(br#"{"email":"a@b.example","exp":1}"#);
        assert_eq!(
            k.open(&sealed).unwrap(),
            br#"{"email":"a@b.example","exp":1}"#
        );
        // Every single flipped bit anywhere (IV, body, tag) is refused.
        let raw = hex::decode(&sealed).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 1;
            assert!(k.open(&hex::encode(bad)).is_none(), "byte {i}");
        }
        assert!(k.open(&sealed[..sealed.len() - 2]).is_none());
        // Another key refuses it; the derived keys differ from each other.
        assert!(GrantKey::new(&MasterKey::generate())
            .open(&sealed)
            .is_none());
        assert_ne!(k.enc, k.mac);
    }

    #[test]
    fn processes_racing_to_create_the_key_file_all_get_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        let keys: Vec<(String, bool)> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..8)
                .map(|_| s.spawn(|| MasterKey::load_or_create(&path).unwrap()))
                .collect();
            racers
                .into_iter()
                .map(|r| {
                    let (k, generated) = r.join().unwrap();
                    (k.to_hex(), generated)
                })
                .collect()
        });
        assert!(keys.iter().all(|(k, _)| *k == keys[0].0), "{keys:?}");
        assert_eq!(keys.iter().filter(|(_, generated)| *generated).count(), 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), keys[0].0);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let (again, generated) = MasterKey::load_or_create(&path).unwrap();
        assert!(!generated);
        assert_eq!(again.to_hex(), keys[0].0);
        assert_ne!(again.check_value(), MasterKey::generate().check_value());
    }

    #[test]
    fn passwords() {
        let h = hash_password("pw");
        assert!(verify_password("pw", &h));
        assert!(!verify_password("px", &h));
        assert!(!verify_password("pw", "not a hash"));
    }

    #[test]
    fn key_formats() {
        let k = new_api_key();
        assert!(k.starts_with("pk_") && k.len() == 51);
        assert_eq!(new_code().len(), 32);
        assert_eq!(sha256_hex(b"abc").len(), 64);
    }
}
