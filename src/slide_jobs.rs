//! The server's side of the worker ports and deck actors: [`SlideEnv`] and
//! [`ExpiryEnv`] over our tables and object storage for the workers, and the
//! idempotency store of the deck actors.

use futures::future::BoxFuture;
use futures::FutureExt;
use plinth_actors::decks::{IdempotencyStore, Recorded};
use plinth_workers::slides::{
    Artifact, AssetCheck, ExportWork, Fetched, ImageRef, SlideEnv, Verdict,
};
use plinth_workers::ExpiryEnv;
use serde_json::json;

use crate::db::slides as store;
use crate::db::Db;
use crate::domain::decks::MAX_ASSET_BYTES;
use crate::storage::ObjectStore;

type Fut<'a, T> = BoxFuture<'a, Result<T, plinth_workers::BoxDynError>>;

pub struct Env {
    pub db: Db,
    pub objects: ObjectStore,
}

fn boxed(e: impl std::fmt::Display) -> plinth_workers::BoxDynError {
    e.to_string().into()
}

impl SlideEnv for Env {
    fn start_export<'a>(&'a self, job_id: &'a str) -> Fut<'a, Option<ExportWork>> {
        async move {
            let Some(job) = store::start_job(&self.db, job_id).await? else {
                return Ok(None);
            };
            let Some(rev) = store::revision(&self.db, &job.deck_id, &job.revision_id).await? else {
                return Ok(None);
            };
            let content = plinth_slides::Deck::from_json(rev.content.0).map_err(boxed)?;
            let images = store::deck_assets(&self.db, &job.deck_id)
                .await?
                .into_iter()
                .map(|a| {
                    let image = ImageRef {
                        object_key: a.object_key,
                        status: a.status,
                        mime: a.mime,
                        size: a.size.max(0) as u64,
                        sha256: a.sha256,
                    };
                    (a.id, image)
                })
                .collect();
            Ok(Some(ExportWork {
                deck_id: job.deck_id,
                format: job.format,
                content,
                images,
                attempt: job.attempts,
            }))
        }
        .boxed()
    }

    fn progress<'a>(&'a self, job_id: &'a str, done: usize, total: usize) -> Fut<'a, bool> {
        async move { Ok(store::job_progress(&self.db, job_id, done as i64, total as i64).await?) }
            .boxed()
    }

    fn succeed<'a>(&'a self, job_id: &'a str, artifacts: &'a [Artifact]) -> Fut<'a, bool> {
        async move {
            let list = serde_json::to_value(artifacts)?;
            Ok(store::finish_job(&self.db, job_id, "succeeded", &list, None).await?)
        }
        .boxed()
    }

    fn fail<'a>(&'a self, job_id: &'a str, reason: &'a str) -> Fut<'a, ()> {
        async move {
            store::finish_job(&self.db, job_id, "failed", &json!([]), Some(reason)).await?;
            Ok(())
        }
        .boxed()
    }

    fn load_asset<'a>(&'a self, asset_id: &'a str) -> Fut<'a, Option<AssetCheck>> {
        async move {
            Ok(store::asset(&self.db, asset_id).await?.map(|a| AssetCheck {
                pending: a.status == "validating",
                object_key: a.object_key,
                declared_type: a.mime,
                size: a.size as u64,
                sha256: a.sha256,
                max_size: MAX_ASSET_BYTES,
            }))
        }
        .boxed()
    }

    fn judge_asset<'a>(&'a self, asset_id: &'a str, verdict: &'a Verdict) -> Fut<'a, ()> {
        async move {
            match verdict {
                Verdict::Ready {
                    format,
                    width,
                    height,
                } => {
                    store::judge_asset(
                        &self.db,
                        asset_id,
                        Some((format, *width as i64, *height as i64)),
                        None,
                    )
                    .await?
                }
                Verdict::Rejected(reason) => {
                    store::judge_asset(&self.db, asset_id, None, Some(reason)).await?
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn get_object<'a>(&'a self, key: &'a str, max: u64) -> Fut<'a, Fetched> {
        async move { self.objects.get_limited(key, max).await.map_err(boxed) }.boxed()
    }

    fn put_object<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        content_type: &'a str,
    ) -> Fut<'a, ()> {
        async move {
            self.objects
                .put(key, bytes, content_type)
                .await
                .map_err(boxed)
        }
        .boxed()
    }

    fn delete_object<'a>(&'a self, key: &'a str) -> Fut<'a, ()> {
        async move { self.objects.delete(key).await.map_err(boxed) }.boxed()
    }
}

/// Idempotency records of deck changes, in `slide_idempotency`.
pub struct Idempotency(pub Db);

impl IdempotencyStore for Idempotency {
    fn load<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Recorded>, String>> {
        async move {
            let since = chrono::Utc::now() - crate::domain::idempotency::KEPT;
            let row = crate::db::idempotency::load(&self.0, scope, key, since)
                .await
                .map_err(|e| e.to_string())?;
            Ok(row.map(|(request_hash, status, body)| Recorded {
                request_hash,
                status: status as u16,
                body,
            }))
        }
        .boxed()
    }

    fn save<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        r: &'a Recorded,
    ) -> BoxFuture<'a, Result<(), String>> {
        async move {
            crate::db::idempotency::save(
                &self.0,
                scope,
                key,
                &r.request_hash,
                r.status as i64,
                &r.body,
                chrono::Utc::now() - crate::domain::idempotency::KEPT,
            )
            .await
            .map_err(|e| e.to_string())
        }
        .boxed()
    }
}

/// Attachment expiry: the clones of download links that are revoked, expired, or used
/// up for longer than their last URL lives, and the attachments of analytics events
/// older than 30 days. The object goes first, then the row forgets it, so a run that
/// stops half-way leaves the rest for the next one.
impl ExpiryEnv for Env {
    fn expire(&self) -> BoxFuture<'_, Result<usize, String>> {
        async move {
            let now = chrono::Utc::now();
            let grace = chrono::TimeDelta::from_std(crate::domain::downloads::URL_TTL)
                .map_err(|e| e.to_string())?;
            let clones = self
                .expire_all(
                    || crate::db::downloads::due_clones(&self.db, now, now - grace, BATCH),
                    |id| async move { crate::db::downloads::clone_deleted(&self.db, &id).await },
                )
                .await?;
            let before = now - crate::domain::analytics::ATTACHMENT_DAYS;
            let attachments = self
                .expire_all(
                    || crate::db::analytics::due_attachments(&self.db, before, BATCH),
                    |id| async move { crate::db::analytics::attachment_deleted(&self.db, &id).await },
                )
                .await?;
            Ok(clones + attachments)
        }
        .boxed()
    }
}

/// Objects one expiry query takes.
const BATCH: i64 = 200;

impl Env {
    /// Deletes every due `(row id, object key)`, `BATCH` at a time, and marks each row.
    async fn expire_all<D, DF, M, MF>(&self, due: D, mark: M) -> Result<usize, String>
    where
        D: Fn() -> DF,
        DF: std::future::Future<Output = sqlx::Result<Vec<(String, String)>>>,
        M: Fn(String) -> MF,
        MF: std::future::Future<Output = sqlx::Result<()>>,
    {
        let mut deleted = 0;
        loop {
            let rows = due().await.map_err(|e| e.to_string())?;
            let n = rows.len() as i64;
            for (id, key) in rows {
                self.objects.delete(&key).await.map_err(|e| e.to_string())?;
                mark(id).await.map_err(|e| e.to_string())?;
                deleted += 1;
            }
            if n < BATCH {
                return Ok(deleted);
            }
        }
    }
}
