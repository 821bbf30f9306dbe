//! Subnet pools and reservations: validation, time and tokens around the
//! store's pool and reservation verbs.

use std::collections::BTreeMap;

use super::{LeaseError, Leases, new_token};
use crate::domain::names::PoolName;
use crate::domain::subnet::{self, Pool, PoolUsage, Reservation};
use crate::domain::{InvalidInput, Millis, validate};
use crate::store::{
    DeletePoolOutcome, PutPoolOutcome, ReservationQuery, ReserveOutcome, ReserveSubnet, StoreError,
};
use crate::telemetry::Metrics;

#[derive(Debug, Clone, PartialEq)]
pub enum Reserved {
    Granted(Reservation),
    Replayed(Reservation),
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
    pub revision: i64,
}

pub struct SubnetService<'a> {
    pub(super) leases: &'a Leases,
}

/// On the reservation routes "not found" is about the reservation.
fn reservation_error(e: StoreError) -> LeaseError {
    match e {
        StoreError::NotFound => LeaseError::ReservationNotFound,
        e => e.into(),
    }
}

/// An id this server never issues names no reservation at all: not found,
/// where a lapsed or released one is a lost lease.
fn issued_id(id: &str) -> Result<(), LeaseError> {
    match subnet::parse_reservation_id(id) {
        Some(_) => Ok(()),
        None => Err(LeaseError::ReservationNotFound),
    }
}

