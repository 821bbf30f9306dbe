//! Rate limits: every transaction on them, written once for both dialects.
//!
//! Each write of a name (define, take, refund, delete) holds that name's
//! lock (`LockName::Limit`) for its transaction, so the takes of one limit
//! from any number of clients and replicas run one after another, each
//! reading the bucket's time and writing the next. The time a write decides
//! at is read from the lease clock once it holds the name (`WriteTime`), so
//! the times written to a row only grow, and being stored they outlive a
//! restart: nothing refills early.

use super::Error;
use super::StoreResult;
use super::dialect::Atomicity::OnKeys;
use super::dialect::Effects;
use super::events;
use super::hub::Store;
use super::limit_rows::{bucket, count, limit, view, write};
use super::limit_texts::{
    BUCKETS_OF, DELETE_BUCKETS_OF, DELETE_LIMIT, LIMIT_ROW, LIMITS, LIMITS_BELOW,
    forget_full_buckets,
};
use super::lock_names::LockName;
use super::owners::quota;
use super::sql::{Sql, args, one};
use super::write_time::WriteTime;
use crate::domain::Revision;
use crate::domain::commands::LeaseOwner;
use crate::domain::events::EventType;
use crate::domain::grant::{Quota, QuotaKind};
use crate::domain::limit::{
    Limit, LimitQuery, LimitView, Taken, forgettable, full_at, is_family, limit_event,
};
use crate::domain::lock::prefix_upper_bound;
use crate::domain::names::LimitName;
use crate::domain::rate::{RateLimit, Take};
use crate::domain::refusal::{Missing, OverQuota, Refused};
use crate::domain::time::At;

/// Full buckets of a family a take forgets at most, beside its own write.
const FORGET_AT_ONCE: i64 = 16;

/// The store's verbs on rate limits (`Store::limits`).
#[derive(Clone, Copy)]
pub struct Limits<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Store {
    /// The store's verbs on rate limits.
    pub fn limits(&self) -> Limits<'_> {
        Limits { store: self }
    }
}

impl Limits<'_> {
    /// Defines the limit (`true`), or changes its numbers keeping what was
    /// spent (`false`); the same numbers change nothing.
    pub async fn define(
        self,
        name: &LimitName,
        numbers: RateLimit,
        owner: Option<LeaseOwner>,
        now: At,
    ) -> StoreResult<(bool, LimitView)> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Limit(name.clone())]);
        self.store
            .write(on, (name.clone(), owner), move |c, fx, (name, owner)| {
                Box::pin(define(c, fx, name, numbers, owner, at.clone()))
            })
            .await
    }

    /// Takes `cost` tokens of the limit, or of its family's bucket of the
    /// name; a denial writes nothing.
    pub async fn take(self, name: &LimitName, cost: u64, now: At) -> StoreResult<Taken> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Limit(name.clone())]);
        self.store
            .write(on, name.clone(), move |c, _fx, name| {
                Box::pin(take(c, name, cost, at.clone()))
            })
            .await
    }

    /// Gives `cost` tokens back, never above a full bucket.
    pub async fn refund(self, name: &LimitName, cost: u64, now: At) -> StoreResult<LimitView> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Limit(name.clone())]);
        self.store
            .write(on, name.clone(), move |c, _fx, name| {
                Box::pin(refund(c, name, cost, at.clone()))
            })
            .await
    }

    /// A limit by name (under a family: its numbers, the name's bucket).
    pub async fn get(self, name: &LimitName, now: At) -> StoreResult<LimitView> {
        self.store
            .read(name.clone(), move |c, name| {
                Box::pin(async move {
                    let (bucket, _) = bucket(c, &name, now).await?;
                    Ok(view(&bucket, now))
                })
            })
            .await
    }

    /// A page of the limits defined by name, and the revision it reflects.
    pub async fn list(self, query: &LimitQuery) -> StoreResult<(Vec<Limit>, Revision)> {
        self.store
            .snapshot(query.clone(), move |c, query| {
                Box::pin(async move { list(c, &query).await })
            })
            .await
    }

    /// How many buckets of the family `family` are stored: those taken
    /// from and not yet forgotten.
    pub async fn buckets(self, family: &LimitName) -> StoreResult<u64> {
        self.store
            .read(family.clone(), move |c, family| {
                Box::pin(async move {
                    let n = one(c, BUCKETS_OF, args![family.as_str()]).await?;
                    count(&n, "n")
                })
            })
            .await
    }

    /// Deletes a limit defined by name (a family with its buckets); `by`
    /// names the API token that must have defined it, `None` any.
    pub async fn delete(self, name: &LimitName, by: Option<&str>, now: At) -> StoreResult<()> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Limit(name.clone())]);
        let args = (name.clone(), by.map(str::to_owned));
        self.store
            .write(on, args, move |c, fx, (name, by)| {
                let at = at.clone();
                Box::pin(async move { delete(c, fx, &name, by.as_deref(), at.read()).await })
            })
            .await
    }
}

