//! `plinth jobs stats|list|show|retry|cancel`: job control from the command line, on the
//! database a server uses (the same queries as `GET /api/admin/jobs...`, `db::jobs`).

use anyhow::bail;

use crate::config::{JobsCommand, Opts, Selection};
use crate::db::jobs::{self as store, JobRow, Outcome};
use crate::db::Db;

pub async fn jobs(opts: Opts, cmd: JobsCommand) -> anyhow::Result<()> {
    let (db, _) = crate::server::open_operator_database(&opts).await?;
    match cmd {
        JobsCommand::Stats => stats(&db).await,
        JobsCommand::List {
            queue,
            status,
            search,
            all,
            limit,
        } => {
            list(
                &db,
                queue.as_deref(),
                status.as_deref(),
                search.as_deref(),
                all,
                limit,
            )
            .await
        }
        JobsCommand::Show { id } => show(&db, &id).await,
        JobsCommand::Retry(sel) => bulk(&db, store::Action::Retry, sel).await,
        JobsCommand::Cancel(sel) => bulk(&db, store::Action::Cancel, sel).await,
        JobsCommand::Discard(sel) => bulk(&db, store::Action::Discard, sel).await,
        JobsCommand::Pause { queue } => {
            let q = store::queue(&queue).map_err(anyhow::Error::msg)?;
            if store::pause(&db, q, "cli").await? {
                println!(
                    "queue {} paused: every process stops starting its jobs within a second \
                     (a job picked up before then still runs; running ones finish)",
                    q.name()
                );
            } else {
                println!("queue {} was already paused", q.name());
            }
            Ok(())
        }
        JobsCommand::Resume { queue } => {
            let q = store::queue(&queue).map_err(anyhow::Error::msg)?;
            if store::resume(&db, q).await? {
                println!("queue {} resumed", q.name());
            } else {
                println!("queue {} was not paused", q.name());
            }
            Ok(())
        }
        JobsCommand::Workers => workers(&db).await,
    }
}

/// Retry, cancel or discard the jobs of a selection; one line per job, exit status 1
/// when any was left as it was.
async fn bulk(db: &Db, action: store::Action, sel: Selection) -> anyhow::Result<()> {
    let (allowed, verb) = action.applies_to();
    let ids: Vec<String> = if !sel.ids.is_empty() {
        if sel.queue.is_some() || sel.status.is_some() {
            bail!("give job ids, or --queue and/or --status, not both");
        }
        sel.ids
    } else if sel.queue.is_some() || sel.status.is_some() {
        let queue = sel
            .queue
            .as_deref()
            .map(store::queue)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let status = sel
            .status
            .as_deref()
            .map(store::status)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        store::list(db, queue, status, None, store::LIST_MAX)
            .await?
            .into_iter()
            .map(|j| j.id)
            .collect()
    } else {
        bail!("give job ids, or --queue and/or --status");
    };
    if ids.is_empty() {
        println!("no jobs");
        return Ok(());
    }
    let (mut done, mut refused) = (0, Vec::new());
    for id in &ids {
        let Some(job) = store::resolve(db, id).await? else {
            refused.push(format!("no job with id `{}`", id.trim()));
            continue;
        };
        if job.id != id.trim() {
            let others: Vec<String> = store::find(db, id.trim())
                .await?
                .into_iter()
                .filter(|j| j.id != job.id)
                .map(|j| format!("{} ({}, {})", j.id, j.queue, j.status))
                .collect();
            if !others.is_empty() {
                println!(
                    "`{}` names job {} ({}); it also names {}: give their ids to act on them",
                    id.trim(),
                    job.id,
                    job.queue,
                    others.join(", ")
                );
            }
        }
        match store::act(db, action, &job.id).await? {
            Outcome::Changed(j) => {
                done += 1;
                let what = match action {
                    store::Action::Retry => "is pending again and runs now (attempts reset)",
                    store::Action::Cancel => "cancelled: it never runs",
                    store::Action::Discard => "deleted with its attempt records",
                };
                println!("job {} ({}) {what}", j.id, j.queue);
            }
            Outcome::NotFound => refused.push(format!("no job with id `{}`", job.id)),
            Outcome::Conflict(j) => refused.push(format!(
                "job {} is {}; only {allowed} jobs can be {verb}",
                j.id, j.status
            )),
        }
    }
    if ids.len() > 1 {
        println!("{done} of {} jobs {verb}", ids.len());
    }
    if refused.is_empty() {
        return Ok(());
    }
    bail!("{}", refused.join("\n"))
}