impl SubnetService<'_> {
    fn now(&self) -> Millis {
        self.leases.now()
    }

    /// The page size asked for, and one more to learn whether a next page exists.
    fn page_limit(&self, limit: Option<u32>) -> Result<u32, LeaseError> {
        let max = self.leases.limits.max_page;
        let limit = limit.unwrap_or(100.min(max));
        validate::page_limit(limit, max)?;
        Ok(limit)
    }

    fn page<T>(
        mut items: Vec<T>,
        limit: u32,
        revision: i64,
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
        cidr: &str,
        labels: Option<BTreeMap<String, String>>,
    ) -> Result<PutPool, LeaseError> {
        let cidr = subnet::cidr("cidr", cidr)?;
        let labels = labels.unwrap_or_default();
        subnet::labels(&labels)?;
        let now = self.now();
        let pool = Pool {
            name: name.as_str().to_owned(),
            cidr,
            labels,
            created_at: now,
        };
        match self.leases.store.put_pool(pool, now).await? {
            PutPoolOutcome::Created(usage) => Ok(PutPool::Created(usage)),
            PutPoolOutcome::Unchanged(usage) => Ok(PutPool::Unchanged(usage)),
            PutPoolOutcome::Conflict { existing, differs } => {
                Err(LeaseError::PoolConflict { existing, differs })
            }
        }
    }

    pub async fn pool(&self, name: &PoolName) -> Result<PoolUsage, LeaseError> {
        Ok(self.leases.store.get_pool_usage(name, self.now()).await?)
    }

    /// One page of the pools `visible` accepts, in name order. Store pages
    /// are read until the page is full, so filtering keeps pagination exact.
    pub async fn list_pools(
        &self,
        limit: Option<u32>,
        cursor: Option<&str>,
        visible: impl Fn(&str) -> bool,
    ) -> Result<Page<Pool>, LeaseError> {
        let limit = self.page_limit(limit)?;
        let mut after = cursor
            .map(subnet::decode_cursor)
            .transpose()?
            .map(|bytes| String::from_utf8(bytes).map_err(|_| cursor_error()))
            .transpose()?;
        let wanted = limit as usize + 1;
        let mut items = Vec::new();
        // Pools change with no event: the first read's revision holds for
        // every chunk.
        let mut revision = None;
        loop {
            let (chunk, at) = self
                .leases
                .store
                .list_pools(after.as_deref(), limit + 1)
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
        match self.leases.store.delete_pool(name, now).await? {
            DeletePoolOutcome::Deleted => Ok(()),
            DeletePoolOutcome::InUse {
                reserved,
                allocated,
                clears_at,
            } => Err(LeaseError::PoolInUse {
                reserved,
                allocated,
                clears_at,
                now: self.leases.at(now),
            }),
        }
    }

    pub async fn reserve(&self, new: ReserveSubnet) -> Result<Reserved, LeaseError> {
        let token = new_token();
        let now = self.now();
        let metrics = &self.leases.metrics;
        match self.leases.store.reserve_subnet(new, token, now).await? {
            ReserveOutcome::Granted(r) => {
                Metrics::inc(&metrics.reservation_grants);
                Ok(Reserved::Granted(r))
            }
            ReserveOutcome::Replayed(r) => Ok(Reserved::Replayed(r)),
            ReserveOutcome::Invalid(e) => Err(e.into()),
            ReserveOutcome::Refused(refusal) => {
                Metrics::inc(&metrics.reservation_conflicts);
                Err(LeaseError::SubnetRefused {
                    refusal,
                    now: self.leases.at(now),
                })
            }
        }
    }

    pub async fn list(
        &self,
        pool: &PoolName,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Page<Reservation>, LeaseError> {
        let limit = self.page_limit(limit)?;
        let after = cursor.map(subnet::decode_cursor).transpose()?;
        if after.as_ref().is_some_and(|a| a.len() != 16) {
            return Err(cursor_error().into());
        }
        let query = ReservationQuery {
            pool: pool.as_str().to_owned(),
            after,
            limit: limit + 1,
        };
        let (items, revision) = self
            .leases
            .store
            .list_reservations(&query, self.now())
            .await?;
        Ok(Self::page(items, limit, revision, |r| {
            subnet::encode_cursor(&r.subnet.start_bytes())
        }))
    }

    pub async fn get(&self, pool: &PoolName, id: &str) -> Result<Reservation, LeaseError> {
        let now = self.now();
        (self.leases.store.get_reservation(pool, id, now).await).map_err(reservation_error)
    }

    /// Extends a reserved reservation; an allocated one has no expiry to
    /// extend and comes back unchanged.
    pub async fn renew(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Reservation, LeaseError> {
        issued_id(id)?;
        if let Some(ttl) = ttl_ms {
            validate::ttl("ttl_ms", ttl, self.leases.limits.max_ttl_ms)?;
        }
        if let Some(m) = &metadata {
            validate::metadata(m)?;
        }
        let now = self.now();
        let store = &self.leases.store;
        (store
            .renew_reservation(pool, id, token, ttl_ms, metadata, now)
            .await)
            .map_err(reservation_error)
    }

    pub async fn confirm(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
    ) -> Result<Reservation, LeaseError> {
        issued_id(id)?;
        let now = self.now();
        let store = &self.leases.store;
        let r =
            (store.confirm_reservation(pool, id, token, now).await).map_err(reservation_error)?;
        Metrics::inc(&self.leases.metrics.reservation_confirms);
        Ok(r)
    }

    pub async fn release(&self, pool: &PoolName, id: &str, token: &str) -> Result<(), LeaseError> {
        issued_id(id)?;
        let now = self.now();
        let store = &self.leases.store;
        (store.release_reservation(pool, id, token, now).await).map_err(reservation_error)?;
        Metrics::inc(&self.leases.metrics.reservation_releases);
        Ok(())
    }

    pub async fn force_release(&self, pool: &PoolName, id: &str) -> Result<(), LeaseError> {
        let now = self.now();
        let store = &self.leases.store;
        (store.force_release_reservation(pool, id, now).await).map_err(reservation_error)?;
        Metrics::inc(&self.leases.metrics.reservation_releases);
        Ok(())
    }
}

fn cursor_error() -> InvalidInput {
    InvalidInput::new("cursor", "is not a cursor this server issued")
}