async fn define(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    name: LimitName,
    numbers: RateLimit,
    owner: Option<LeaseOwner>,
    at: WriteTime,
) -> StoreResult<(bool, LimitView)> {
    let now = at.read();
    let row = conn.row(LIMIT_ROW, args![name.as_str()]).await?;
    let old = row.as_ref().map(limit).transpose()?;
    let (created, tat) = match &old {
        Some(o) if o.bucket_of.is_none() && o.numbers == numbers => {
            return Ok((false, view(o, now)));
        }
        Some(o) => (
            o.bucket_of.is_some(),
            o.numbers.change(&numbers, Some(o.tat), now),
        ),
        None => (true, full_at(now)),
    };
    if created {
        room_for_one(conn, owner.as_ref(), now).await?;
    }
    let defined = Limit {
        name: name.into_string(),
        numbers,
        tat,
        bucket_of: None,
        owner: owner.map(|o| o.name),
    };
    write(conn, &defined, now).await?;
    let owner = old.and_then(|o| o.owner).or(defined.owner.clone());
    let event = limit_event(
        EventType::LimitChanged,
        &defined.name,
        owner.as_deref(),
        now,
    );
    events::record(conn, fx, &event).await?;
    Ok((created, view(&defined, now)))
}

/// A limit defined by name counts in its creator's quota of live leases,
/// as a lock does, until it is deleted: a token at its quota defines none.
pub(super) async fn room_for_one(
    conn: &mut dyn Sql,
    owner: Option<&LeaseOwner>,
    now: At,
) -> StoreResult<()> {
    if let Quota::Counted { limit, current } = quota(conn, owner, now).await?
        && current >= u64::from(limit)
    {
        return Err(OverQuota {
            quota: QuotaKind::Leases,
            limit,
            current,
            needed: 1,
        }
        .into());
    }
    Ok(())
}

async fn take(conn: &mut dyn Sql, name: LimitName, cost: u64, at: WriteTime) -> StoreResult<Taken> {
    let now = at.read();
    let (mut bucket, _) = bucket(conn, &name, now).await?;
    match bucket.numbers.take(Some(bucket.tat), now, cost) {
        Take::Taken { tat, level } => {
            bucket.tat = tat;
            write(conn, &bucket, now).await?;
            if let Some(family) = &bucket.bucket_of {
                let forget = forget_full_buckets(conn.texts());
                conn.execute(forget, args![family.as_str(), now, FORGET_AT_ONCE])
                    .await?;
            }
            Ok(Taken { cost, level })
        }
        Take::Denied {
            retry_after_ms,
            level,
        } => Err(Refused::RateLimited {
            retry_after_ms,
            available: level.available,
        }
        .into()),
        Take::ExceedsBurst => Err(Refused::CostExceedsBurst {
            cost,
            burst: bucket.numbers.burst(),
        }
        .into()),
    }
}

async fn refund(
    conn: &mut dyn Sql,
    name: LimitName,
    cost: u64,
    at: WriteTime,
) -> StoreResult<LimitView> {
    let now = at.read();
    let (mut bucket, stored) = bucket(conn, &name, now).await?;
    let (tat, level) = bucket.numbers.refund(Some(bucket.tat), now, cost);
    bucket.tat = tat;
    if bucket.bucket_of.is_none() {
        write(conn, &bucket, now).await?;
    } else if forgettable(tat, now) {
        // A family's bucket that is full again is forgotten.
        if stored {
            conn.execute(DELETE_LIMIT, args![name.as_str()]).await?;
        }
    } else {
        write(conn, &bucket, now).await?;
    }
    Ok(LimitView {
        numbers: bucket.numbers,
        level,
    })
}

/// The limits under each prefix of the query in turn, until its limit.
async fn list(conn: &mut dyn Sql, query: &LimitQuery) -> StoreResult<Vec<Limit>> {
    let after = query.after.as_deref().unwrap_or("");
    let mut items = Vec::new();
    for prefix in &query.prefixes {
        let left = i64::from(query.limit) - items.len() as i64;
        if left <= 0 {
            break;
        }
        let upper = prefix_upper_bound(prefix);
        let sql = if upper.is_some() {
            LIMITS_BELOW
        } else {
            LIMITS
        };
        let args = args![prefix.as_str(), upper.as_deref(), after, left];
        for row in conn.rows(sql, args).await? {
            items.push(limit(&row)?);
        }
    }
    Ok(items)
}

async fn delete(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    name: &str,
    by: Option<&str>,
    now: At,
) -> StoreResult<()> {
    let row = conn.row(LIMIT_ROW, args![name]).await?;
    let found = row.as_ref().map(limit).transpose()?;
    let found = found
        .filter(|l| l.bucket_of.is_none())
        .ok_or(Error::from(Missing::Limit))?;
    if by.is_some_and(|by| found.owner.as_deref() != Some(by)) {
        return Err(Refused::NotLimitCreator.into());
    }
    conn.execute(DELETE_LIMIT, args![name]).await?;
    if is_family(name) {
        conn.execute(DELETE_BUCKETS_OF, args![name]).await?;
    }
    let event = limit_event(EventType::LimitDeleted, name, found.owner.as_deref(), now);
    events::record(conn, fx, &event).await
}
