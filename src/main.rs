use clap::FromArgMatches;

// The request path allocates many small JSON values; glibc's allocator was a fifth of
// the CPU under load (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use plinth::config::{AnalyticsCommand, Cli, Command, GrantsCommand, UsersCommand};
use plinth::server;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::from_arg_matches(&plinth::config::command().get_matches())
        .unwrap_or_else(|e| e.exit());
    // An author's command: no logging set-up, data directory or database.
    if let Some(Command::Slides(cmd)) = cli.command {
        std::process::exit(plinth::cli::slides::run(cmd).await);
    }
    // Everything a server or operator command writes (database, outbox, objects,
    // spooled uploads, backups) holds secrets or live links: its user's alone (security
    // review N-M2). An author's `slides` command above keeps the user's own umask.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    server::init_logging(cli.opts.observability.log_format);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => server::serve(cli.opts).await,
        Command::Worker => server::worker(cli.opts).await,
        Command::Migrate => server::migrate(cli.opts).await,
        Command::Users(UsersCommand::SetLevel { email, level }) => {
            server::set_level(cli.opts, &email, level).await
        }
        Command::Grants(GrantsCommand::Mint { email, ttl, source }) => {
            server::mint_grant(&cli.opts.accounts, &email, ttl, source)
        }
        Command::Analytics(AnalyticsCommand::RebuildRollups) => {
            server::rebuild_rollups(cli.opts).await
        }
        Command::Jobs(cmd) => plinth::cli::jobs::jobs(cli.opts, cmd).await,
        Command::Db(cmd) => plinth::cli::db::run(cli.opts, cmd).await,
        Command::Backup { path } => plinth::cli::backup::backup(cli.opts, &path).await,
        Command::Slides(_) => unreachable!("handled above"),
    }
}
