//! The `Store` trait over the PostgreSQL transactions of the sibling modules.

use async_trait::async_trait;
use tokio::sync::broadcast;

use super::PostgresStore;
use crate::domain::Millis;
use crate::domain::lock::LockLease;
use crate::domain::subnet::{Pool, PoolUsage, Reservation};
use crate::store::{
    AcquireOutcome, DeletePoolOutcome, KeyEvent, LiveLeases, LockQuery, NewLock, NewReservation,
    PutPoolOutcome, ReservationQuery, ReserveOutcome, Resumed, Store, StoreError, StoreResult,
};
use crate::telemetry::StoreStats;

#[async_trait]
impl Store for PostgresStore {
    async fn acquire_lock(&self, lock: NewLock, now: Millis) -> StoreResult<AcquireOutcome> {
        self.acquire_lock_tx(lock, now).await
    }

    async fn renew_lock(
        &self,
        key: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<LockLease> {
        self.renew_lock_tx(key, token, ttl_ms, now).await
    }

    async fn release_lock(&self, key: &str, token: &str, now: Millis) -> StoreResult<()> {
        self.release_lock_tx(key, token, now).await
    }

    async fn get_lock(&self, key: &str, now: Millis) -> StoreResult<Vec<LockLease>> {
        self.live_locks_of(key, now).await
    }

    async fn list_locks(&self, query: &LockQuery, now: Millis) -> StoreResult<Vec<LockLease>> {
        self.list_locks_page(query, now).await
    }

    async fn force_release_lock(&self, key: &str, now: Millis) -> StoreResult<u64> {
        self.force_release_tx(key, now).await
    }

    async fn reap_locks(&self, now: Millis, batch: u32) -> StoreResult<Vec<String>> {
        self.reap_locks_batch(now, batch).await
    }

    async fn put_pool(&self, pool: Pool, now: Millis) -> StoreResult<PutPoolOutcome> {
        self.put_pool_tx(pool, now).await
    }

    async fn get_pool_usage(&self, name: &str, now: Millis) -> StoreResult<PoolUsage> {
        self.pool_usage_tx(name, now).await
    }

    async fn list_pools(&self, after: Option<&str>, limit: u32) -> StoreResult<Vec<Pool>> {
        self.list_pools_page(after, limit).await
    }

    async fn delete_pool(&self, name: &str, now: Millis) -> StoreResult<DeletePoolOutcome> {
        self.delete_pool_tx(name, now).await
    }

    async fn reserve_subnet(
        &self,
        new: NewReservation,
        now: Millis,
    ) -> StoreResult<ReserveOutcome> {
        self.reserve_tx(new, now).await
    }

    async fn renew_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<Reservation> {
        self.renew_reservation_tx(pool, id, token, ttl_ms, now)
            .await
    }

    async fn confirm_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        self.confirm_reservation_tx(pool, id, token, now).await
    }

    async fn release_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self.remove_live(pool, id, Some(token), now).await? {
            true => Ok(()),
            false => Err(StoreError::LeaseLost),
        }
    }

    async fn get_reservation(&self, pool: &str, id: &str, now: Millis) -> StoreResult<Reservation> {
        self.get_reservation_row(pool, id, now).await
    }

    async fn list_reservations(
        &self,
        query: &ReservationQuery,
        now: Millis,
    ) -> StoreResult<Vec<Reservation>> {
        self.list_reservations_page(query, now).await
    }

    async fn force_release_reservation(
        &self,
        pool: &str,
        id: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self.remove_live(pool, id, None, now).await? {
            true => Ok(()),
            false => Err(StoreError::NotFound),
        }
    }

    async fn reap_reservations(&self, now: Millis, batch: u32) -> StoreResult<u64> {
        self.reap_reservations_batch(now, batch).await
    }

    async fn record_alive(&self, now: Millis) -> StoreResult<()> {
        self.record_replica_alive(now).await
    }

    async fn resume_after_downtime(&self, _proposed: Millis) -> StoreResult<Resumed> {
        self.resume_if_all_were_down().await
    }

    async fn live_leases_of(&self, owner: &str, now: Millis) -> StoreResult<u64> {
        let mut conn = self.pool.acquire().await?;
        super::owners::count_live(&mut conn, owner, now).await
    }

    async fn live_leases(&self, now: Millis) -> StoreResult<LiveLeases> {
        let (locks, reservations): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM lock_leases WHERE expires_at > $1), \
             (SELECT count(*) FROM subnet_reservations \
              WHERE expires_at IS NULL OR expires_at > $1)",
        )
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        Ok(LiveLeases {
            locks: u64::try_from(locks).unwrap_or(0),
            reservations: u64::try_from(reservations).unwrap_or(0),
        })
    }

    fn stats(&self) -> Option<&StoreStats> {
        Some(&self.stats)
    }

    fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        Some(self.events.subscribe())
    }

    async fn close(&self) {
        self.leave_replicas().await;
        self.listener.abort();
        self.pool.close().await;
    }
}
