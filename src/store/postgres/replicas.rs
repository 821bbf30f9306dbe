//! What the replicas know of each other: whether the service was down (rule 7
//! is about the service being down, not one replica: a replica that starts
//! while another is running gives no lease a fresh TTL), and where their
//! shared lease clock stands.
//!
//! The lease clock is shared through the database server's clock, used as a
//! reference only: every heartbeat records how far the database's clock is
//! ahead of the replica's lease clock, and a replica that starts while others
//! run starts its own lease clock at the database's clock minus that offset.
//! After that each replica's clock is monotonic, so a step of any wall clock,
//! the database server's included, moves no lease. Replicas agree within the
//! time a heartbeat takes to reach the database plus their monotonic clocks'
//! drift; each measures the disagreement at every heartbeat (the
//! `leasehold_replica_clock_skew_seconds` gauge) and warns past one second.
//! Who runs is also what `GET /v1/status` lists.

use std::sync::atomic::Ordering;

use sqlx::{Connection, PgConnection};

use super::PostgresStore;
use crate::domain::commands::RunningReplica;
use crate::domain::{At, Ms};
use crate::store::resume::resume;
use crate::store::{Applied, Resumed, StoreResult};

/// A replica that has not recorded itself alive for this long (on the
/// database's clock) is not running; it records itself at every reaper tick.
const RUNNING_WITHIN_MS: Ms = Ms::new(5_000);

/// Disagreement between replicas' lease clocks worth a warning.
const SKEW_WARNING_MS: Ms = Ms::new(1_000);

/// The database server's clock in unix milliseconds, read when the
/// statement runs.
const DB_CLOCK: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

impl PostgresStore {
    pub(super) async fn record_replica_alive(&self, now: At) -> StoreResult<()> {
        let mut conn = self.connections.take().await?;
        let done = self
            .connections
            .answered(self.record_alive_on(&mut conn, now))
            .await;
        conn.settle(done)
    }

    async fn record_alive_on(&self, conn: &mut PgConnection, now: At) -> StoreResult<()> {
        let mut tx = conn.begin().await?;
        let (offset, skew): (i64, Option<i64>) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "WITH me AS ( \
               INSERT INTO replicas (id, alive_at, db_seen_at, clock_offset_ms) \
               VALUES ($1, $2, {DB_CLOCK}, {DB_CLOCK} - $2) \
               ON CONFLICT (id) DO UPDATE SET alive_at = greatest(replicas.alive_at, $2), \
                 db_seen_at = excluded.db_seen_at, clock_offset_ms = excluded.clock_offset_ms \
               RETURNING clock_offset_ms, db_seen_at) \
             SELECT me.clock_offset_ms, \
               (SELECT max(abs(r.clock_offset_ms - me.clock_offset_ms)) FROM replicas r \
                WHERE r.id <> $1 AND r.db_seen_at > me.db_seen_at - $3) \
             FROM me"
        )))
        .bind(&self.replica)
        .bind(now.as_millis())
        .bind(RUNNING_WITHIN_MS.as_millis())
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE server_state SET alive_at = greatest(coalesce(alive_at, 0), $1) WHERE id = 1",
        )
        .bind(now.as_millis())
        .execute(&mut *tx)
        .await?;
        self.commit(tx).await?;
        let skew = skew.unwrap_or(0);
        self.stats.clock_skew_ms.store(skew, Ordering::Relaxed);
        if skew > SKEW_WARNING_MS.as_millis() {
            tracing::warn!(
                clock.skew_ms = skew,
                clock.offset_ms = offset,
                "replicas' lease clocks disagree by more than a second; restart the \
                 replica that is off once the database server's clock is steady"
            );
        }
        Ok(())
    }

    /// On start: takes the shared lease clock from the replicas running, or
    /// when none is, starts it at the database's clock and gives the leases
    /// live at the last recorded `alive_at` a full TTL from there.
    pub(super) async fn resume_if_all_were_down(&self) -> StoreResult<Resumed> {
        let mut conn = self.connections.take().await?;
        let done = self.connections.answered(self.resume_on(&mut conn)).await;
        conn.settle(done)
    }

    async fn resume_on(&self, conn: &mut PgConnection) -> StoreResult<Resumed> {
        let mut tx = conn.begin().await?;
        // Replicas starting together take turns here.
        sqlx::query("SELECT alive_at FROM server_state WHERE id = 1 FOR UPDATE")
            .execute(&mut *tx)
            .await?;
        let db_now: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT {DB_CLOCK}")))
            .fetch_one(&mut *tx)
            .await?;
        let db_now = At::from_millis(db_now);
        sqlx::query("DELETE FROM replicas WHERE db_seen_at <= $1")
            .bind((db_now - RUNNING_WITHIN_MS).as_millis())
            .execute(&mut *tx)
            .await?;
        let running: Option<i64> = sqlx::query_scalar(
            "SELECT clock_offset_ms FROM replicas ORDER BY db_seen_at DESC LIMIT 1",
        )
        .fetch_optional(&mut *tx)
        .await?;
        let (anchor, applied) = match running {
            Some(offset) => (db_now - Ms::new(offset), Applied::Nothing),
            None => (db_now, resume(&mut *tx, db_now).await?),
        };
        // Joins the running replicas, with the offset the refresh's own
        // duration gave: this replica's clock starts at `anchor` only now.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO replicas (id, alive_at, db_seen_at, clock_offset_ms) \
             VALUES ($1, $2, {DB_CLOCK}, {DB_CLOCK} - $2) \
             ON CONFLICT (id) DO UPDATE SET alive_at = $2, db_seen_at = excluded.db_seen_at, \
               clock_offset_ms = excluded.clock_offset_ms"
        )))
        .bind(&self.replica)
        .bind(anchor.as_millis())
        .execute(&mut *tx)
        .await?;
        self.commit(tx).await?;
        Ok(Resumed { anchor, applied })
    }

    /// The replicas seen alive lately (judged on the database's clock, as
    /// a start judges them), by id, this one among them.
    pub(super) async fn running_replicas(&self) -> StoreResult<Vec<RunningReplica>> {
        let mut conn = self.connections.take().await?;
        let done = self
            .connections
            .answered(async {
                let rows: Vec<(String, Option<String>, i64)> =
                    sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "SELECT id, name, alive_at FROM replicas \
                         WHERE db_seen_at > {DB_CLOCK} - $1 ORDER BY id"
                    )))
                    .bind(RUNNING_WITHIN_MS.as_millis())
                    .fetch_all(&mut *conn)
                    .await?;
                Ok(rows)
            })
            .await;
        let rows = conn.settle(done)?;
        Ok(rows
            .into_iter()
            .map(|(id, name, alive_at)| RunningReplica {
                this: id == self.replica,
                id,
                name,
                alive_at: At::from_millis(alive_at),
            })
            .collect())
    }

    /// A replica stopping gracefully says so, so that the next one to start
    /// alone knows the service was down.
    pub(super) async fn leave_replicas(&self) {
        let left = async {
            let mut conn = self.connections.take().await?;
            let done = self
                .connections
                .answered(async {
                    sqlx::query("DELETE FROM replicas WHERE id = $1")
                        .bind(&self.replica)
                        .execute(&mut *conn)
                        .await?;
                    Ok(())
                })
                .await;
            conn.settle(done)
        };
        if let Err(e) = left.await {
            tracing::warn!(error = %e, "cannot record that this replica stopped");
        }
    }
}
