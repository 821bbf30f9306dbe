//! Waiters published for other servers on the same database: each server
//! keeps its waiters in memory (`leases::waiters`) and, where others share
//! the database, writes who joined and who left in batches, a few times a
//! second, so that any of them lists a key's whole queue. A row names its
//! server by id and by name; rows of a server not seen alive lately are
//! skipped by every read and deleted by the next publication, so a server
//! that died leaves no waiter behind. On a database of one server (SQLite)
//! nothing is written and every read answers nothing.

use super::StoreResult;
use super::hub::Store;
use super::rows::corrupt;
use super::sql::{Columns, Sql, args, one};
use crate::domain::LockMode;
use crate::domain::lock::prefix_upper_bound;
use crate::domain::waiting::{Queued, Waiting, WaitingKey};
use crate::domain::{At, Ms};

/// A server that has not recorded itself alive for this long (on the lease
/// clock the servers share) is not running: its waiters are not listed.
const ALIVE_WITHIN_MS: Ms = Ms::new(5_000);

/// The rows of a server not seen alive for this long are deleted (a server
/// held up a few seconds keeps its rows, and lists them again once seen).
const GONE_AFTER_MS: Ms = Ms::new(60_000);

/// A waiter's row: its id on its server, its key, and who it is.
#[derive(Debug, Clone)]
pub struct WaiterRow {
    pub id: i64,
    pub key: String,
    pub waiting: Waiting,
}

/// What a server publishes at once: who joined and who left since its last
/// publication, or (`afresh`) every waiter it has, replacing its rows.
#[derive(Debug, Clone, Default)]
pub struct Publication {
    pub joined: Vec<WaiterRow>,
    pub left: Vec<i64>,
    pub afresh: bool,
}

/// The rows of servers alive at `$2`, other than `$1`.
macro_rules! others {
    () => {
        "w.replica <> $1 AND EXISTS (SELECT 1 FROM replicas r \
         WHERE r.id = w.replica AND r.alive_at > $2)"
    };
}

/// A key's waiters on other servers, in the order they began to wait.
const QUEUE: &str = concat!(
    "SELECT holder, mode, max_holders, permits, keys, since, until, replica_name \
     FROM lock_waiters w WHERE key = $3 AND ",
    others!(),
    " ORDER BY since, replica, id"
);

/// The keys from `$3` (below `$4`) other servers' waiters wait for.
const KEYS_BELOW: &str = concat!(
    "SELECT key, count(*) AS waiters, min(since) AS since FROM lock_waiters w \
     WHERE key >= $3 AND key < $4 AND ",
    others!(),
    " GROUP BY key"
);

/// The keys from `$3` on, where no key bounds the prefix from above.
const KEYS_FROM: &str = concat!(
    "SELECT key, count(*) AS waiters, min(since) AS since FROM lock_waiters w \
     WHERE key >= $3 AND ",
    others!(),
    " GROUP BY key"
);

/// How many waiters of other servers wait for keys from `$3` below `$4`.
const COUNT_BELOW: &str = concat!(
    "SELECT count(*) AS n FROM lock_waiters w WHERE key >= $3 AND key < $4 AND ",
    others!()
);

/// How many wait for keys from `$3` on.
const COUNT_FROM: &str = concat!(
    "SELECT count(*) AS n FROM lock_waiters w WHERE key >= $3 AND ",
    others!()
);

impl Store {
    /// This server's id among the servers that share its database; `None`
    /// when it is the only one (SQLite).
    pub fn replica(&self) -> Option<String> {
        self.db.replica().map(str::to_owned)
    }

    /// The rows of the servers' waiters (`WaiterRows`).
    pub fn waiters(&self) -> WaiterRows<'_> {
        WaiterRows { store: self }
    }
}

/// The store's verbs on the waiters servers publish (`Store::waiters`).
#[derive(Clone, Copy)]
pub struct WaiterRows<'a> {
    store: &'a Store,
}

impl WaiterRows<'_> {
    /// Writes `publication` as this server's waiters (named `name`), and
    /// deletes the rows of servers not alive at `now`.
    pub async fn publish(self, name: &str, publication: Publication, now: At) -> StoreResult<()> {
        let Some(me) = self.store.replica() else {
            return Ok(());
        };
        let name = name.to_owned();
        self.store
            .background_write(move |c, _| {
                let (me, name, publication) = (me.clone(), name.clone(), publication.clone());
                Box::pin(async move { publish(c, &me, &name, &publication, now).await })
            })
            .await
    }

    /// The waiters other servers published for `key`, as they stand now.
    pub async fn others_queue(self, key: &str, now: At) -> StoreResult<Vec<Queued>> {
        let Some(me) = self.store.replica() else {
            return Ok(Vec::new());
        };
        self.store
            .read((me, key.to_owned()), move |c, (me, key)| {
                Box::pin(async move { queue(c, &me, &key, now).await })
            })
            .await
    }

    /// The keys under any of `prefixes` that other servers' waiters wait for.
    pub async fn others_waiting_keys(
        self,
        prefixes: Vec<String>,
        now: At,
    ) -> StoreResult<Vec<WaitingKey>> {
        let Some(me) = self.store.replica() else {
            return Ok(Vec::new());
        };
        self.store
            .read((me, prefixes), move |c, (me, prefixes)| {
                Box::pin(async move {
                    let mut keys = Vec::new();
                    for prefix in &prefixes {
                        keys.extend(waiting_keys(c, &me, prefix, now).await?);
                    }
                    Ok(keys)
                })
            })
            .await
    }
}

