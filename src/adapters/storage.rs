//! Object storage shared by slide assets and exports, downloads, files and analytics
//! attachments. Two backends, chosen by configuration:
//! - **local** (default): files under `<data-dir>/objects`, with expiring HMAC-signed
//!   URLs for PUT and GET served by plinth itself (`/objects/{key}`), with the semantics
//!   of presigned URLs: method, expiry, size limit and content type are all signed.
//! - **S3-compatible** via aws-sdk-s3 (`PLINTH_S3_*`): presigned PUT and GET URLs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::config::Storage;
use crate::crypto::MasterKey;

#[derive(Clone)]
pub enum ObjectStore {
    Local(LocalStore),
    S3(S3Store),
}

#[derive(Clone)]
pub struct LocalStore {
    dir: PathBuf,
    secret: Vec<u8>,
    public_url: String,
}

#[derive(Clone)]
pub struct S3Store {
    client: aws_sdk_s3::Client,
    bucket: String,
    endpoint: String,
}

/// Keys are relative paths of `[A-Za-z0-9._-]` segments; nothing that could escape the
/// objects directory or need escaping in a URL.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 512
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        })
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StorageError(pub String);

fn err(e: impl std::fmt::Display) -> StorageError {
    StorageError(e.to_string())
}

impl ObjectStore {
    /// S3 when `PLINTH_S3_BUCKET` is set, else files under `<data-dir>/objects`.
    pub fn from_config(
        config: &Storage,
        data_dir: &std::path::Path,
        key: &MasterKey,
        public_url: &str,
    ) -> anyhow::Result<Self> {
        if let Some(bucket) = &config.s3_bucket {
            let endpoint = config
                .s3_endpoint
                .clone()
                .ok_or_else(|| anyhow::anyhow!("PLINTH_S3_BUCKET needs PLINTH_S3_ENDPOINT"))?;
            let creds = aws_sdk_s3::config::Credentials::new(
                config.s3_access_key_id.clone().unwrap_or_default(),
                config.s3_secret_access_key.clone().unwrap_or_default(),
                None,
                None,
                "plinth",
            );
            let http = aws_smithy_http_client::Builder::new()
                .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                    aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                ))
                .build_https();
            let config = aws_sdk_s3::config::Builder::new()
                .behavior_version_latest()
                .endpoint_url(endpoint.clone())
                .region(aws_sdk_s3::config::Region::new(config.s3_region.clone()))
                .credentials_provider(creds)
                .force_path_style(config.s3_path_style)
                .http_client(http)
                .build();
            return Ok(ObjectStore::S3(S3Store {
                client: aws_sdk_s3::Client::from_conf(config),
                bucket: bucket.clone(),
                endpoint,
            }));
        }
        let dir = data_dir.join("objects");
        std::fs::create_dir_all(&dir)?;
        // A key of its own for URL signatures, derived from the master key.
        let secret = crate::crypto::sha256_hex(format!("objects:{}", key.to_hex()).as_bytes());
        Ok(ObjectStore::Local(LocalStore {
            dir,
            secret: secret.into_bytes(),
            public_url: public_url.to_owned(),
        }))
    }

    pub fn backend(&self) -> &'static str {
        match self {
            ObjectStore::Local(_) => "local",
            ObjectStore::S3(_) => "s3",
        }
    }

    /// Where the objects are (directory or endpoint and bucket), for `GET /api/status`.
    pub fn location(&self) -> String {
        match self {
            ObjectStore::Local(l) => l.dir.display().to_string(),
            ObjectStore::S3(s) => format!("{}/{}", s.endpoint, s.bucket),
        }
    }

    pub async fn healthy(&self) -> bool {
        match self {
            ObjectStore::Local(l) => tokio::fs::create_dir_all(&l.dir).await.is_ok(),
            ObjectStore::S3(s) => s
                .client
                .head_bucket()
                .bucket(&s.bucket)
                .send()
                .await
                .is_ok(),
        }
    }

    pub async fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<(), StorageError> {
        if !valid_key(key) {
            return Err(StorageError(format!("invalid object key `{key}`")));
        }
        match self {
            ObjectStore::Local(l) => l.write(key, &bytes).await,
            ObjectStore::S3(s) => s
                .client
                .put_object()
                .bucket(&s.bucket)
                .key(key)
                .content_type(content_type)
                .body(ByteStream::from(bytes))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| err(aws_sdk_s3::error::DisplayErrorContext(e))),
        }
    }

    /// Stores a file's contents as an object (an upload spooled to disk), streaming it:
    /// never the whole file in memory.
    pub async fn put_file(
        &self,
        key: &str,
        file: &std::path::Path,
        content_type: &str,
    ) -> Result<(), StorageError> {
        if !valid_key(key) {
            return Err(StorageError(format!("invalid object key `{key}`")));
        }
        match self {
            ObjectStore::Local(l) => l.copy_in(key, file).await,
            ObjectStore::S3(s) => {
                let body = ByteStream::from_path(file).await.map_err(err)?;
                s.client
                    .put_object()
                    .bucket(&s.bucket)
                    .key(key)
                    .content_type(content_type)
                    .body(body)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| err(aws_sdk_s3::error::DisplayErrorContext(e)))
            }
        }
    }

    /// `None` when there is no such object.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match self.get_limited(key, u64::MAX).await? {
            Fetched::Missing => Ok(None),
            Fetched::Bytes(b) => Ok(Some(b)),
            Fetched::TooLarge { size } => Err(StorageError(format!("object of {size} bytes"))),
        }
    }

    /// The object if it is at most `max` bytes. The size is known before the body is
    /// read (file metadata; S3's Content-Length) and the read stops at `max` whatever
    /// the header said, so an oversized upload never lands in memory (M7).
    pub async fn get_limited(&self, key: &str, max: u64) -> Result<Fetched, StorageError> {
        if !valid_key(key) {
            return Ok(Fetched::Missing);
        }
        match self {
            ObjectStore::Local(l) => {
                let file = match tokio::fs::File::open(l.path(key)).await {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Ok(Fetched::Missing)
                    }
                    Err(e) => return Err(err(e)),
                };
                use tokio::io::AsyncReadExt;
                let size = file.metadata().await.map_err(err)?.len();
                if size > max {
                    return Ok(Fetched::TooLarge { size });
                }
                let mut out = Vec::with_capacity(size as usize);
                file.take(max.saturating_add(1))
                    .read_to_end(&mut out)
                    .await
                    .map_err(err)?;
                Ok(bounded(out, max))
            }
            ObjectStore::S3(s) => {
                match s
                    .client
                    .get_object()
                    .bucket(&s.bucket)
                    .key(key)
                    .send()
                    .await
                {
                    Ok(o) => {
                        let size = o.content_length().unwrap_or(0).max(0) as u64;
                        if size > max {
                            return Ok(Fetched::TooLarge { size });
                        }
                        let mut body = o.body;
                        let mut out = Vec::new();
                        while let Some(chunk) = body.try_next().await.map_err(err)? {
                            if out.len() as u64 + chunk.len() as u64 > max {
                                return Ok(Fetched::TooLarge {
                                    size: out.len() as u64 + chunk.len() as u64,
                                });
                            }
                            out.extend_from_slice(&chunk);
                        }
                        Ok(Fetched::Bytes(out))
                    }
                    Err(e) if e.as_service_error().is_some_and(|se| se.is_no_such_key()) => {
                        Ok(Fetched::Missing)
                    }
                    Err(e) => Err(err(aws_sdk_s3::error::DisplayErrorContext(e))),
                }
            }
        }
    }

    pub async fn delete(&self, key: &str) -> Result<(), StorageError> {
        if !valid_key(key) {
            return Ok(());
        }
        match self {
            ObjectStore::Local(l) => match tokio::fs::remove_file(l.path(key)).await {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(err(e)),
            },
            ObjectStore::S3(s) => s
                .client
                .delete_object()
                .bucket(&s.bucket)
                .key(key)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| err(aws_sdk_s3::error::DisplayErrorContext(e))),
        }
    }

    /// Copies an object inside the store (S3 `CopyObject`, a file copy locally); `false`
    /// when the source does not exist. The copy appears whole or not at all.
    pub async fn copy(&self, from: &str, to: &str) -> Result<bool, StorageError> {
        if !valid_key(from) || !valid_key(to) {
            return Err(StorageError(format!(
                "invalid object key `{from}` or `{to}`"
            )));
        }
        match self {
            ObjectStore::Local(l) => {
                let (src, dst) = (l.path(from), l.path(to));
                if let Some(parent) = dst.parent() {
                    tokio::fs::create_dir_all(parent).await.map_err(err)?;
                }
                let tmp = tmp_path(&dst);
                match tokio::fs::copy(&src, &tmp).await {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                    Err(e) => return Err(err(e)),
                }
                tokio::fs::rename(&tmp, &dst).await.map_err(err)?;
                Ok(true)
            }
            ObjectStore::S3(s) => {
                let copied = s
                    .client
                    .copy_object()
                    .bucket(&s.bucket)
                    .copy_source(format!("{}/{from}", s.bucket))
                    .key(to)
                    .send()
                    .await;
                match copied {
                    Ok(_) => Ok(true),
                    Err(e)
                        if e.raw_response().is_some_and(|r| r.status().as_u16() == 404)
                            || e.as_service_error()
                                .is_some_and(|s| s.meta().code() == Some("NoSuchKey")) =>
                    {
                        Ok(false)
                    }
                    Err(e) => Err(err(aws_sdk_s3::error::DisplayErrorContext(e))),
                }
            }
        }
    }

    /// A URL that accepts a PUT with this content type until it expires. The local
    /// backend signs `max_bytes` and refuses anything larger. S3 presigned PUTs cannot
    /// express a maximum: with `exact` the S3 URL signs `Content-Length: max_bytes`, so S3
    /// refuses any other size; without it callers check what arrived before using it.
    pub async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        max_bytes: u64,
        exact: bool,
        ttl: Duration,
    ) -> Result<String, StorageError> {
        if !valid_key(key) {
            return Err(StorageError(format!("invalid object key `{key}`")));
        }
        match self {
            ObjectStore::Local(l) => Ok(l.signed_url("PUT", key, content_type, max_bytes, ttl, "")),
            ObjectStore::S3(s) => {
                let cfg = PresigningConfig::expires_in(ttl).map_err(err)?;
                let mut put = s
                    .client
                    .put_object()
                    .bucket(&s.bucket)
                    .key(key)
                    .content_type(content_type);
                if exact {
                    put = put.content_length(max_bytes as i64);
                }
                let req = put.presigned(cfg).await.map_err(err)?;
                Ok(req.uri().to_owned())
            }
        }
    }

    /// Where an object under `public/` is read without a signature: the local object
    /// route `/public/...`, or the bucket's path-style URL (the bucket, or its `public/`
    /// prefix, must allow anonymous reads; docs/operations.md).
    pub fn public_url(&self, key: &str) -> String {
        match self {
            ObjectStore::Local(l) => format!("{}/{key}", l.public_url),
            ObjectStore::S3(s) => {
                format!("{}/{}/{key}", s.endpoint.trim_end_matches('/'), s.bucket)
            }
        }
    }

    /// A URL that reads the object until it expires.
    pub async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, StorageError> {
        self.presign_download(key, ttl, None).await
    }

    /// A URL that reads the object until it expires, as a download of `as_file` (its
    /// content type and file name) when given; `application/octet-stream` otherwise.
    /// Always `attachment`: never rendered as a page on the object's origin (finding L4);
    /// an `<img>` still shows it.
    pub async fn presign_download(
        &self,
        key: &str,
        ttl: Duration,
        as_file: Option<(&str, &str)>,
    ) -> Result<String, StorageError> {
        if !valid_key(key) {
            return Err(StorageError(format!("invalid object key `{key}`")));
        }
        let (content_type, name) = as_file
            .map(|(ct, name)| (ct, safe_file_name(name)))
            .unwrap_or_default();
        match self {
            ObjectStore::Local(l) => Ok(l.signed_url("GET", key, content_type, 0, ttl, &name)),
            ObjectStore::S3(s) => {
                let cfg = PresigningConfig::expires_in(ttl).map_err(err)?;
                let mut get = s
                    .client
                    .get_object()
                    .bucket(&s.bucket)
                    .key(key)
                    .response_content_disposition(disposition(&name));
                if !content_type.is_empty() {
                    get = get.response_content_type(content_type);
                }
                let req = get.presigned(cfg).await.map_err(err)?;
                Ok(req.uri().to_owned())
            }
        }
    }
}

