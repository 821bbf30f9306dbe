//! A key's capacity kept on the server: store or change it (waking the
//! key's waiters, whom a larger capacity or a release may now let in),
//! read it with the permits held and asked, delete it; and the check that
//! answers an acquire asking more permits than the capacity at once,
//! before it queues behind others.

use std::num::NonZeroU32;

use super::LeaseError;
use super::locks::LockService;
use crate::domain::capacity::CapacityView;
use crate::domain::commands::{AcquireLock, LeaseOwner};
use crate::domain::lock::Refusal;
use crate::domain::names::LockKey;
use crate::domain::{Missing, Refused};

impl LockService<'_> {
    /// Stores `permits` as `key`'s capacity (`true`: it had none) or
    /// changes it, and wakes the head of its queue; nothing held is revoked.
    pub async fn put_capacity(
        &self,
        key: &LockKey,
        permits: NonZeroU32,
        owner: Option<LeaseOwner>,
    ) -> Result<(bool, CapacityView), LeaseError> {
        let leases = self.leases;
        let (created, stored) = leases
            .store
            .locks()
            .put_capacity(key, permits, owner, leases.now())
            .await?;
        leases.waiters.wake(key);
        let waiting = self.waiting_permits(key).await?;
        let view = CapacityView {
            permits: stored.capacity.permits,
            held: stored.held,
            waiting,
        };
        Ok((created, view))
    }

    /// `key`'s stored capacity, the permits its live leases hold and those
    /// its waiters (on every server) ask for.
    pub async fn capacity(&self, key: &LockKey) -> Result<CapacityView, LeaseError> {
        let leases = self.leases;
        let stored = leases.store.locks().capacity(key, leases.now()).await?;
        let stored = stored.ok_or(Refused::Missing(Missing::Capacity))?;
        Ok(CapacityView {
            permits: stored.capacity.permits,
            held: stored.held,
            waiting: self.waiting_permits(key).await?,
        })
    }

    /// Deletes `key`'s capacity while nothing is held of it.
    pub async fn delete_capacity(&self, key: &LockKey) -> Result<(), LeaseError> {
        let leases = self.leases;
        leases
            .store
            .locks()
            .delete_capacity(key, leases.now())
            .await?;
        leases.waiters.wake(key);
        Ok(())
    }

    /// The refusal of an acquire of more than one permit that exceeds the
    /// key's stored capacity: answered at once, not after a wait in line.
    /// (Without a stored capacity the grant's own decision answers it.)
    pub(super) async fn exceeds_capacity(&self, new: &AcquireLock) -> Result<(), LeaseError> {
        if new.permits == NonZeroU32::MIN {
            return Ok(());
        }
        let leases = self.leases;
        let stored = leases
            .store
            .locks()
            .capacity(&new.key, leases.now())
            .await?;
        match stored {
            Some(s) if new.permits > s.capacity.permits => {
                Err(Refused::Lock(Refusal::PermitsExceedCapacity {
                    permits: new.permits,
                    capacity: s.capacity.permits,
                })
                .into())
            }
            _ => Ok(()),
        }
    }

    /// The permits `key`'s waiters ask for, on every server.
    async fn waiting_permits(&self, key: &LockKey) -> Result<u64, LeaseError> {
        let queue = self.leases.waiting().queue(key).await?;
        Ok(queue
            .iter()
            .map(|q| u64::from(q.waiting.permits.get()))
            .sum())
    }
}
