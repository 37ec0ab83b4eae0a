//! `plinth db copy --to postgres://…`: a SQLite deployment's data moved onto PostgreSQL
//! (issue 45, O1). The source opens as every operator command opens it (nothing created,
//! the master key checked); the target is migrated, must be empty, and takes the copy in
//! one transaction that commits only after it checks out (`db::copy`).

use anyhow::Context;
use plinth_workers::Queue;

use crate::config::{DbCommand, Opts};
use crate::db::Db;

pub async fn run(opts: Opts, cmd: DbCommand) -> anyhow::Result<()> {
    match cmd {
        DbCommand::Copy { to } => copy(opts, &to).await,
    }
}

async fn copy(opts: Opts, to: &str) -> anyhow::Result<()> {
    if !(to.starts_with("postgres://") || to.starts_with("postgresql://")) {
        anyhow::bail!(
            "--to must be a postgres:// URL: db copy moves a SQLite deployment onto \
             PostgreSQL (the way back is docs/operations.md, Moving to PostgreSQL)"
        );
    }
    let (src, _) = crate::server::open_operator_database(&opts).await?;
    let Db::Sqlite(src_pool) = &src else {
        anyhow::bail!(
            "the source is PostgreSQL already; db copy reads a SQLite deployment (its \
             --data-dir, or --database-url sqlite://…)"
        );
    };
    let check = crate::db::settings::get(&src, crate::server::MASTER_KEY_CHECK)
        .await?
        .context("the source has no master key check")?;
    let shown = crate::server::redact_url(to);
    let dst = Db::connect(to, &crate::config::process_name("db-copy"))
        .await
        .with_context(|| format!("connecting to {shown}"))?;
    let Db::Postgres(dst_pool) = &dst else {
        unreachable!("a postgres:// URL opens PostgreSQL")
    };
    // Refused before anything is written into it (its migrations included), and again
    // once its schema exists.
    crate::db::copy::check_empty(dst_pool, &check).await?;
    dst.migrate()
        .await
        .context("running migrations on the target")?;
    Queue::postgres(dst_pool)
        .await
        .map_err(|e| anyhow::anyhow!("setting up the job queue on the target: {e}"))?;
    crate::db::copy::check_empty(dst_pool, &check).await?;
    eprintln!("plinth: copying into {shown}");
    let started = std::time::Instant::now();
    let report = crate::db::copy::copy(src_pool, dst_pool, |table, n| {
        if n > 0 {
            eprintln!("  {table}: {n} rows");
        }
    })
    .await?;
    let rows: u64 = report.tables.iter().map(|(_, n)| n).sum();
    let l = report.ledger;
    println!(
        "copied {rows} rows in {} tables in {:.1} s and checked them: every table's row count \
         matches; ledger: {} accounts holding {} tokens, {} transactions summing to {}, {} \
         accounts off their ledger (as in the source)",
        report.tables.len(),
        started.elapsed().as_secs_f64(),
        l.accounts,
        l.balances,
        l.transactions,
        l.amounts,
        l.unbalanced,
    );
    eprintln!(
        "plinth: next, start every process with --database-url {shown}, the same master key \
         (PLINTH_MASTER_KEY=$(cat <data-dir>/master.key), or the same --data-dir) and the \
         same objects (<data-dir>/objects, or the S3 bucket)"
    );
    Ok(())
}
