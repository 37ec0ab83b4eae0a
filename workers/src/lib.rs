//! Background jobs: apalis queues in the API's own database, and the work they do.
//!
//! Queues: email delivery (outbox files by default, SMTP by configuration), slide export
//! (PDF, PNG, HTML), slide image validation, attachment expiry and completion callbacks.
//! Each has its own worker pool and concurrency, so `plinth worker` processes can be
//! scaled per queue.
//!
//! A job kind is a type implementing [`Job`] and one line of [`registry!`] below
//! (docs/architecture.md, "Adding a job kind"); [`queue`] owns apalis's tables.

pub mod callbacks;
pub mod control;
#[cfg(test)]
mod example;
pub mod expiry;
mod gate;
pub mod job;
pub mod lifecycle;
mod mail;
pub mod metrics;
pub mod pool;
pub mod queue;
pub mod retry;
mod run;
pub mod slides;
pub mod wake;

use std::sync::{Arc, OnceLock};

pub use apalis::prelude::BoxDynError;
pub use callbacks::{CallbackEnv, CallbackTask};
pub use expiry::{ExpiryEnv, ExpiryTask};
pub use job::{Job, MissingPort, Ports, Registered, Retry};
pub use lifecycle::{JobLog, Outcome, RunRecord};
pub use mail::{
    mailbox_domain, valid_mailbox, Email, EmailJob, MailBackend, MailStatus, Mailer, Opener, SEALED,
};
pub use pool::{render_pool, RenderPool};
pub use queue::{Enqueue, EnqueueError, Queue, QueueStatus};
pub use retry::{Backoff, JobError};
pub use run::{worker_name, WorkerConfig};
pub use slides::{ExportTask, ImageTask, SlideEnv};
pub use wake::wake;

/// The registry of job kinds: one line each, the queue's variant and the job's type.
/// It declares [`QueueName`] (a variant per kind, named by the kind's `Job::NAME` and
/// `Job::TABLE`) and starts each kind's workers (`run::register`).
macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident => $job:ty,)+) => {
        /// The queues by the names operators use (`--queues`, `--concurrency`, `plinth
        /// jobs`, metrics labels); `table_name` is the queue's name in apalis's tables.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum QueueName {
            $($(#[$doc])* $variant,)+
        }

        impl QueueName {
            pub const ALL: [QueueName; [$(stringify!($variant)),+].len()] =
                [$(QueueName::$variant),+];

            pub fn name(self) -> &'static str {
                match self { $(QueueName::$variant => <$job as Job>::NAME,)+ }
            }

            pub fn table_name(self) -> &'static str {
                match self { $(QueueName::$variant => <$job as Job>::TABLE,)+ }
            }

            /// Attempts a new job of the queue gets in all, and the waits between them.
            pub fn retry(self) -> Retry {
                match self { $(QueueName::$variant => <$job as Job>::retry(),)+ }
            }

            /// Where a JSON pointer finds its client's id in a job's arguments.
            pub fn client_id(self) -> Option<&'static str> {
                match self { $(QueueName::$variant => <$job as Job>::CLIENT_ID,)+ }
            }

            fn register(
                self,
                monitor: apalis::prelude::Monitor,
                start: &run::Start<'_>,
            ) -> Result<apalis::prelude::Monitor, MissingPort> {
                match self {
                    $(QueueName::$variant => run::register::<$job>(monitor, self, start),)+
                }
            }
        }

        $(impl Registered for $job {
            const QUEUE: QueueName = QueueName::$variant;
        })+
    };
}

registry! {
    Email => EmailJob,
    Export => ExportTask,
    Images => ImageTask,
    Expiry => ExpiryTask,
    /// Completion callbacks to clients' endpoints.
    Callbacks => CallbackTask,
}

impl QueueName {
    /// An operator's name or apalis's, trimmed and case-insensitive.
    pub fn parse(s: &str) -> Option<QueueName> {
        let s = s.trim().to_ascii_lowercase();
        QueueName::ALL
            .into_iter()
            .find(|q| q.name() == s || q.table_name() == s)
    }
}

/// The waits between attempts of the email and callback queues (`retry::Backoff`), set
/// once per process from its configuration (`configure_backoff`); the defaults
/// otherwise.
struct Schedules {
    email: Arc<Backoff>,
    callbacks: Arc<Backoff>,
}

static SCHEDULES: OnceLock<Schedules> = OnceLock::new();

fn schedules() -> &'static Schedules {
    SCHEDULES.get_or_init(|| Schedules {
        email: Arc::new(Backoff::email()),
        callbacks: Arc::new(Backoff::callbacks()),
    })
}

/// Sets this process's email and callback back-offs (`PLINTH_EMAIL_BACKOFF`,
/// `PLINTH_CALLBACK_BACKOFF`); the first call wins.
pub fn configure_backoff(email: Backoff, callbacks: Backoff) {
    let _ = SCHEDULES.set(Schedules {
        email: Arc::new(email),
        callbacks: Arc::new(callbacks),
    });
}

fn email_backoff() -> Arc<Backoff> {
    schedules().email.clone()
}

fn callback_backoff() -> Arc<Backoff> {
    schedules().callbacks.clone()
}

/// Attempts a new job of `queue` gets in all.
pub fn max_attempts(queue: QueueName) -> usize {
    queue.retry().max_attempts
}

/// The back-off of a queue's failed attempts.
pub fn backoff(queue: QueueName) -> Arc<Backoff> {
    queue.retry().backoff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_queue_has_its_names() {
        let names: Vec<_> = QueueName::ALL.iter().map(|q| q.name()).collect();
        assert_eq!(names, ["email", "export", "images", "expiry", "callbacks"]);
        let tables: Vec<_> = QueueName::ALL.iter().map(|q| q.table_name()).collect();
        assert_eq!(
            tables,
            [
                "email",
                "slide-export",
                "slide-images",
                "expiry",
                "callbacks"
            ]
        );
        for q in QueueName::ALL {
            assert_eq!(QueueName::parse(q.name()), Some(q));
            assert_eq!(QueueName::parse(q.table_name()), Some(q));
        }
        assert_eq!(<EmailJob as Registered>::QUEUE, QueueName::Email);
        assert_eq!(max_attempts(QueueName::Expiry), 1);
        assert_eq!(max_attempts(QueueName::Export), 4);
        assert_eq!(max_attempts(QueueName::Email), 6);
    }
}
