//! Several keys at once, all or none: one request is granted every key of
//! its set, each with its own lease, or none of them. With `wait_ms` it
//! queues on every key at once, in one global arrival order across the
//! keys' queues, and tries only when it is first in all of them; so two
//! clients asking for overlapping sets in opposite orders never deadlock,
//! and nobody ever holds part of a set (each try is one transaction).

use super::turns::{Asking, Try, take_turns};
use super::{Acquired, LeaseError, Leases, new_token};
use crate::domain::Refused;
use crate::domain::commands::{AcquireLock, GrantedSet};
use crate::domain::inputs::KeySet;
use crate::domain::lock::Refusal;
use crate::domain::names::{LeaseToken, LockKey};
use crate::domain::{At, Ms};
use crate::store;
use crate::telemetry::Metrics;

pub struct LockSetService<'a> {
    pub(super) leases: &'a Leases,
}

/// A set that was not granted: the key it names (or `keys`), and why.
pub type SetRefused = (String, LeaseError);

/// One try's refusal: the key, when waiting may cure it, and the error.
struct Tried {
    key: String,
    clears_at: Option<At>,
    error: LeaseError,
}

impl LockSetService<'_> {
    /// `template` names everything but the key; every key of `keys` gets a
    /// lease of its own, or none does.
    pub async fn acquire(
        &self,
        keys: KeySet,
        template: AcquireLock,
        wait_ms: Ms,
    ) -> Result<GrantedSet, SetRefused> {
        let keys = keys.keys();
        // Drawn once: every try of this request grants the same tokens.
        let set: Vec<(AcquireLock, LeaseToken)> = keys
            .iter()
            .map(|key| {
                let lock = AcquireLock {
                    key: key.clone(),
                    ..template.clone()
                };
                (lock, new_token())
            })
            .collect();
        // A retry of a live set is answered at once, even while others wait.
        if keys.iter().any(|k| self.leases.waiters.is_queued(k))
            && let Some(replay) = self
                .replay(&set)
                .await
                .map_err(|e| (keys[0].to_string(), e))?
        {
            return Ok(replay);
        }
        let result = self.acquire_or_wait(keys, set, wait_ms).await;
        let metrics = &self.leases.metrics;
        match &result {
            Ok(granted) if !granted.replayed => {
                Metrics::add(&metrics.lock_grants, granted.leases.len() as u64)
            }
            Ok(_) => {}
            Err((key, LeaseError::Refused(Refused::SetKey { .. }))) => {
                Metrics::inc(&metrics.lock_conflicts);
                super::activity::note_refusal(&self.leases.prefixes, key);
            }
            Err(_) => {}
        }
        result
    }

    /// Every lease of the set, if each is already this caller's by its
    /// `Idempotency-Key` (the store checks the same in its transaction).
    async fn replay(
        &self,
        set: &[(AcquireLock, LeaseToken)],
    ) -> Result<Option<GrantedSet>, LeaseError> {
        let mut leases = Vec::with_capacity(set.len());
        for (new, _) in set {
            match self.leases.locks().replay(new).await? {
                Some(Acquired::Replayed(lease)) => leases.push(lease),
                _ => return Ok(None),
            }
        }
        Ok(Some(GrantedSet {
            leases,
            replayed: true,
        }))
    }

    async fn acquire_or_wait(
        &self,
        keys: &[LockKey],
        set: Vec<(AcquireLock, LeaseToken)>,
        wait_ms: Ms,
    ) -> Result<GrantedSet, SetRefused> {
        let leases = self.leases;
        let refused_for = |key: LockKey| async move {
            let error = leases.locks().queue_refusal(&key).await;
            (key.into_string(), error)
        };
        if wait_ms == Ms::ZERO {
            if let Some(key) = keys.iter().find(|k| leases.waiters.is_queued(k)) {
                return Err(refused_for(key.clone()).await);
            }
            return self.try_acquire(set).await.map_err(|t| (t.key, t.error));
        }
        let names: Vec<String> = keys.iter().map(LockKey::to_string).collect();
        let asking = &set[0].0;
        let who = Asking {
            holder: asking.holder.as_str(),
            mode: asking.mode,
            max_holders: asking.max_holders,
            permits: asking.permits,
        };
        let waited = take_turns(
            leases,
            &names,
            wait_ms,
            who,
            || async {
                match self.try_acquire(set.clone()).await {
                    Err(Tried {
                        key,
                        clears_at: Some(clears_at),
                        error,
                    }) => Try::Until {
                        clears_at,
                        answer: Err((key, error)),
                    },
                    done => Try::Answer(done.map_err(|t| (t.key, t.error))),
                }
            },
            |i| async move { Err(refused_for(keys[i].clone()).await) },
        )
        .await;
        match waited {
            Ok(answer) => answer,
            Err(shed) => Err((keys[0].to_string(), LeaseError::Overloaded(shed))),
        }
    }

    /// One try of the whole set, in one transaction.
    async fn try_acquire(&self, set: Vec<(AcquireLock, LeaseToken)>) -> Result<GrantedSet, Tried> {
        let now = self.leases.now();
        let first = set
            .first()
            .map(|(l, _)| l.key.as_str().to_owned())
            .unwrap_or_default();
        match self.leases.store.locks().acquire_set(set, now).await {
            Ok(granted) => Ok(granted),
            Err(store::Error::Refused(Refused::SetKey { key, refusal })) => Err(Tried {
                key: key.clone(),
                clears_at: match &refusal {
                    Refusal::Held { available_at, .. } => Some(*available_at),
                    Refusal::Delayed { until } => Some(*until),
                    Refusal::LimitMismatch { .. } | Refusal::PermitsExceedCapacity { .. } => None,
                },
                error: Refused::SetKey { key, refusal }.into(),
            }),
            Err(e) => Err(Tried {
                key: first,
                clears_at: None,
                error: e.into(),
            }),
        }
    }
}
