//! The server's side of the worker ports and deck actors: [`SlideEnv`] and
//! [`ExpiryEnv`] over our tables and object storage for the workers, and the
//! idempotency store of the deck actors.

use futures::future::BoxFuture;
use futures::FutureExt;
use plinth_actors::decks::{Claim, IdempotencyStore, Recorded};
use plinth_workers::expiry::ExpiryError;
use plinth_workers::slides::AssetStatus;
use plinth_workers::slides::{
    Artifact, AssetCheck, ExportWork, Fetched, ImageRef, Results, SlideEnv, Start, Verdict, Warning,
};
use plinth_workers::ExpiryEnv;
use serde_json::json;

use crate::adapters::storage::ObjectStore;
use crate::db::slides as store;
use crate::db::Db;
use crate::domain::decks::MAX_ASSET_BYTES;

type Fut<'a, T> = BoxFuture<'a, Result<T, plinth_workers::BoxDynError>>;

pub struct Env {
    pub db: Db,
    pub objects: ObjectStore,
}

fn boxed(e: impl std::fmt::Display) -> plinth_workers::BoxDynError {
    e.to_string().into()
}

/// The end of a lease taken or renewed now.
fn lease_until() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + plinth_workers::slides::LEASE
}

impl SlideEnv for Env {
    fn start_export<'a>(&'a self, job_id: &'a str, owner: &'a str) -> Fut<'a, Start> {
        async move {
            let job = match store::start_job(&self.db, job_id, owner, lease_until()).await? {
                store::Started::Claimed(job) => job,
                store::Started::Ended => return Ok(Start::Ended),
                store::Started::Cancelled => return Ok(Start::Cancelled),
                store::Started::Leased(until) => {
                    let left = (until - chrono::Utc::now()).to_std().unwrap_or_default();
                    return Ok(Start::Leased(left));
                }
            };
            let Some(rev) = store::revision(&self.db, &job.deck_id, &job.revision_id).await? else {
                store::finish_job(
                    &self.db,
                    job_id,
                    owner,
                    "failed",
                    &json!([]),
                    Some("the revision is gone"),
                )
                .await?;
                return Ok(Start::Ended);
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
            Ok(Start::Run(Box::new(ExportWork {
                deck_id: job.deck_id,
                format: job.format,
                content,
                images,
                attempt: job.attempts,
            })))
        }
        .boxed()
    }

    fn renew<'a>(&'a self, job_id: &'a str, owner: &'a str) -> Fut<'a, bool> {
        async move { Ok(store::renew_job(&self.db, job_id, owner, lease_until(), None).await?) }
            .boxed()
    }

    fn progress<'a>(
        &'a self,
        job_id: &'a str,
        owner: &'a str,
        done: usize,
        total: usize,
    ) -> Fut<'a, bool> {
        async move {
            let progress = Some((done as i64, total as i64));
            Ok(store::renew_job(&self.db, job_id, owner, lease_until(), progress).await?)
        }
        .boxed()
    }

    fn succeed<'a>(
        &'a self,
        job_id: &'a str,
        owner: &'a str,
        artifacts: &'a [Artifact],
        warnings: &'a [Warning],
    ) -> Fut<'a, bool> {
        async move {
            let list = serde_json::to_value(Results {
                files: artifacts.to_vec(),
                warnings: warnings.to_vec(),
            })?;
            Ok(store::finish_job(&self.db, job_id, owner, "succeeded", &list, None).await?)
        }
        .boxed()
    }

    fn fail<'a>(&'a self, job_id: &'a str, owner: &'a str, reason: &'a str) -> Fut<'a, ()> {
        async move {
            store::finish_job(&self.db, job_id, owner, "failed", &json!([]), Some(reason)).await?;
            Ok(())
        }
        .boxed()
    }

    fn release<'a>(&'a self, job_id: &'a str, owner: &'a str) -> Fut<'a, ()> {
        async move { Ok(store::release_job(&self.db, job_id, owner).await?) }.boxed()
    }

    fn load_asset<'a>(&'a self, asset_id: &'a str) -> Fut<'a, Option<AssetCheck>> {
        async move {
            Ok(store::asset(&self.db, asset_id).await?.map(|a| AssetCheck {
                pending: a.status == AssetStatus::Validating,
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
                        Some((format.as_str(), *width as i64, *height as i64)),
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

/// Where the workers' lifecycle layer records every run (`db::jobs::finish_run`).
pub struct JobRuns(pub Db);

impl plinth_workers::JobLog for JobRuns {
    fn finish<'a>(
        &'a self,
        run: &'a plinth_workers::RunRecord,
    ) -> BoxFuture<'a, Result<(), plinth_workers::BoxDynError>> {
        async move { Ok(crate::db::jobs::finish_run(&self.0, run).await?) }.boxed()
    }
}

/// Queue pauses and this process's heartbeat (`db::jobs`), for the workers' control loop.
pub struct Control {
    pub db: Db,
    /// `plinth-serve:<host>:<pid>` and the like (`config::process_name`).
    pub name: String,
    pub role: plinth_vocab::ProcessRole,
    /// The prefix of this process's worker names.
    pub worker_prefix: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
}

impl plinth_workers::control::Control for Control {
    fn paused(
        &self,
    ) -> BoxFuture<'_, Result<Vec<plinth_workers::QueueName>, plinth_workers::BoxDynError>> {
        async move { Ok(crate::db::jobs::paused(&self.db).await?) }.boxed()
    }

    fn beat<'a>(
        &'a self,
        pools: &'a [(plinth_workers::QueueName, usize)],
    ) -> BoxFuture<'a, Result<(), plinth_workers::BoxDynError>> {
        async move {
            let pools: Vec<serde_json::Value> = pools
                .iter()
                .map(|(q, n)| json!({"queue": q.name(), "concurrency": n}))
                .collect();
            let row = crate::db::jobs::ProcessRow {
                name: self.name.clone(),
                role: self.role,
                host: crate::config::host_name(),
                pid: i64::from(std::process::id()),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                worker_prefix: self.worker_prefix.clone(),
                pools: serde_json::Value::Array(pools).to_string(),
                started_at: self.started_at,
                last_seen: chrono::Utc::now(),
            };
            Ok(crate::db::jobs::beat(&self.db, &row).await?)
        }
        .boxed()
    }

    fn gone(&self) -> BoxFuture<'_, Result<(), plinth_workers::BoxDynError>> {
        async move { Ok(crate::db::jobs::gone(&self.db, &self.name).await?) }.boxed()
    }
}

