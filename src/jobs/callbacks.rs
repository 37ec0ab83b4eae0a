//! Completion callbacks, the delivering side (docs/api.md, "Completion callbacks"): the
//! `callbacks` queue's port. A worker builds the event from the export job as it is
//! then, signs it with the job owner's secret and POSTs it to an address checked here;
//! the URL and address rules and the secrets are `adapters::callbacks`'.

use std::net::SocketAddr;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use plinth_workers::{BoxDynError, CallbackTask, JobError};

use crate::adapters::callbacks::{check_url, internal, secret, SIGNATURE_HEADER};
use crate::adapters::storage::ObjectStore;
use crate::crypto::MasterKey;
use crate::db::Db;
use crate::wire::exports::{job_view, Event, EventData};

/// How long a receiver has to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The workers' port: delivers completion events.
pub struct Deliverer {
    pub db: Db,
    pub objects: ObjectStore,
    pub key: MasterKey,
    /// `PLINTH_CALLBACK_PRIVATE_NETWORKS`.
    pub private_ok: bool,
}

impl plinth_workers::CallbackEnv for Deliverer {
    fn deliver<'a>(
        &'a self,
        task: &'a CallbackTask,
        attempt: usize,
    ) -> BoxFuture<'a, Result<(), BoxDynError>> {
        async move { Ok(self.send(task, attempt).await?) }.boxed()
    }
}

impl Deliverer {
    async fn send(&self, task: &CallbackTask, attempt: usize) -> Result<(), JobError> {
        let storage = |e: &dyn std::fmt::Display| JobError::retry("storage", e);
        let Some(job) = crate::db::slides::job(&self.db, &task.job_id)
            .await
            .map_err(|e| storage(&e))?
        else {
            // Gone with its deck: nobody to tell about it.
            return Ok(());
        };
        let Some(target) = job.callback_url.clone() else {
            return Ok(());
        };
        // Retried by an operator since: the next end sends its own event.
        if !job.status.ended() {
            return Ok(());
        }
        // The event carries artifact URLs: only for a requester who may still read the
        // deck (a member removed since gets nothing: security review N-L1).
        if !still_reads(&self.db, &job.deck_id, &job.requested_by)
            .await
            .map_err(|e| storage(&e))?
        {
            tracing::info!(job = %job.id, "completion callback dropped: its requester no longer reads the deck");
            return Ok(());
        }
        let url = check_url(&target, true).map_err(|e| JobError::permanent("callback_url", e))?;
        let signing = secret(&self.db, &self.key, &job.requested_by)
            .await
            .map_err(|e| storage(&e))?;
        let view = job_view(&self.objects, &job)
            .await
            .map_err(|e| storage(&e))?;
        let t = chrono::Utc::now().timestamp();
        let event = Event {
            id: task.event_id.clone(),
            kind: format!("export.{}", job.status),
            created: t,
            attempt,
            data: EventData { job: view },
        };
        let body = serde_json::to_vec(&event).map_err(|e| storage(&e))?;
        // During a rotation's overlap, a signature with each secret (the new one first).
        let signature = crate::adapters::payments::sign_event_with(&signing.keys(), t, &body);
        let client = self.client_for(&url).await?;
        let answer = client
            .post(url.clone())
            .header("content-type", "application/json")
            .header("user-agent", "plinth-callbacks/1")
            .header("plinth-event-id", &task.event_id)
            .header(SIGNATURE_HEADER, signature)
            .body(body)
            .send()
            .await
            .map_err(|e| {
                JobError::retry(
                    "callback_unreachable",
                    format!("POST {}: {e}", redacted(&url)),
                )
            })?;
        let status = answer.status();
        if status.is_success() {
            return Ok(());
        }
        let text = format!("POST {} answered {status}", redacted(&url));
        if status == reqwest::StatusCode::GONE {
            // The receiver says it will never take this event: no more attempts.
            return Err(JobError::permanent("callback_gone", text));
        }
        Err(JobError::retry("callback_http", text))
    }

    /// A client that connects only to an address checked here (the URL's host resolved
    /// once, internal addresses refused unless allowed), with no redirects followed.
    async fn client_for(&self, url: &reqwest::Url) -> Result<reqwest::Client, JobError> {
        let host = url.host_str().unwrap_or_default().to_owned();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let port = url.port_or_known_default().unwrap_or(443);
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| JobError::retry("callback_unreachable", format!("resolving {host}: {e}")))?
            .collect();
        let allowed: Vec<SocketAddr> = resolved
            .iter()
            .copied()
            .filter(|a| self.private_ok || !internal(a.ip()))
            .collect();
        let Some(addr) = allowed.first().copied() else {
            return Err(if resolved.is_empty() {
                JobError::retry("callback_unreachable", format!("{host} has no address"))
            } else {
                JobError::permanent(
                    "callback_url",
                    format!("{host} resolves to a loopback or private address; not called"),
                )
            });
        };
        reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            // A system proxy would resolve the name again, past the address checked
            // here (security review N-L2).
            .no_proxy()
            .resolve(&host, addr)
            .build()
            .map_err(|e| JobError::retry("callback_unreachable", e))
    }
}

/// Whether a user still reads a deck: its owner, a member of its organization, or a
/// platform administrator.
async fn still_reads(db: &Db, deck_id: &str, user_id: &str) -> sqlx::Result<bool> {
    let Some(deck) = crate::db::slides::deck(db, deck_id).await? else {
        return Ok(false);
    };
    let member = match &deck.organization_id {
        None => deck.owner_id == user_id,
        Some(org) => crate::db::organizations::role_of(db, org, user_id)
            .await?
            .is_some(),
    };
    if member {
        return Ok(true);
    }
    let user = crate::db::users::by_id(db, user_id).await?;
    Ok(user.is_some_and(|u| u.level >= crate::caller::LEVEL_ADMIN))
}

/// A URL for a log line: scheme, host, port and path only (a query may hold a token).
fn redacted(url: &reqwest::Url) -> String {
    format!(
        "{}://{}{}{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port().map(|p| format!(":{p}")).unwrap_or_default(),
        url.path()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_drop_the_query() {
        let u = reqwest::Url::parse("https://h.example:8443/p/a?token=secret").unwrap();
        assert_eq!(redacted(&u), "https://h.example:8443/p/a");
    }
}
