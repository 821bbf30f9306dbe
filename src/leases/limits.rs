//! Rate limit operations: define or change, inspect, list, take (waiting
//! its turn with `wait_ms`), refund, delete.
//!
//! A take that may wait stands in its limit's queue on this server (a fair
//! lock per limit: first come, first served), and the one at its head
//! sleeps until its cost can be taken, then takes it in the store like any
//! take. Across replicas each server keeps its own queue; the store keeps
//! the limit exact whoever takes, but a waiter on one replica may be
//! overtaken by a take on another.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::groups::{NamePage, paged};
use super::{LeaseError, Leases};
use crate::domain::commands::LeaseOwner;
use crate::domain::inputs::PageLimit;
use crate::domain::limit::{Limit, LimitQuery, LimitView, Taken};
use crate::domain::names::{KeyPrefix, LimitName};
use crate::domain::rate::RateLimit;
use crate::domain::refusal::Refused;
use crate::domain::time::Ms;

/// The queues of the limits that have waiters on this server: an entry
/// lives while a waiter holds it, so the map holds only limits waited on.
#[derive(Default)]
pub struct LimitQueues {
    queues: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A waiter's place in its limit's queue; leaving it drops the queue when
/// it was the last.
struct Place<'a> {
    queues: &'a LimitQueues,
    name: String,
    queue: Arc<tokio::sync::Mutex<()>>,
}

impl LimitQueues {
    fn join(&self, name: &str) -> Place<'_> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let queue = queues.entry(name.to_owned()).or_default().clone();
        Place {
            queues: self,
            name: name.to_owned(),
            queue,
        }
    }

    /// How many limits have waiters now.
    pub fn len(&self) -> usize {
        self.queues.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut queues = self.queues.queues.lock().unwrap_or_else(|e| e.into_inner());
        // The map's and this place's: no other waiter holds the queue.
        if Arc::strong_count(&self.queue) <= 2 {
            queues.remove(&self.name);
        }
    }
}

pub struct LimitService<'a> {
    pub(super) leases: &'a Leases,
}

impl LimitService<'_> {
    /// Defines the limit (`true`), or changes its numbers keeping what was
    /// spent; `owner` is the API token that defines it, in whose quota of
    /// live leases a new limit counts.
    pub async fn define(
        &self,
        name: &LimitName,
        numbers: RateLimit,
        owner: Option<LeaseOwner>,
    ) -> Result<(bool, LimitView), LeaseError> {
        let now = self.leases.now();
        Ok(self
            .leases
            .store
            .limits()
            .define(name, numbers, owner, now)
            .await?)
    }

    pub async fn get(&self, name: &LimitName) -> Result<LimitView, LeaseError> {
        Ok(self
            .leases
            .store
            .limits()
            .get(name, self.leases.now())
            .await?)
    }

    /// One page of the limits under any of `prefixes` (disjoint, in order),
    /// after the name `after`.
    pub async fn list_under(
        &self,
        prefixes: Vec<KeyPrefix>,
        limit: PageLimit,
        after: Option<String>,
    ) -> Result<NamePage<Limit>, LeaseError> {
        let limit = limit.get();
        let query = LimitQuery {
            prefixes: prefixes.into_iter().map(KeyPrefix::into_string).collect(),
            after,
            limit: limit + 1,
        };
        let (items, revision) = self.leases.store.limits().list(&query).await?;
        Ok(paged(items, limit, revision, |l: &Limit| &l.name))
    }

    /// Takes `cost` now; with `wait_ms`, waits its turn until it can.
    pub async fn take(
        &self,
        name: &LimitName,
        cost: u64,
        wait_ms: Ms,
    ) -> Result<Taken, LeaseError> {
        if wait_ms <= Ms::ZERO {
            return self.take_now(name, cost).await;
        }
        let deadline = Instant::now() + wait_ms.to_std();
        let place = self.leases.limit_queues.join(name);
        let mut stopping = self.leases.stopping();
        let turn = tokio::select! {
            turn = tokio::time::timeout_at(deadline, place.queue.lock()) => turn.ok(),
            _ = stopping.wait_for(|stop| *stop) => None,
        };
        let Some(_turn) = turn else {
            return self.take_now(name, cost).await;
        };
        loop {
            let refused = match self.take_now(name, cost).await {
                Err(LeaseError::Refused(refused)) => refused,
                other => return other,
            };
            let Refused::RateLimited { retry_after_ms, .. } = refused else {
                return Err(refused.into());
            };
            let wake = Instant::now() + Duration::from_millis(retry_after_ms);
            if wake > deadline || *stopping.borrow() {
                return Err(refused.into());
            }
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => {}
                _ = stopping.wait_for(|stop| *stop) => return Err(refused.into()),
            }
        }
    }

    async fn take_now(&self, name: &LimitName, cost: u64) -> Result<Taken, LeaseError> {
        let now = self.leases.now();
        let taken = self.leases.store.limits().take(name, cost, now).await;
        match &taken {
            Ok(_) => self.leases.prefixes.note_limit(name, true),
            Err(crate::store::Error::Refused(Refused::RateLimited { .. })) => {
                self.leases.prefixes.note_limit(name, false)
            }
            Err(_) => {}
        }
        Ok(taken?)
    }

    /// Gives `cost` back, never above a full bucket.
    pub async fn refund(&self, name: &LimitName, cost: u64) -> Result<LimitView, LeaseError> {
        let now = self.leases.now();
        Ok(self.leases.store.limits().refund(name, cost, now).await?)
    }

    /// Deletes a limit: one `by` defined when it names an API token, any
    /// with `None` (an admin).
    pub async fn delete(&self, name: &LimitName, by: Option<&str>) -> Result<(), LeaseError> {
        let now = self.leases.now();
        Ok(self.leases.store.limits().delete(name, by, now).await?)
    }
}
