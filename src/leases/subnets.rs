//! Subnet pools and reservations: time and tokens around the store's pool
//! and reservation verbs, over input the API has parsed.

use super::{LeaseError, Leases, new_token};
use crate::domain::At;
use crate::domain::Refused;
use crate::domain::Revision;
use crate::domain::cidr::Block;
use crate::domain::commands::{
    DeletePoolOutcome, PutPoolOutcome, ReservationQuery, ReserveOutcome, ReserveSubnet,
};
use crate::domain::inputs::{Labels, Metadata, PageLimit, ReservationId};
use crate::domain::names::{LeaseToken, PoolName, Ttl};
use crate::domain::pool_rules::Rules;
use crate::domain::subnet::{self, Pool, PoolUsage, Reservation};
use crate::store;
use crate::telemetry::Metrics;

#[derive(Debug, Clone, PartialEq)]
pub enum Reserved {
    /// One reservation per block asked for.
    Granted(Vec<Reservation>),
    Replayed(Vec<Reservation>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum PutPool {
    Created(PoolUsage),
    Unchanged(PoolUsage),
}

/// One page and the cursor of the next (`None` on the last page).
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
    /// The change-log revision the page reflects.
    pub revision: Revision,
}

pub struct SubnetService<'a> {
    pub(super) leases: &'a Leases,
}