/// `plinth jobs workers`: processes, their pools, workers and the jobs each holds.
async fn workers(db: &Db) -> anyhow::Result<()> {
    let processes = store::processes(db).await?;
    let workers = store::workers(db, 60).await?;
    let paused = store::paused(db).await?;
    if !paused.is_empty() {
        let names: Vec<&str> = paused.iter().map(|q| q.name()).collect();
        println!("paused queues: {}", names.join(", "));
        println!();
    }
    if processes.is_empty() && workers.is_empty() {
        println!("no process runs workers");
        return Ok(());
    }
    let now = chrono::Utc::now();
    let mut rows = vec![row([
        "PROCESS",
        "ROLE",
        "VERSION",
        "STARTED",
        "LAST SEEN",
        "POOLS",
    ])];
    for p in &processes {
        let pools: Vec<serde_json::Value> = serde_json::from_str(&p.pools).unwrap_or_default();
        let pools: Vec<String> = pools
            .iter()
            .map(|v| {
                format!(
                    "{}={}",
                    v["queue"].as_str().unwrap_or("?"),
                    v["concurrency"]
                )
            })
            .collect();
        let age = (now - p.last_seen).num_seconds();
        rows.push(vec![
            p.name.clone(),
            p.role.to_string(),
            p.version.clone(),
            time(Some(p.started_at)),
            if age > 20 {
                format!("{age}s ago (gone?)")
            } else {
                format!("{age}s ago")
            },
            pools.join(","),
        ]);
    }
    print_table(&rows);
    println!();
    let mut rows = vec![row(["WORKER", "QUEUE", "LAST SEEN", "HOLDS"])];
    for w in &workers {
        let holds: Vec<String> = w
            .jobs
            .iter()
            .map(|j| match &j.client_id {
                Some(c) => format!("{} ({c})", j.id),
                None => j.id.clone(),
            })
            .collect();
        rows.push(vec![
            w.name.clone(),
            w.queue.to_owned(),
            w.last_seen
                .map_or("-".into(), |t| format!("{}s ago", (now - t).num_seconds())),
            if holds.is_empty() {
                "-".into()
            } else {
                holds.join(", ")
            },
        ]);
    }
    print_table(&rows);
    Ok(())
}

/// The job `id` names: apalis's id, else the newest job its client's id names.
async fn resolve(db: &Db, id: &str) -> anyhow::Result<JobRow> {
    match store::resolve(db, id).await? {
        Some(job) => Ok(job),
        None => bail!(
            "no job with id `{}` (neither a job's id nor the id its client holds)",
            id.trim()
        ),
    }
}

async fn stats(db: &Db) -> anyhow::Result<()> {
    let queues = store::stats(db).await?;
    let mut rows = vec![row([
        "QUEUE",
        "PENDING",
        "SCHEDULED",
        "RUNNING",
        "RETRYING",
        "SUCCEEDED",
        "FAILED",
        "CANCELLED",
        "OLDEST PENDING",
        "PAUSED",
    ])];
    for q in &queues {
        rows.push(vec![
            q.queue.to_owned(),
            q.pending.to_string(),
            q.scheduled.to_string(),
            q.running.to_string(),
            q.retrying.to_string(),
            q.succeeded.to_string(),
            q.failed.to_string(),
            q.cancelled.to_string(),
            q.oldest_pending_secs
                .map_or("-".to_owned(), |s| format!("{s:.0}s")),
            if q.paused { "yes" } else { "-" }.to_owned(),
        ]);
    }
    print_table(&rows);
    let minutes = store::throughput(db, 60).await?;
    println!();
    if minutes.is_empty() {
        println!("no job finished in the last 60 minutes");
        return Ok(());
    }
    println!("finished per minute, last 60 minutes:");
    let mut rows = vec![row(["MINUTE", "QUEUE", "SUCCEEDED", "FAILED"])];
    for m in &minutes {
        rows.push(vec![
            m.minute.format("%Y-%m-%d %H:%M").to_string(),
            m.queue.to_owned(),
            m.succeeded.to_string(),
            m.failed.to_string(),
        ]);
    }
    print_table(&rows);
    Ok(())
}

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map_or("-".to_owned(), |t| {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    })
}

/// At most `n` characters of `s`, with an ellipsis when cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

