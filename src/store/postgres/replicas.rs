//! What the replicas know of each other's uptime. Rule 7 (downtime does not
//! steal leases) is about the service being down, not one replica: a replica
//! that starts while another is running gives no lease a fresh TTL.

use super::PostgresStore;
use crate::domain::Millis;
use crate::store::StoreResult;

/// A replica that has not recorded itself alive for this long is not running
/// (it records itself at every reaper tick).
const RUNNING_WITHIN_MS: Millis = 5_000;

impl PostgresStore {
    pub(super) async fn record_replica_alive(&self, now: Millis) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "INSERT INTO replicas (id, alive_at) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET alive_at = greatest(replicas.alive_at, $2)",
        )
        .bind(&self.replica)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE server_state SET alive_at = greatest(coalesce(alive_at, 0), $1) WHERE id = 1",
        )
        .bind(now)
        .execute(&mut *tx)
        .await?;
        self.commit(tx, (0, 0)).await
    }

    /// On start: when no other replica is running, leases live at the last
    /// recorded `alive_at` get a full TTL from `now` (as on SQLite).
    pub(super) async fn resume_if_all_were_down(&self, now: Millis) -> StoreResult<u64> {
        let mut tx = self.begin().await?;
        // Replicas starting together take turns here.
        let alive_at: Option<Millis> =
            sqlx::query_scalar("SELECT alive_at FROM server_state WHERE id = 1 FOR UPDATE")
                .fetch_one(&mut *tx)
                .await?;
        sqlx::query("DELETE FROM replicas WHERE alive_at <= $1")
            .bind(now - RUNNING_WITHIN_MS)
            .execute(&mut *tx)
            .await?;
        let others_running: bool = sqlx::query_scalar("SELECT exists(SELECT 1 FROM replicas)")
            .fetch_one(&mut *tx)
            .await?;
        let mut extended = 0;
        if let (Some(alive_at), false) = (alive_at, others_running) {
            // Allocated reservations have no expiry and are left alone.
            for table in ["lock_leases", "subnet_reservations"] {
                let sql = format!(
                    "UPDATE {table} SET expires_at = greatest(expires_at, $1 + ttl_ms) \
                     WHERE expires_at > $2"
                );
                extended += sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(now)
                    .bind(alive_at)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
        }
        self.commit(tx, (0, 0)).await?;
        self.record_replica_alive(now).await?;
        Ok(extended)
    }

    /// A replica stopping gracefully says so, so that the next one to start
    /// alone knows the service was down.
    pub(super) async fn leave_replicas(&self) {
        let left = sqlx::query("DELETE FROM replicas WHERE id = $1")
            .bind(&self.replica)
            .execute(&self.pool)
            .await;
        if let Err(e) = left {
            tracing::warn!(error = %e, "cannot record that this replica stopped");
        }
    }
}
