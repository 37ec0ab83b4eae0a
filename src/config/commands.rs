//! The subcommands of `plinth` and their own arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the HTTP API (the default command); runs the job workers too unless --no-workers.
    Serve,
    /// Run only the job workers (scale worker pools independently of the API).
    Worker,
    /// Run database migrations and exit.
    Migrate,
    /// Manage accounts from the command line.
    #[command(subcommand)]
    Users(UsersCommand),
    /// Token-exchange grants (needs PLINTH_AUTH_TOKEN_KEY).
    #[command(subcommand)]
    Grants(GrantsCommand),
    /// Analytics maintenance.
    #[command(subcommand)]
    Analytics(AnalyticsCommand),
    /// Job control: queue counts, listing, retry and cancel.
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Back up the database while plinth runs: SQLite with VACUUM INTO, PostgreSQL with
    /// pg_dump (custom format). Then copy the objects, and keep the master key apart.
    Backup {
        /// The file to write (it must not exist).
        path: PathBuf,
    },
    /// Moving a deployment's data: `db copy --to postgres://…` copies a SQLite deployment
    /// into an empty PostgreSQL database.
    #[command(subcommand)]
    Db(DbCommand),
    /// Slide decks on this machine, no server needed: render a Markdown deck to PDF, PNG
    /// or HTML, check it, or watch it with a live preview.
    #[command(subcommand)]
    Slides(SlidesCommand),
}

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// Jobs per queue by status, the oldest pending job's age, and jobs finished per
    /// minute over the last hour.
    Stats,
    /// Jobs, newest first (the attachment-expiry runs only with --queue expiry or --all).
    List {
        /// email, export, images, expiry or callbacks.
        #[arg(long)]
        queue: Option<String>,
        /// pending, scheduled, running, retrying, succeeded, failed or cancelled.
        #[arg(long)]
        status: Option<String>,
        /// A job's id, the id its client holds (an export's job id, an asset id, an
        /// email's id) or an email's recipient.
        #[arg(long)]
        search: Option<String>,
        /// Include the attachment-expiry runs (queued every 30 s).
        #[arg(long)]
        all: bool,
        /// At most this many (1 to 500).
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// One job with its arguments and every attempt's error: by its id, or by the id its
    /// client holds (an export's job id from GET /api/slides/jobs/{id}, an asset id, an
    /// email's id).
    Show { id: String },
    /// Runs failed or cancelled jobs again, now, with their attempts reset: the jobs named
    /// (their ids or their clients'), or every one a selection finds.
    Retry(Selection),
    /// Cancels pending, scheduled or retrying jobs so that they never run.
    Cancel(Selection),
    /// Deletes finished jobs (succeeded, failed, cancelled) with their attempt records.
    Discard(Selection),
    /// Pauses a queue: no worker of any process starts a job of it (each process sees it
    /// within a second); running jobs finish; new jobs wait.
    Pause { queue: String },
    /// Resumes a paused queue.
    Resume { queue: String },
    /// The processes that run workers, their pools and workers, and the jobs each holds.
    Workers,
}