async fn list(
    db: &Db,
    queue: Option<&str>,
    status: Option<&str>,
    search: Option<&str>,
    all: bool,
    limit: i64,
) -> anyhow::Result<()> {
    let queue = queue
        .map(store::queue)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let status = status
        .map(store::status)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let search = search
        .map(store::search_term)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    if !(1..=store::LIST_MAX).contains(&limit) {
        bail!("--limit must be between 1 and {}", store::LIST_MAX);
    }
    // The expiry runs (one every 30 s) would fill the list: shown when asked for.
    let hide_expiry = queue.is_none() && search.is_none() && !all;
    let fetch = if hide_expiry { store::LIST_MAX } else { limit };
    let jobs: Vec<JobRow> = store::list(db, queue, status, search.as_deref(), fetch)
        .await?
        .into_iter()
        .filter(|j| !(hide_expiry && j.queue == "expiry"))
        .take(limit as usize)
        .collect();
    if jobs.is_empty() {
        println!("no jobs");
        return Ok(());
    }
    let mut rows = vec![row([
        "ID",
        "QUEUE",
        "STATUS",
        "TRIES",
        "CREATED",
        "CLIENT ID",
        "LAST ERROR",
    ])];
    for j in &jobs {
        rows.push(vec![
            j.id.clone(),
            j.queue.to_owned(),
            match j.next_attempt_at {
                Some(t) => format!("{} (next {})", j.status, t.format("%H:%M:%S")),
                None => j.status.to_string(),
            },
            format!("{}/{}", j.attempts, j.max_attempts),
            time(j.created_at),
            j.client_id.clone().unwrap_or_else(|| "-".into()),
            cut(j.last_error.as_deref().unwrap_or("-"), 60),
        ]);
    }
    print_table(&rows);
    Ok(())
}

/// `plinth jobs show`: the job, its arguments and every attempt.
async fn show(db: &Db, id: &str) -> anyhow::Result<()> {
    let job = resolve(db, id).await?;
    let others: Vec<String> = match &job.client_id {
        Some(client) if client != &job.id => store::find(db, client)
            .await?
            .into_iter()
            .filter(|j| j.id != job.id)
            .map(|j| format!("{} ({}, {})", j.id, j.queue, j.status))
            .collect(),
        _ => Vec::new(),
    };
    let lines = [
        ("id", job.id.clone()),
        ("queue", job.queue.to_owned()),
        (
            "status",
            format!("{} (apalis: {})", job.status, job.apalis_status),
        ),
        (
            "attempts",
            format!("{} of {}", job.attempts, job.max_attempts),
        ),
        (
            "client id",
            job.client_id.clone().unwrap_or_else(|| "-".into()),
        ),
        ("created", time(job.created_at)),
        ("due", time(job.run_at)),
        ("next attempt", time(job.next_attempt_at)),
        ("finished", time(job.done_at)),
        ("worker", job.worker.clone().unwrap_or_else(|| "-".into())),
        (
            "arguments",
            job.args.as_ref().map_or("-".to_owned(), |a| a.to_string()),
        ),
        (
            "last error",
            job.last_error.clone().unwrap_or_else(|| "-".into()),
        ),
    ];
    for (k, v) in lines {
        println!("{k:<13} {v}");
    }
    if !others.is_empty() {
        println!("{:<13} {}", "same client", others.join(", "));
    }
    let attempts = store::attempts(db, &job.id).await?;
    println!();
    if attempts.is_empty() {
        println!("no attempt recorded");
        return Ok(());
    }
    let mut rows = vec![row([
        "ATTEMPT", "STARTED", "WAITED", "TOOK", "OUTCOME", "CAUSE", "WORKER", "ERROR",
    ])];
    for a in &attempts {
        let took = (a.finished_at - a.started_at).num_milliseconds();
        rows.push(vec![
            a.attempt.to_string(),
            a.started_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            format!("{} ms", a.waited_ms),
            format!("{took} ms"),
            match a.next_at {
                Some(t) => format!("{} (next {})", a.outcome, t.format("%H:%M:%S")),
                None => a.outcome.to_string(),
            },
            a.cause.clone().unwrap_or_else(|| "-".into()),
            a.worker.clone(),
            a.error.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    print_table(&rows);
    Ok(())
}

fn row<const N: usize>(cells: [&str; N]) -> Vec<String> {
    cells.iter().map(|c| (*c).to_owned()).collect()
}

/// Left-aligned columns two spaces apart (the last one is not padded).
fn print_table(rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(cell);
            } else {
                let pad = widths[i].saturating_sub(cell.chars().count());
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        println!("{}", line.trim_end());
    }
}
