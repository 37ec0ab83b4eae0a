//! The worked example of docs/architecture.md, "Adding a job kind", compiled and run by
//! the tests (the document quotes this file; a test checks that the two agree). It is
//! not in the registry: no process runs it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::job::{Job, Retry};
use crate::retry::{Backoff, JobError};

/// The job's arguments, stored as JSON in the queue: ids, never the data itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Touch {
    pub deck_id: String,
}

/// What can go wrong at the port.
#[derive(Debug, thiserror::Error)]
pub enum TouchError {
    #[error("deck {0} is gone")]
    Gone(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// The port: what the job reaches the outside through. The server implements it.
pub trait Decks: Send + Sync + 'static {
    fn touch<'a>(&'a self, deck_id: &'a str) -> BoxFuture<'a, Result<(), TouchError>>;
}

impl Job for Touch {
    const NAME: &'static str = "touch";
    const TABLE: &'static str = "deck-touch";
    const TIMEOUT: Duration = Duration::from_secs(30);
    type Port = Arc<dyn Decks>;

    fn retry() -> Retry {
        Retry {
            max_attempts: 3,
            backoff: Arc::new(Backoff::slides()),
        }
    }

    async fn run(self, decks: &Self::Port, _attempt: usize) -> Result<(), JobError> {
        match decks.touch(&self.deck_id).await {
            Ok(()) => Ok(()),
            // Another attempt cannot help: the job fails now.
            Err(e @ TouchError::Gone(_)) => Err(JobError::permanent("gone", e)),
            Err(e) => Err(JobError::retry("database", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    struct Fake;

    impl Decks for Fake {
        fn touch<'a>(&'a self, deck_id: &'a str) -> BoxFuture<'a, Result<(), TouchError>> {
            let gone = deck_id == "gone";
            async move {
                match gone {
                    true => Err(TouchError::Gone(deck_id.to_owned())),
                    false => Ok(()),
                }
            }
            .boxed()
        }
    }

    #[tokio::test]
    async fn the_example_job_runs() {
        let port: Arc<dyn Decks> = Arc::new(Fake);
        let ok = Touch {
            deck_id: "d1".into(),
        };
        assert!(ok.run(&port, 1).await.is_ok());
        let gone = Touch {
            deck_id: "gone".into(),
        };
        let e = gone.run(&port, 1).await.unwrap_err();
        assert!(e.permanent && e.cause == "gone", "{e:?}");
        let ports = crate::Ports::new(Arc::new(NoControl)).with(port);
        assert!(ports.of::<Touch>().is_ok());
    }

    /// The example in docs/architecture.md is this file's code, word for word.
    #[test]
    fn the_document_quotes_this_file() {
        let doc = include_str!("../../docs/architecture.md");
        let file = include_str!("example.rs");
        let code = file.split("\n#[cfg(test)]").next().unwrap_or(file);
        let start = code.find("use std::sync::Arc;").unwrap();
        let quoted = &code[start..];
        assert!(
            doc.contains(quoted.trim_end()),
            "docs/architecture.md (\"Adding a job kind\") must quote workers/src/example.rs \
             from `use std::sync::Arc;` to the end of its `impl Job`"
        );
    }

    struct NoControl;

    impl crate::control::Control for NoControl {
        fn paused(
            &self,
        ) -> BoxFuture<'_, Result<Vec<crate::QueueName>, apalis::prelude::BoxDynError>> {
            async { Ok(Vec::new()) }.boxed()
        }
        fn beat<'a>(
            &'a self,
            _: &'a [(crate::QueueName, usize)],
        ) -> BoxFuture<'a, Result<(), apalis::prelude::BoxDynError>> {
            async { Ok(()) }.boxed()
        }
        fn gone(&self) -> BoxFuture<'_, Result<(), apalis::prelude::BoxDynError>> {
            async { Ok(()) }.boxed()
        }
    }
}
