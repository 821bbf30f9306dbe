//! Announces what committed writes did to every replica (keys freed, events
//! recorded), off the writes' path: a write adds its keys here and answers;
//! one task sends everything added since its last statement in one
//! `pg_notify` statement. Under load many writes share a statement, and
//! none waits for it: after a statement the task gathers for `GATHER`
//! before the next, so a quiet write is announced at once and a busy
//! replica sends one statement per `GATHER`, not one per write. The announcement still follows the commit, so a
//! replica woken by it finds the change committed; a waiter elsewhere that
//! misses it still retries when the leases it saw would expire.
//!
//! Not sent inside the write's own transaction: PostgreSQL serialises the
//! commits of notifying transactions (a database-wide lock held through the
//! commit's flush to disk), which would end the grouping of concurrent
//! commits into one flush.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::connections::Connections;
use super::{EVENTS_CHANNEL, KEYS_CHANNEL};
use crate::store::dialect::Effects;

/// How long the task gathers what writes add after each statement it sent.
const GATHER: Duration = Duration::from_millis(5);

#[derive(Default)]
struct Pending {
    keys: BTreeSet<String>,
    events: bool,
}

#[derive(Default)]
pub(super) struct Announcer {
    pending: Mutex<Pending>,
    wake: Notify,
    closing: AtomicBool,
}

impl Announcer {
    /// Queues the announcement of a committed write's effects.
    pub(super) fn add(&self, fx: &Effects) {
        if fx.freed_keys.is_empty() && fx.events == 0 {
            return;
        }
        let mut pending = self.pending.lock().expect("pending announcements");
        pending.keys.extend(fx.freed_keys.iter().cloned());
        pending.events |= fx.events > 0;
        drop(pending);
        self.wake.notify_one();
    }

    /// Sends the queued announcements until `close`, then what is left.
    pub(super) fn start(self: &Arc<Self>, connections: Arc<Connections>) -> JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let batch = std::mem::take(&mut *me.pending.lock().expect("pending announcements"));
                if !batch.keys.is_empty() || batch.events {
                    send(&connections, batch).await;
                    if !me.closing.load(Ordering::Acquire) {
                        tokio::time::sleep(GATHER).await;
                    }
                } else if me.closing.load(Ordering::Acquire) {
                    return;
                } else {
                    me.wake.notified().await;
                }
            }
        })
    }

    /// Has the task send what is queued and stop.
    pub(super) fn close(&self) {
        self.closing.store(true, Ordering::Release);
        self.wake.notify_one();
    }
}

/// A failure is logged, not returned: the keys are free all the same.
async fn send(connections: &Connections, batch: Pending) {
    let keys: Vec<String> = batch.keys.into_iter().collect();
    let sent = async {
        let mut conn = connections.take().await?;
        // Bounded like every call: on a silent network an unbounded one
        // would hold back every announcement after it.
        let sent = connections
            .answered(async {
                sqlx::query(
                    "SELECT pg_notify($1, k) FROM unnest($2::text[]) AS k \
                     UNION ALL SELECT pg_notify($3, '') WHERE $4",
                )
                .bind(KEYS_CHANNEL)
                .bind(&keys)
                .bind(EVENTS_CHANNEL)
                .bind(batch.events)
                .execute(&mut *conn)
                .await
                .map(|_| ())
                .map_err(Into::into)
            })
            .await;
        conn.settle(sent)
    };
    if let Err(e) = sent.await {
        tracing::warn!(error = %e, "cannot announce freed keys to the other replicas");
    }
}
