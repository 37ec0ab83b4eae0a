//! `plinth jobs stats|list|retry|cancel`: job control from the command line, on the
//! database a server uses (the same queries as `GET /api/admin/jobs...`, `db::jobs`).

use anyhow::bail;

use crate::config::{JobsCommand, Opts};
use crate::db::jobs::{self as store, JobRow, Outcome};
use crate::db::Db;

pub async fn jobs(opts: Opts, cmd: JobsCommand) -> anyhow::Result<()> {
    let key = crate::server::master_key(&opts)?;
    let (db, _) =
        crate::server::open_database(&opts, &crate::config::process_name("cli"), &key).await?;
    match cmd {
        JobsCommand::Stats => stats(&db).await,
        JobsCommand::List {
            queue,
            status,
            limit,
        } => list(&db, queue.as_deref(), status.as_deref(), limit).await,
        JobsCommand::Retry { id } => {
            let outcome = store::retry(&db, id.trim()).await?;
            let job = changed(id.trim(), outcome, "failed or killed", "retried")?;
            println!(
                "job {} ({}) is pending again and runs now (attempts reset)",
                job.id, job.queue
            );
            Ok(())
        }
        JobsCommand::Cancel { id } => {
            let outcome = store::cancel(&db, id.trim()).await?;
            let job = changed(id.trim(), outcome, "pending", "cancelled")?;
            println!(
                "job {} ({}) cancelled: killed, it never runs",
                job.id, job.queue
            );
            Ok(())
        }
    }
}

/// The changed job, or the error an operator reads (exit status 1).
fn changed(id: &str, outcome: Outcome, allowed: &str, verb: &str) -> anyhow::Result<JobRow> {
    match outcome {
        Outcome::Changed(job) => Ok(job),
        Outcome::NotFound => bail!("no job with id `{id}`"),
        Outcome::Conflict(job) => bail!(
            "job {id} is {}; only {allowed} jobs can be {verb}",
            job.status
        ),
    }
}

async fn stats(db: &Db) -> anyhow::Result<()> {
    let queues = store::stats(db).await?;
    let mut rows = vec![row([
        "QUEUE",
        "PENDING",
        "RUNNING",
        "DONE",
        "FAILED",
        "KILLED",
        "OLDEST PENDING",
    ])];
    for q in &queues {
        rows.push(vec![
            q.queue.to_owned(),
            q.pending.to_string(),
            q.running.to_string(),
            q.done.to_string(),
            q.failed.to_string(),
            q.killed.to_string(),
            q.oldest_pending_secs
                .map_or("-".to_owned(), |s| format!("{s:.0}s")),
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
    let mut rows = vec![row(["MINUTE", "QUEUE", "DONE", "FAILED"])];
    for m in &minutes {
        rows.push(vec![
            m.minute.format("%Y-%m-%d %H:%M").to_string(),
            m.queue.to_owned(),
            m.done.to_string(),
            m.failed.to_string(),
        ]);
    }
    print_table(&rows);
    Ok(())
}

async fn list(
    db: &Db,
    queue: Option<&str>,
    status: Option<&str>,
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
    if !(1..=store::LIST_MAX).contains(&limit) {
        bail!("--limit must be between 1 and {}", store::LIST_MAX);
    }
    let jobs = store::list(db, queue, status, limit).await?;
    if jobs.is_empty() {
        println!("no jobs");
        return Ok(());
    }
    let mut rows = vec![row([
        "ID",
        "QUEUE",
        "STATUS",
        "ATTEMPTS",
        "RUN AT",
        "DONE AT",
        "WORKER",
        "ARGS",
        "LAST ERROR",
    ])];
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| {
        t.map_or("-".to_owned(), |t| {
            t.format("%Y-%m-%d %H:%M:%S").to_string()
        })
    };
    for j in &jobs {
        rows.push(vec![
            j.id.clone(),
            j.queue.to_owned(),
            j.status.clone(),
            format!("{}/{}", j.attempts, j.max_attempts),
            time(j.run_at),
            time(j.done_at),
            j.worker.clone().unwrap_or_else(|| "-".into()),
            j.args.as_ref().map_or("-".to_owned(), |a| a.to_string()),
            j.last_error.clone().unwrap_or_else(|| "-".into()),
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
                line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        println!("{}", line.trim_end());
    }
}
