//! Following the change log for `watch` and `elect --observe`: long polls of
//! `GET /v1/events`, each from the last revision handed out, so that a
//! reconnect (a server restart, a network drop) neither repeats an event nor
//! skips one. Outages are ridden out once the server has answered; one
//! never reached fails at once. A server that keeps no history that old (410) ends the follow
//! with [`exit::HISTORY_COMPACTED`].

use std::time::Duration;

use tokio::time::sleep;

use super::retry::{FIRST_RETRY, LAST_RETRY, transient};
use super::{CliError, exit};
use crate::client::{Client, ClientError, EventJson, EventQuery};
use crate::domain::Revision;

/// One long poll: the server's default longest wait is longer; a server
/// that allows less refuses it naming `wait_ms`, and shorter polls are tried.
const POLL: Duration = Duration::from_secs(25);
const SHORTEST_POLL: Duration = Duration::from_millis(100);

pub struct Follower {
    client: Client,
    query: EventQuery,
    poll: Duration,
    /// Whether the server has answered once: a server never reached is more
    /// likely a wrong URL, and that is said at once (exit 5).
    answered: bool,
}

impl Follower {
    /// Follows the events `query` names, after `query.since` (or from now on).
    pub fn new(client: Client, query: EventQuery) -> Self {
        Self {
            client,
            query,
            poll: POLL,
            answered: false,
        }
    }

    /// The revision after which the next events come, once known.
    pub fn since(&self) -> Option<Revision> {
        self.query.since
    }

    /// Starts again from now on, forgetting the revision reached.
    pub fn restart(&mut self) {
        self.query.since = None;
    }

    /// The events there are now, without waiting (and, from now on, where
    /// the log stands).
    pub async fn now(&mut self) -> Result<Vec<EventJson>, CliError> {
        self.page(Duration::ZERO).await
    }

    /// The next events, waiting for them as long as it takes.
    pub async fn next(&mut self) -> Result<Vec<EventJson>, CliError> {
        loop {
            let items = self.page(self.poll).await?;
            if !items.is_empty() {
                return Ok(items);
            }
        }
    }

    /// One page, asked again until the server answers it.
    async fn page(&mut self, wait: Duration) -> Result<Vec<EventJson>, CliError> {
        let mut pause = FIRST_RETRY;
        loop {
            let wait = wait.min(self.poll);
            let page = self.client.events_page(&self.query, wait).await;
            self.answered |= matches!(page, Ok(_) | Err(ClientError::Problem { .. }));
            match page {
                Ok(page) => {
                    if pause > FIRST_RETRY {
                        eprintln!("leasehold: reconnected{}", self.resuming());
                    }
                    let last = page.items.last().map(|e| e.revision);
                    let reached = last.map_or(page.next_revision, |l| page.next_revision.max(l));
                    self.query.since = Some(self.query.since.map_or(reached, |s| s.max(reached)));
                    return Ok(page.items);
                }
                Err(e) if e.status() == Some(410) => return Err(self.compacted(&e)),
                Err(e) if e.field() == Some("wait_ms") && self.poll > SHORTEST_POLL => {
                    self.poll /= 2;
                }
                Err(e) if self.answered && transient(&e) => {
                    if pause == FIRST_RETRY {
                        eprintln!("leasehold: {e}; retrying{}", self.resuming());
                    }
                    sleep(pause).await;
                    pause = (pause * 2).min(LAST_RETRY);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn resuming(&self) -> String {
        self.query
            .since
            .map(|s| format!(" from after revision {s}"))
            .unwrap_or_default()
    }

    fn compacted(&self, e: &ClientError) -> CliError {
        let oldest = match e {
            ClientError::Problem { body, .. } => body.get("oldest_revision").cloned(),
            _ => None,
        };
        CliError::new(
            exit::HISTORY_COMPACTED,
            format!(
                "the server no longer keeps the events after revision {} (its oldest is {}), \
                 so some were missed: read the current state again (lock list, pool show) \
                 and watch from now on, without --since",
                self.query.since.unwrap_or(Revision::ZERO),
                oldest.map_or_else(|| "unknown".into(), |o| o.to_string()),
            ),
        )
    }
}
