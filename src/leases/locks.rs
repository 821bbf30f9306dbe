//! Lock operations: acquire (with waiting), renew, release, inspect, list,
//! a key's history, force release.

use tokio::sync::oneshot;

use super::turns::{Asking, Try, take_turns};
use super::{LeaseError, Leases, new_token};
use crate::domain::Ms;
use crate::domain::Revision;
use crate::domain::commands::{AcquireLock, AcquireOutcome, LockQuery};
use crate::domain::events::Event;
use crate::domain::fencing::{Fencing, FencingToken};
use crate::domain::inputs::{Metadata, PageLimit};
use crate::domain::lock::{ListCursor, LockLease, Refusal};
use crate::domain::names::{KeyPrefix, LeaseToken, LockKey, Ttl};
use crate::domain::{Missing, Refused};
use crate::telemetry::Metrics;

#[derive(Debug, Clone, PartialEq)]
pub enum Acquired {
    Granted(LockLease),
    Replayed(LockLease),
}

/// One page of leases and where the next starts.
#[derive(Debug, Clone)]
pub struct LockPage {
    pub items: Vec<LockLease>,
    pub next: Option<ListCursor>,
    /// The change-log revision the page reflects.
    pub revision: Revision,
}

pub struct LockService<'a> {
    pub(super) leases: &'a Leases,
}