async fn publish(
    conn: &mut dyn Sql,
    me: &str,
    name: &str,
    publication: &Publication,
    now: At,
) -> StoreResult<()> {
    conn.execute(
        "DELETE FROM lock_waiters w WHERE NOT EXISTS (SELECT 1 FROM replicas r \
         WHERE r.id = w.replica AND r.alive_at > $1)",
        args![now - GONE_AFTER_MS],
    )
    .await?;
    conn.execute(
        "UPDATE replicas SET name = $2 WHERE id = $1 AND name IS DISTINCT FROM $2",
        args![me, name],
    )
    .await?;
    if publication.afresh {
        conn.execute("DELETE FROM lock_waiters WHERE replica = $1", args![me])
            .await?;
    }
    for id in &publication.left {
        conn.execute(
            "DELETE FROM lock_waiters WHERE replica = $1 AND id = $2",
            args![me, *id],
        )
        .await?;
    }
    for row in &publication.joined {
        let w = &row.waiting;
        conn.execute(
            "INSERT INTO lock_waiters (replica, id, key, holder, mode, max_holders, keys, \
             since, until, replica_name, permits) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (replica, id) DO NOTHING",
            args![
                me,
                row.id,
                &row.key,
                &w.holder,
                w.mode.as_str(),
                w.max_holders.map(|m| i64::from(m.get())),
                i64::from(w.keys),
                w.since,
                w.until,
                name,
                i64::from(w.permits.get()),
            ],
        )
        .await?;
    }
    Ok(())
}

async fn queue(conn: &mut dyn Sql, me: &str, key: &str, now: At) -> StoreResult<Vec<Queued>> {
    let rows = conn
        .rows(QUEUE, args![me, now - ALIVE_WITHIN_MS, key])
        .await?;
    rows.iter().map(queued).collect()
}

fn queued(row: &impl Columns) -> StoreResult<Queued> {
    let mode = row.text("mode")?;
    Ok(Queued {
        waiting: Waiting {
            holder: row.text("holder")?,
            mode: LockMode::parse(&mode).ok_or_else(|| corrupt("waiter mode"))?,
            max_holders: row
                .opt_int("max_holders")?
                .and_then(|m| u32::try_from(m).ok())
                .and_then(std::num::NonZeroU32::new),
            permits: u32::try_from(row.int("permits")?)
                .ok()
                .and_then(std::num::NonZeroU32::new)
                .ok_or_else(|| corrupt("waiter permits"))?,
            keys: u32::try_from(row.int("keys")?).map_err(|_| corrupt("waiter keys"))?,
            since: row.at("since")?,
            until: row.at("until")?,
        },
        replica: row.text("replica_name")?,
    })
}

async fn waiting_keys(
    conn: &mut dyn Sql,
    me: &str,
    prefix: &str,
    now: At,
) -> StoreResult<Vec<WaitingKey>> {
    let alive = now - ALIVE_WITHIN_MS;
    let rows = match prefix_upper_bound(prefix) {
        Some(upper) => {
            let args = args![me, alive, prefix, upper.as_str()];
            conn.rows(KEYS_BELOW, args).await?
        }
        None => conn.rows(KEYS_FROM, args![me, alive, prefix]).await?,
    };
    rows.iter()
        .map(|r| {
            Ok(WaitingKey {
                key: r.text("key")?,
                waiters: u64::try_from(r.int("waiters")?).map_err(|_| corrupt("count"))?,
                since: r.at("since")?,
            })
        })
        .collect()
}

/// How many waiters servers other than `me` published, alive at `now`, for
/// keys under any of `prefixes` (disjoint; `""` is every key).
pub(super) async fn count_others(
    conn: &mut dyn Sql,
    me: &str,
    prefixes: &[&str],
    now: At,
) -> StoreResult<u64> {
    let alive = now - ALIVE_WITHIN_MS;
    let mut n = 0;
    for prefix in prefixes {
        let row = match prefix_upper_bound(prefix) {
            Some(upper) => {
                let args = args![me, alive, *prefix, upper.as_str()];
                one(conn, COUNT_BELOW, args).await?
            }
            None => one(conn, COUNT_FROM, args![me, alive, *prefix]).await?,
        };
        n += u64::try_from(row.int("n")?).map_err(|_| corrupt("waiter count"))?;
    }
    Ok(n)
}