/// Idempotency records of deck changes, in `idempotency_records`.
pub struct Idempotency(pub Db);

impl IdempotencyStore for Idempotency {
    fn claim<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        request_hash: &'a str,
    ) -> BoxFuture<'a, Result<Claim, plinth_actors::StoreError>> {
        async move {
            use crate::db::idempotency::{KEPT, STALE_CLAIM};
            let now = chrono::Utc::now();
            let held = crate::db::idempotency::claim(
                &self.0,
                scope,
                key,
                request_hash,
                now - KEPT,
                Some(now - STALE_CLAIM),
            )
            .await
            .map_err(plinth_actors::StoreError::new)?;
            Ok(match held {
                None => Claim::Claimed,
                Some((request_hash, crate::db::idempotency::IN_PROGRESS, _)) => {
                    Claim::InProgress { request_hash }
                }
                Some((request_hash, status, body)) => Claim::Done(Recorded {
                    request_hash,
                    status: status as u16,
                    body,
                }),
            })
        }
        .boxed()
    }

    fn finish<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        r: &'a Recorded,
    ) -> BoxFuture<'a, Result<(), plinth_actors::StoreError>> {
        async move {
            crate::db::idempotency::finish(&self.0, scope, key, r.status as i64, &r.body)
                .await
                .map_err(plinth_actors::StoreError::new)
        }
        .boxed()
    }

    fn abandon<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<(), plinth_actors::StoreError>> {
        async move {
            crate::db::idempotency::abandon(&self.0, scope, key)
                .await
                .map_err(plinth_actors::StoreError::new)
        }
        .boxed()
    }
}

/// Attachment expiry: the clones of download links that are revoked, expired, or used
/// up for longer than their last URL lives, and the attachments of analytics events
/// older than 30 days. The object goes first, then the row forgets it, so a run that
/// stops half-way leaves the rest for the next one.
impl ExpiryEnv for Env {
    fn expire(&self) -> BoxFuture<'_, Result<usize, ExpiryError>> {
        async move {
            let now = chrono::Utc::now();
            let grace = chrono::TimeDelta::from_std(crate::domain::downloads::URL_TTL)
                .map_err(|e| ExpiryError::Storage(e.to_string()))?;
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
    async fn expire_all<D, DF, M, MF>(&self, due: D, mark: M) -> Result<usize, ExpiryError>
    where
        D: Fn() -> DF,
        DF: std::future::Future<Output = sqlx::Result<Vec<(String, String)>>>,
        M: Fn(String) -> MF,
        MF: std::future::Future<Output = sqlx::Result<()>>,
    {
        let mut deleted = 0;
        loop {
            let rows = due().await?;
            let n = rows.len() as i64;
            for (id, key) in rows {
                let gone = self.objects.delete(&key).await;
                gone.map_err(|e| ExpiryError::Storage(e.to_string()))?;
                mark(id).await?;
                deleted += 1;
            }
            if n < BATCH {
                return Ok(deleted);
            }
        }
    }
}