impl SubnetService<'_> {
    fn now(&self) -> At {
        self.leases.now()
    }

    fn page<T>(
        mut items: Vec<T>,
        limit: u32,
        revision: Revision,
        cursor: impl Fn(&T) -> String,
    ) -> Page<T> {
        let next = (items.len() > limit as usize).then(|| {
            items.truncate(limit as usize);
            items.last().map(&cursor)
        });
        Page {
            items,
            next: next.flatten(),
            revision,
        }
    }

    pub async fn put_pool(
        &self,
        name: &PoolName,
        cidr: Block,
        parent: Option<PoolName>,
        rules: Rules,
        labels: Labels,
    ) -> Result<PutPool, LeaseError> {
        let now = self.now();
        let pool = Pool {
            name: name.as_str().to_owned(),
            cidr,
            labels: labels.into_map(),
            created_at: now,
            parent: parent.map(PoolName::into_string),
            // Set by the store from the parent's, as the effective rules are.
            depth: 0,
            rules,
        };
        match self.leases.store.pools().put(pool, now).await? {
            PutPoolOutcome::Created(usage) => Ok(PutPool::Created(usage)),
            PutPoolOutcome::Unchanged(usage) => Ok(PutPool::Unchanged(usage)),
            PutPoolOutcome::Conflict { existing, differs } => Err(Refused::PoolConflict {
                existing: Box::new(existing),
                differs,
            }
            .into()),
            PutPoolOutcome::InParent { parent, refused } => Err(Refused::InParent {
                parent,
                refused: Box::new(refused),
            }
            .into()),
        }
    }

    /// The pool and the next `limit` blocks of `len` (or of its default)
    /// reserves would take, in order; `None` when neither names a length.
    pub async fn free_blocks(
        &self,
        name: &PoolName,
        len: Option<u8>,
        limit: PageLimit,
    ) -> Result<(Pool, Option<(u8, Vec<Block>)>), LeaseError> {
        let pools = self.leases.store.pools();
        Ok(pools.free(name, len, limit.get(), self.now()).await?)
    }

    pub async fn pool(&self, name: &PoolName) -> Result<PoolUsage, LeaseError> {
        Ok(self.leases.store.pools().usage(name, self.now()).await?)
    }

    /// The pool and what its live reservations occupy, in address order,
    /// for its map.
    pub async fn occupancy(&self, name: &PoolName) -> Result<store::Occupancy, LeaseError> {
        Ok(self
            .leases
            .store
            .pools()
            .occupancy(name, self.now())
            .await?)
    }

    /// One page of the pools `visible` accepts, in name order, after the
    /// name `after`. Store pages are read until the page is full, so
    /// filtering keeps pagination exact.
    pub async fn list_pools(
        &self,
        limit: PageLimit,
        mut after: Option<String>,
        visible: impl Fn(&str) -> bool,
    ) -> Result<Page<Pool>, LeaseError> {
        let limit = limit.get();
        let wanted = limit as usize + 1;
        let mut items = Vec::new();
        // Pools change with no event: the first read's revision holds for
        // every chunk.
        let mut revision = None;
        loop {
            let (chunk, at) = self
                .leases
                .store
                .pools()
                .list(after.as_deref(), limit + 1)
                .await?;
            revision.get_or_insert(at);
            let exhausted = chunk.len() <= limit as usize;
            after = chunk.last().map(|p| p.name.clone());
            items.extend(chunk.into_iter().filter(|p| visible(&p.name)));
            if exhausted || items.len() >= wanted {
                break;
            }
        }
        items.truncate(wanted);
        let revision = revision.unwrap_or_default();
        Ok(Self::page(items, limit, revision, |p| {
            subnet::encode_cursor(p.name.as_bytes())
        }))
    }

    pub async fn delete_pool(&self, name: &PoolName) -> Result<(), LeaseError> {
        let now = self.now();
        match self.leases.store.pools().delete(name, now).await? {
            DeletePoolOutcome::Deleted => Ok(()),
            DeletePoolOutcome::InUse {
                reserved,
                allocated,
                children,
                clears_at,
            } => Err(Refused::PoolInUse {
                reserved,
                allocated,
                children,
                clears_at,
            }
            .into()),
        }
    }

    pub async fn reserve(&self, new: ReserveSubnet) -> Result<Reserved, LeaseError> {
        let tokens = (0..new.count.get()).map(|_| new_token()).collect();
        let now = self.now();
        let metrics = &self.leases.metrics;
        match self
            .leases
            .store
            .reservations()
            .reserve(new, tokens, now)
            .await?
        {
            ReserveOutcome::Granted(r) => {
                for _ in &r {
                    Metrics::inc(&metrics.reservation_grants);
                }
                Ok(Reserved::Granted(r))
            }
            ReserveOutcome::Replayed(r) => Ok(Reserved::Replayed(r)),
            ReserveOutcome::Invalid(e) => Err(Refused::Invalid(e).into()),
            ReserveOutcome::Refused(refusal) => {
                Metrics::inc(&metrics.reservation_conflicts);
                Err(Refused::Subnet(refusal).into())
            }
        }
    }

    /// One page of the pool's live reservations, in address order, after
    /// the first address `after`.
    pub async fn list(
        &self,
        pool: &PoolName,
        limit: PageLimit,
        after: Option<[u8; 16]>,
    ) -> Result<Page<Reservation>, LeaseError> {
        let limit = limit.get();
        let query = ReservationQuery {
            pool: pool.as_str().to_owned(),
            after: after.map(|a| a.to_vec()),
            limit: limit + 1,
        };
        let (items, revision) = self
            .leases
            .store
            .reservations()
            .list(&query, self.now())
            .await?;
        Ok(Self::page(items, limit, revision, |r| {
            subnet::encode_cursor(&r.subnet.start_bytes())
        }))
    }

    pub async fn get(
        &self,
        pool: &PoolName,
        id: &ReservationId,
    ) -> Result<Reservation, LeaseError> {
        let now = self.now();
        Ok(self.leases.store.reservations().get(pool, id, now).await?)
    }

    /// Extends a reserved reservation; an allocated one has no expiry to
    /// extend and comes back unchanged.
    pub async fn renew(
        &self,
        pool: &PoolName,
        id: &ReservationId,
        token: &LeaseToken,
        ttl: Option<Ttl>,
        metadata: Option<Metadata>,
    ) -> Result<Reservation, LeaseError> {
        let now = self.now();
        let store = &self.leases.store;
        Ok(store
            .reservations()
            .renew(pool, id, token, ttl, metadata, now)
            .await?)
    }

    pub async fn confirm(
        &self,
        pool: &PoolName,
        id: &ReservationId,
        token: &LeaseToken,
    ) -> Result<Reservation, LeaseError> {
        let now = self.now();
        let store = &self.leases.store;
        let r = store.reservations().confirm(pool, id, token, now).await?;
        Metrics::inc(&self.leases.metrics.reservation_confirms);
        Ok(r)
    }

    pub async fn release(
        &self,
        pool: &PoolName,
        id: &ReservationId,
        token: &LeaseToken,
    ) -> Result<(), LeaseError> {
        let now = self.now();
        let store = &self.leases.store;
        store.reservations().release(pool, id, token, now).await?;
        Metrics::inc(&self.leases.metrics.reservation_releases);
        Ok(())
    }

    pub async fn force_release(
        &self,
        pool: &PoolName,
        id: &ReservationId,
    ) -> Result<(), LeaseError> {
        let now = self.now();
        let store = &self.leases.store;
        store.reservations().force_release(pool, id, now).await?;
        Metrics::inc(&self.leases.metrics.reservation_releases);
        Ok(())
    }
}