impl LocalStore {
    pub(crate) fn path(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    async fn write(&self, key: &str, bytes: &[u8]) -> Result<(), StorageError> {
        let path = self.path(key);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(err)?;
        }
        // Write then rename: readers never see half an object.
        let tmp = tmp_path(&path);
        tokio::fs::write(&tmp, bytes).await.map_err(err)?;
        tokio::fs::rename(&tmp, &path).await.map_err(err)
    }

    /// Copies a file into the object (by way of a temporary name, as `write`).
    async fn copy_in(&self, key: &str, file: &std::path::Path) -> Result<(), StorageError> {
        let path = self.path(key);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(err)?;
        }
        let tmp = tmp_path(&path);
        tokio::fs::copy(file, &tmp).await.map_err(err)?;
        tokio::fs::rename(&tmp, &path).await.map_err(err)
    }

    /// Streams a body into the object, refusing it as soon as it passes `max` bytes; the
    /// object appears (by rename) only when the whole body arrived.
    pub(crate) async fn write_stream<S, E>(
        &self,
        key: &str,
        mut body: S,
        max: u64,
    ) -> Result<(), WriteError>
    where
        S: futures::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        use futures::StreamExt;
        use tokio::io::AsyncWriteExt;

        let path = self.path(key);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| WriteError::Store(err(e)))?;
        }
        let tmp = tmp_path(&path);
        let result = async {
            let mut file = tokio::fs::File::create(&tmp)
                .await
                .map_err(|e| WriteError::Store(err(e)))?;
            let mut written = 0u64;
            while let Some(chunk) = body.next().await {
                let chunk =
                    chunk.map_err(|e| WriteError::Body(format!("upload interrupted: {e}")))?;
                written += chunk.len() as u64;
                if written > max {
                    return Err(WriteError::TooLarge);
                }
                file.write_all(&chunk)
                    .await
                    .map_err(|e| WriteError::Store(err(e)))?;
            }
            file.flush().await.map_err(|e| WriteError::Store(err(e)))?;
            tokio::fs::rename(&tmp, &path)
                .await
                .map_err(|e| WriteError::Store(err(e)))
        }
        .await;
        if result.is_err() {
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        result
    }

    /// The URL's signature over everything it grants: method, key, expiry, size limit,
    /// content type and, for a named download, the file name.
    pub(crate) fn signature(
        &self,
        method: &str,
        key: &str,
        expires: i64,
        max: u64,
        ct: &str,
        name: &str,
    ) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes any key");
        mac.update(format!("{method}\n{key}\n{expires}\n{max}\n{ct}").as_bytes());
        // Appended only when present, so URLs signed before names existed still verify.
        if !name.is_empty() {
            mac.update(format!("\n{name}").as_bytes());
        }
        hex::encode(mac.finalize().into_bytes())
    }

    fn signed_url(
        &self,
        method: &str,
        key: &str,
        ct: &str,
        max: u64,
        ttl: Duration,
        name: &str,
    ) -> String {
        let expires = chrono::Utc::now().timestamp() + ttl.as_secs() as i64;
        let sig = self.signature(method, key, expires, max, ct, name);
        let mut pairs = vec![
            ("method", method.to_owned()),
            ("expires", expires.to_string()),
            ("max", max.to_string()),
            ("ct", ct.to_owned()),
        ];
        if !name.is_empty() {
            pairs.push(("name", name.to_owned()));
        }
        pairs.push(("sig", sig));
        let query = serde_urlencoded::to_string(pairs).unwrap_or_default();
        format!("{}/objects/{key}?{query}", self.public_url)
    }
}

/// A file name safe in a `Content-Disposition` header: ASCII letters, digits, `.`, `-`
/// and `_` only (the others become `-`), at most 100 characters.
pub(crate) fn safe_file_name(name: &str) -> String {
    name.chars()
        .take(100)
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '-',
        })
        .collect()
}

/// `attachment`, with the file name when there is one (already [`safe_file_name`]).
pub(crate) fn disposition(name: &str) -> String {
    if name.is_empty() {
        "attachment".to_owned()
    } else {
        format!("attachment; filename=\"{name}\"")
    }
}

/// What [`ObjectStore::get_limited`] found (the workers' type: they are its readers).
pub use plinth_workers::slides::Fetched;

/// A read that stopped after `max + 1` bytes: too large if it got that far.
fn bounded(bytes: Vec<u8>, max: u64) -> Fetched {
    if bytes.len() as u64 > max {
        Fetched::TooLarge {
            size: bytes.len() as u64,
        }
    } else {
        Fetched::Bytes(bytes)
    }
}

/// Why a streamed upload was not stored.
pub(crate) enum WriteError {
    TooLarge,
    Body(String),
    Store(StorageError),
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".{}.tmp", uuid::Uuid::new_v4().simple()));
    path.with_file_name(name)
}