/// The jobs a bulk command acts on: named, or selected by queue and/or status.
#[derive(Args, Debug)]
pub struct Selection {
    /// Job ids (apalis's, or the ids their clients hold).
    pub ids: Vec<String>,
    /// Instead of ids: every job of this queue (with --status, in that status; at most
    /// 500, newest first).
    #[arg(long)]
    pub queue: Option<String>,
    /// Instead of ids: every job in this status (of --queue, or of every queue).
    #[arg(long)]
    pub status: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Copies every table of the SQLite deployment (--data-dir, or a sqlite: --database-url)
    /// into an empty PostgreSQL database, checks the copy (rows per table, the ledger's
    /// sums) and commits it whole or not at all. Stop the deployment's processes first:
    /// what they write after the copy began is not in it. Then start the servers on the
    /// copy with the same master key and objects (docs/operations.md, Moving to PostgreSQL).
    Copy {
        /// The PostgreSQL database to copy into (postgres://…); it must be empty.
        #[arg(long, env = "PLINTH_COPY_TO", hide_env_values = true)]
        to: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum AnalyticsCommand {
    /// Recompute the hourly and daily rollups the stats read from the stored events, up
    /// to the current hour (after importing or changing events). Writes a day of events
    /// per transaction; stats stay right meanwhile (they read the events not rolled up).
    RebuildRollups,
}

#[derive(Subcommand, Debug)]
pub enum GrantsCommand {
    /// Print a grant for `POST /api/users/authenticate-token` (what an identity service
    /// mints; for operators and tests).
    Mint {
        #[arg(long)]
        email: String,
        /// Seconds the grant stays valid (at most 600).
        #[arg(long, default_value_t = 300)]
        ttl: i64,
        /// Optional application domain, as `source` on sign-in.
        #[arg(long)]
        source: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum UsersCommand {
    /// Change the level of an existing account (how the first admin is made: --level 100).
    SetLevel {
        #[arg(long)]
        email: String,
        #[arg(long)]
        level: i64,
    },
}

/// `plinth slides …` (`crate::cli::slides` runs them).
#[derive(Subcommand, Debug)]
pub enum SlidesCommand {
    /// Renders a Markdown deck (Marp decks as written) to PDF, PNG, HTML or SVG.
    ///
    /// The format comes from --format, else from the output's extension, else PDF. The
    /// output defaults to the deck's path with the format's extension. PNG writes one
    /// 1920×1080 file per visible slide: `<output stem>.001.png`, … (into the directory
    /// when the output is one); with --zip (or an output ending in .zip) one zip of them
    /// instead. SVG likewise writes one file per slide, its layout as the PNG draws it.
    Render {
        /// The deck's Markdown file.
        deck: PathBuf,
        /// The file to write.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// pdf, png, html or svg.
        #[arg(long, value_parser = ["pdf", "png", "html", "svg"])]
        format: Option<String>,
        /// Speaker notes for the presenter: a notes page after each slide with notes
        /// (PDF), a presenter view (HTML: press p).
        #[arg(long)]
        notes: bool,
        /// PNG as one zip, as the server's PNG export with `zip` makes it: entries
        /// slide-001.png, … in slide order, stored uncompressed. The output defaults to
        /// the deck's path with `.zip`.
        #[arg(long)]
        zip: bool,
        /// Read images the deck names outside its own folder (absolute paths, `..`,
        /// links leading out). Off: a deck from someone else cannot copy files of yours
        /// into its output.
        #[arg(long)]
        allow_outside_images: bool,
    },
    /// Checks a deck without rendering: what an export would refuse (exit 1, with the
    /// line), images that are missing or unreadable, and warnings.
    Check {
        /// The deck's Markdown file.
        deck: PathBuf,
        /// As for render.
        #[arg(long)]
        allow_outside_images: bool,
    },
    /// Serves a live preview of a deck on this machine: the HTML export, drawn again
    /// each time the deck or an image it names is saved, and the open page reloads
    /// itself at the slide it showed. Errors and warnings show on the page and here;
    /// the watch goes on. Ctrl-C stops.
    Watch {
        /// The deck's Markdown file.
        deck: PathBuf,
        /// The address to serve on [default: 127.0.0.1:8040, or a free port when that
        /// one is taken]. PLINTH_LISTEN, the server's, does not apply.
        // A string like the server's global `--listen`, whose id it shares: clap hands
        // the value up to the root's matches, which read it as one.
        #[arg(long)]
        listen: Option<String>,
        /// With the presenter view (press p), as render --notes.
        #[arg(long)]
        notes: bool,
        /// As for render.
        #[arg(long)]
        allow_outside_images: bool,
        /// Open the preview in the default browser.
        #[arg(long)]
        open: bool,
    },
}
