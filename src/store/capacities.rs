//! A key's capacity kept on the server: store, change, read and delete it,
//! each written once for both dialects. Every write of a capacity holds
//! its key's lock (`LockName::Key`), as a grant does, so a grant decides
//! over the capacity as it stands and a change never crosses a grant. A
//! change records `capacity.changed` and wakes the key's waiters (through
//! `Effects::freed_keys`, on every replica): what is held plus what is
//! asked may fit now.

use std::num::NonZeroU32;

use super::capacity_rows::stored;
use super::dialect::Atomicity::OnKeys;
use super::dialect::Effects;
use super::events;
use super::limits::room_for_one;
use super::lock_names::LockName;
use super::locks::{Locks, get};
use super::sql::{Sql, args};
use super::write_time::WriteTime;
use super::{Error, StoreResult};
use crate::domain::At;
use crate::domain::capacity::{Capacity, capacity_event};
use crate::domain::commands::LeaseOwner;
use crate::domain::events::EventType;
use crate::domain::names::LockKey;
use crate::domain::refusal::{Missing, Refused};

/// A stored capacity and what the key's live leases hold of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCapacity {
    pub capacity: Capacity,
    /// The permits the live leases hold.
    pub held: u64,
}

impl Locks<'_> {
    /// Stores `permits` as the key's capacity (`true`: it had none), or
    /// changes it; the same number changes nothing. Nothing held is revoked.
    pub async fn put_capacity(
        self,
        key: &LockKey,
        permits: NonZeroU32,
        owner: Option<LeaseOwner>,
        now: At,
    ) -> StoreResult<(bool, StoredCapacity)> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Key(key.clone())]);
        self.store
            .write(on, (key.clone(), owner), move |c, fx, (key, owner)| {
                let at = at.clone();
                Box::pin(async move { put(c, fx, &key, permits, owner, at).await })
            })
            .await
    }

    /// The key's stored capacity, if any, with what is held of it.
    pub async fn capacity(self, key: &LockKey, now: At) -> StoreResult<Option<StoredCapacity>> {
        self.store
            .read(key.as_str().to_owned(), move |c, key| {
                Box::pin(async move {
                    let Some(capacity) = stored(c, &key).await? else {
                        return Ok(None);
                    };
                    let held = held(c, &key, now).await?;
                    Ok(Some(StoredCapacity { capacity, held }))
                })
            })
            .await
    }

    /// Deletes the key's capacity while nothing is held of it.
    pub async fn delete_capacity(self, key: &LockKey, now: At) -> StoreResult<()> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Key(key.clone())]);
        self.store
            .write(on, key.as_str().to_owned(), move |c, fx, key| {
                let at = at.clone();
                Box::pin(async move { delete(c, fx, &key, at.read()).await })
            })
            .await
    }
}

/// The permits the live leases of `key` hold at `now`, and how many leases.
async fn held_by(conn: &mut dyn Sql, key: &str, now: At) -> StoreResult<(u64, u64)> {
    let live = get(conn, key, now).await?;
    let permits = live.iter().map(|l| u64::from(l.permits.get())).sum();
    Ok((permits, live.len() as u64))
}

async fn held(conn: &mut dyn Sql, key: &str, now: At) -> StoreResult<u64> {
    Ok(held_by(conn, key, now).await?.0)
}

async fn put(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    key: &str,
    permits: NonZeroU32,
    owner: Option<LeaseOwner>,
    at: WriteTime,
) -> StoreResult<(bool, StoredCapacity)> {
    let now = at.read();
    let old = stored(conn, key).await?;
    let held = held(conn, key, now).await?;
    if let Some(old) = old.as_ref().filter(|o| o.permits == permits) {
        let capacity = old.clone();
        return Ok((false, StoredCapacity { capacity, held }));
    }
    let permits_arg = i64::from(permits.get());
    let created = old.is_none();
    let owner = match old {
        Some(old) => {
            conn.execute(
                "UPDATE lock_capacities SET permits = $2, changed_at = $3 WHERE key = $1",
                args![key, permits_arg, now],
            )
            .await?;
            old.owner
        }
        None => {
            room_for_one(conn, owner.as_ref(), now).await?;
            let owner = owner.map(|o| o.name);
            conn.execute(
                "INSERT INTO lock_capacities (key, permits, owner, created_at, changed_at) \
                 VALUES ($1, $2, $3, $4, $4)",
                args![key, permits_arg, owner.as_deref(), now],
            )
            .await?;
            owner
        }
    };
    let event = capacity_event(EventType::CapacityChanged, key, owner.as_deref(), now);
    events::record(conn, fx, &event).await?;
    fx.freed_keys.push(key.to_owned());
    let capacity = Capacity {
        key: key.to_owned(),
        permits,
        owner,
    };
    Ok((created, StoredCapacity { capacity, held }))
}

async fn delete(conn: &mut dyn Sql, fx: &mut Effects, key: &str, now: At) -> StoreResult<()> {
    let found = stored(conn, key)
        .await?
        .ok_or(Error::from(Missing::Capacity))?;
    let (held, holders) = held_by(conn, key, now).await?;
    if holders > 0 {
        return Err(Refused::CapacityInUse { held, holders }.into());
    }
    conn.execute("DELETE FROM lock_capacities WHERE key = $1", args![key])
        .await?;
    let event = capacity_event(EventType::CapacityDeleted, key, found.owner.as_deref(), now);
    events::record(conn, fx, &event).await?;
    fx.freed_keys.push(key.to_owned());
    Ok(())
}