impl LockService<'_> {
    /// Grants the key now, or waits up to `wait_ms` in first-come order.
    pub async fn acquire(&self, req: AcquireLock, wait_ms: Ms) -> Result<Acquired, LeaseError> {
        let waits = wait_ms > Ms::ZERO;
        let key = req.key.clone();
        let started = std::time::Instant::now();
        let result = self.acquire_or_wait(req, wait_ms).await;
        let metrics = &self.leases.metrics;
        match &result {
            Ok(Acquired::Granted(_)) => Metrics::inc(&metrics.lock_grants),
            Ok(Acquired::Replayed(_)) => Metrics::inc(&metrics.lock_replays),
            Err(LeaseError::Refused(Refused::Lock(_))) => {
                Metrics::inc(&metrics.lock_conflicts);
                super::activity::note_refusal(&self.leases.prefixes, key.as_str());
            }
            Err(_) => {}
        }
        // Only answers a wait ends in: not replays, bad input or a shed request.
        if waits
            && matches!(
                result,
                Ok(Acquired::Granted(_)) | Err(LeaseError::Refused(Refused::Lock(_)))
            )
        {
            metrics.acquire_waits.observe(started.elapsed());
            super::activity::note_wait(&self.leases.prefixes, key.as_str(), started.elapsed());
        }
        result
    }

    async fn acquire_or_wait(&self, new: AcquireLock, wait_ms: Ms) -> Result<Acquired, LeaseError> {
        let leases = self.leases;
        // Drawn once: every attempt of this request grants the same token.
        let token = new_token();
        let req = &new;
        // More than the capacity can never be granted: no wait in line for it.
        self.exceeds_capacity(req).await?;
        // A retry of a live grant is answered at once, even while others wait.
        if leases.waiters.is_queued(&req.key)
            && let Some(replay) = self.replay(&new).await?
        {
            return Ok(replay);
        }
        if wait_ms == Ms::ZERO {
            if leases.waiters.is_queued(&req.key) {
                return Err(self.queue_refusal(&req.key).await);
            }
            return self.try_acquire(new.clone(), token).await;
        }
        let keys = [req.key.as_str().to_owned()];
        let waited = take_turns(
            leases,
            &keys,
            wait_ms,
            Asking {
                holder: req.holder.as_str(),
                mode: req.mode,
                max_holders: req.max_holders,
                permits: req.permits,
            },
            || async {
                let tried = self.try_acquire(new.clone(), token.clone()).await;
                match &tried {
                    Err(LeaseError::Refused(Refused::Lock(refusal))) => match refusal {
                        Refusal::Held { available_at, .. } => Try::Until {
                            clears_at: *available_at,
                            answer: tried,
                        },
                        Refusal::Delayed { until } => Try::Until {
                            clears_at: *until,
                            answer: tried,
                        },
                        Refusal::LimitMismatch { .. } | Refusal::PermitsExceedCapacity { .. } => {
                            Try::Answer(tried)
                        }
                    },
                    _ => Try::Answer(tried),
                }
            },
            |_| async { Err(self.queue_refusal(&req.key).await) },
        )
        .await;
        waited.unwrap_or_else(|shed| Err(LeaseError::Overloaded(shed)))
    }

    /// One attempt, run to its end even if the client goes away meanwhile; a
    /// lease granted to a client that is gone is released at once.
    async fn try_acquire(
        &self,
        new: AcquireLock,
        token: LeaseToken,
    ) -> Result<Acquired, LeaseError> {
        let leases = self.leases.clone();
        let (reply, answer) = oneshot::channel();
        tokio::spawn(async move {
            let key = new.key.clone();
            let now = leases.now();
            let outcome = leases.store.locks().acquire(new, token, now).await;
            if let Err(Ok(AcquireOutcome::Granted(lease))) = reply.send(outcome) {
                // The client went away while its grant was being committed.
                let now = leases.now();
                let _ = leases
                    .store
                    .locks()
                    .release(&key, &lease.lease.token, now)
                    .await;
                leases.waiters.wake(&key);
            }
        });
        let outcome = answer.await.map_err(|_| {
            LeaseError::Internal("the acquire task ended without an answer".into())
        })??;
        match outcome {
            AcquireOutcome::Granted(lease) => Ok(Acquired::Granted(lease)),
            AcquireOutcome::Replayed(lease) => Ok(Acquired::Replayed(lease)),
            AcquireOutcome::Refused(refusal) => Err(Refused::Lock(refusal).into()),
        }
    }

    /// The live lease this caller's `Idempotency-Key` already holds, if any
    /// (the store makes the same check inside its grant transaction).
    pub(super) async fn replay(&self, new: &AcquireLock) -> Result<Option<Acquired>, LeaseError> {
        let Some(idem) = &new.idempotency_key else {
            return Ok(None);
        };
        let held = self
            .leases
            .store
            .locks()
            .get(&new.key, self.leases.now())
            .await?;
        let owner = new.owner.as_ref().map(|o| &o.name);
        // Another token's lease with the same key is none of this caller's.
        match held.into_iter().find(|l| {
            l.idempotency_key.as_deref() == Some(idem.as_str()) && l.owner.as_ref() == owner
        }) {
            Some(lease) if lease.lease.holder != new.holder.as_str() => {
                Err(Refused::IdempotencyMismatch {
                    holder: lease.lease.holder,
                }
                .into())
            }
            Some(lease) => Ok(Some(Acquired::Replayed(lease))),
            None => Ok(None),
        }
    }

    /// The refusal for a newcomer while others wait: the key's current holders.
    pub(super) async fn queue_refusal(&self, key: &LockKey) -> LeaseError {
        let now = self.leases.now();
        match self.leases.store.locks().get(key, now).await {
            Ok(holders) => {
                let available_at = holders
                    .iter()
                    .map(LockLease::expires_at)
                    .min()
                    .unwrap_or(now);
                Refused::Lock(Refusal::Held {
                    holders,
                    available_at,
                })
                .into()
            }
            Err(e) => e.into(),
        }
    }

    pub async fn renew(
        &self,
        key: &LockKey,
        token: &LeaseToken,
        ttl: Option<Ttl>,
        metadata: Option<Metadata>,
    ) -> Result<LockLease, LeaseError> {
        let now = self.leases.now();
        let lease = self
            .leases
            .store
            .locks()
            .renew(key, token, ttl, metadata, now)
            .await?;
        Metrics::inc(&self.leases.metrics.lock_renewals);
        Ok(lease)
    }

    pub async fn release(&self, key: &LockKey, token: &LeaseToken) -> Result<(), LeaseError> {
        let now = self.leases.now();
        self.leases.store.locks().release(key, token, now).await?;
        Metrics::inc(&self.leases.metrics.lock_releases);
        self.leases.waiters.wake(key);
        Ok(())
    }

    /// What `fencing_token` is to `key` now (`domain::fencing::check`).
    pub async fn check_fencing(
        &self,
        key: &LockKey,
        fencing_token: FencingToken,
    ) -> Result<Fencing, LeaseError> {
        let now = self.leases.now();
        Ok(self
            .leases
            .store
            .locks()
            .check_fencing(key, fencing_token, now)
            .await?)
    }

    pub async fn inspect(&self, key: &LockKey) -> Result<Vec<LockLease>, LeaseError> {
        let now = self.leases.now();
        let held = self.leases.store.locks().get(key, now).await?;
        if held.is_empty() {
            return Err(Missing::Lock.into());
        }
        Ok(held)
    }

    /// The newest `limit` events of `key` in the change log, newest first,
    /// and the revision they reflect.
    pub async fn history(
        &self,
        key: &LockKey,
        limit: PageLimit,
    ) -> Result<(Vec<Event>, Revision), LeaseError> {
        Ok(self.leases.store.locks().history(key, limit.get()).await?)
    }

    /// One page of the live leases under any of `prefixes`, which must be
    /// disjoint and in key order (as `auth::ApiToken::visible_prefixes` gives
    /// them): each is read in turn from the cursor on until the page is full,
    /// so the pages are the filtered list, in order, with nothing skipped.
    /// `after` is the last lease of the page before.
    pub async fn list_under(
        &self,
        prefixes: Vec<KeyPrefix>,
        limit: PageLimit,
        after: Option<ListCursor>,
    ) -> Result<LockPage, LeaseError> {
        let limit = limit.get();
        let now = self.leases.now();
        let queries = prefixes
            .into_iter()
            .map(|prefix| LockQuery {
                prefix: prefix.into_string(),
                after: after.clone(),
                limit: limit + 1,
            })
            .collect();
        let (mut items, revision) = self.leases.store.locks().list(queries, now).await?;
        let next = if items.len() > limit as usize {
            items.truncate(limit as usize);
            items.last().map(|l| ListCursor {
                key: l.key.clone(),
                fencing_token: l.lease.fencing_token,
            })
        } else {
            None
        };
        Ok(LockPage {
            items,
            next,
            revision,
        })
    }

    pub async fn force_release(&self, key: &LockKey) -> Result<u64, LeaseError> {
        let now = self.leases.now();
        let removed = self.leases.store.locks().force_release(key, now).await?;
        Metrics::inc(&self.leases.metrics.lock_force_releases);
        self.leases.waiters.wake(key);
        Ok(removed)
    }
}
