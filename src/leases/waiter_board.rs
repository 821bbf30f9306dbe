//! Who waits, across every server on the store: a key's queue in order and
//! the keys with the most waiting, from this server's registry merged with
//! what the others published; and the board that publishes this server's
//! waiters for them (PostgreSQL replicas), a few times a second, so that an
//! acquire that never waits writes nothing and one that waits costs the
//! database a row only if it is still waiting when the board publishes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::{LeaseError, Leases};
use crate::domain::names::LockKey;
use crate::domain::waiting::{Queued, WaitingKey, merge_queue, rank_keys};
use crate::store::{Publication, WaiterRow};

/// How often the board publishes who joined and who left.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// The keys with the most waiting, most first, and the totals they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingKeys {
    pub items: Vec<WaitingKey>,
    pub waiters: u64,
    pub keys: u64,
}

pub struct WaitingService<'a> {
    pub(super) leases: &'a Leases,
}

impl WaitingService<'_> {
    /// `key`'s waiters in queue order: this server's in its exact order,
    /// others' slotted in by when they began to wait.
    pub async fn queue(&self, key: &LockKey) -> Result<Vec<Queued>, LeaseError> {
        let leases = self.leases;
        let local = leases.waiters.queue(key.as_str());
        let local = local
            .into_iter()
            .map(|w| Queued {
                waiting: (*w).clone(),
                replica: leases.name.clone(),
            })
            .collect();
        let others = leases
            .store
            .waiters()
            .others_queue(key.as_str(), leases.now())
            .await?;
        Ok(merge_queue(local, others))
    }

    /// The keys under any of `prefixes` (disjoint, as a token's visible
    /// prefixes are) with waiters, the most first, at most `limit`.
    pub async fn keys(
        &self,
        prefixes: Vec<String>,
        limit: usize,
    ) -> Result<WaitingKeys, LeaseError> {
        let leases = self.leases;
        let mine = leases
            .waiters
            .keys(|k| prefixes.iter().any(|p| k.starts_with(p.as_str())));
        let others = leases
            .store
            .waiters()
            .others_waiting_keys(prefixes, leases.now())
            .await?;
        let (items, waiters, keys) = rank_keys(mine.into_iter().chain(others), limit);
        Ok(WaitingKeys {
            items,
            waiters,
            keys,
        })
    }
}

/// Publishes this server's waiters for the other servers on its store
/// until `stop`; returns at once when no other server can share it. A
/// publication that fails is made afresh (every waiter) the next time.
pub async fn publish(leases: Arc<Leases>, mut stop: watch::Receiver<bool>) {
    if leases.store.replica().is_none() {
        return;
    }
    leases.waiters.note_changes();
    let mut afresh = true;
    loop {
        let changes = match afresh {
            true => {
                let _ = leases.waiters.take_changes();
                leases.waiters.everyone()
            }
            false => leases.waiters.take_changes(),
        };
        if afresh || !changes.is_empty() {
            let publication = Publication {
                joined: changes
                    .joined
                    .into_iter()
                    .map(|(id, (key, waiting))| WaiterRow {
                        id: id as i64,
                        key,
                        waiting: (*waiting).clone(),
                    })
                    .collect(),
                left: changes.left.into_iter().map(|id| id as i64).collect(),
                afresh,
            };
            let published = leases
                .store
                .waiters()
                .publish(&leases.name, publication, leases.now());
            afresh = match published.await {
                Ok(()) => false,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot publish this server's waiters; retrying");
                    true
                }
            };
        }
        tokio::select! {
            () = tokio::time::sleep(PUBLISH_EVERY) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    // Gone with this server: its rows are skipped once it stops being seen
    // alive, and deleted by the next publication of any server.
}
