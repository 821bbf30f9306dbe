//! The reaper only tidies: it deletes expired rows in small batches, wakes the
//! waiters of their keys and counts what it removed. Correctness never waits
//! for it; every grant treats expired rows as absent by itself.
//!
//! It also announces expiries: each row it deletes records its event in the
//! same transaction (a lease kept by its lock delay is announced when it
//! expires, before its row goes), so an expiry that no grant meets is in the
//! change log one interval after it happened. It prunes the change log last.
//!
//! Before its first pass deletes anything it writes into the rows the fresh
//! TTLs a start left to be read (rule 7, `store::expiry`).
//!
//! Its deletes share the one writer with the requests: after each full batch
//! it rests `REST` times as long as the batch took, so a backlog of expired
//! rows takes at most a quarter of the writer's time (the batch's time
//! includes its wait for the writer, so the busier the writer, the longer
//! the rest) and requests never queue behind a run of batches.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::leases::Leases;
use crate::store::{self, Settling, StoreResult};
use crate::telemetry::Metrics;

/// What one pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReapReport {
    pub locks_removed: u64,
    pub reservations_removed: u64,
    /// Expired sessions removed (their bound locks count in `locks_removed`).
    pub sessions_removed: u64,
    /// Group members removed: past their TTL, or their session's.
    pub members_removed: u64,
    pub batches: u32,
}

/// How many times as long as a batch took the reaper rests after it.
const REST: u32 = 3;

/// Rests after a batch that began at `started`, see `REST`.
async fn rest(started: Instant) {
    tokio::time::sleep(started.elapsed() * REST).await;
}

/// Wakes the waiters of each key once.
fn wake(leases: &Leases, mut keys: Vec<String>) {
    keys.sort_unstable();
    keys.dedup();
    for key in &keys {
        leases.waiters.wake(key);
    }
}

/// One pass: batches of at most `batch` rows until none is left past its time.
pub async fn reap_once(leases: &Leases, batch: u32) -> StoreResult<ReapReport> {
    let mut report = ReapReport::default();
    reap_locks(leases, batch, &mut report).await?;
    // Expired reservations: their blocks go back to the pools' free space.
    // Before the sessions: an expired session goes once nothing is bound to
    // it, in this same pass.
    reap_reservations(leases, batch, &mut report).await?;
    // Group members past their own TTL (and those of expired sessions).
    reap_members(leases, batch, &mut report).await?;
    // Leases bound to expired sessions (absent to every grant already),
    // then the sessions themselves.
    reap_sessions(leases, batch, &mut report).await?;
    Ok(report)
}

async fn reap_locks(leases: &Leases, batch: u32, report: &mut ReapReport) -> StoreResult<()> {
    loop {
        let started = Instant::now();
        let keys = leases.store.locks().reap(leases.now(), batch).await?;
        if keys.is_empty() {
            return Ok(());
        }
        report.batches += 1;
        report.locks_removed += keys.len() as u64;
        Metrics::add(&leases.metrics.reaped_locks, keys.len() as u64);
        let full = keys.len() as u32 >= batch;
        wake(leases, keys);
        if !full {
            return Ok(());
        }
        // Let requests in between batches.
        rest(started).await;
    }
}

async fn reap_reservations(
    leases: &Leases,
    batch: u32,
    report: &mut ReapReport,
) -> StoreResult<()> {
    loop {
        let started = Instant::now();
        let removed = leases
            .store
            .reservations()
            .reap(leases.now(), batch)
            .await?;
        if removed == 0 {
            return Ok(());
        }
        report.batches += 1;
        report.reservations_removed += removed;
        Metrics::add(&leases.metrics.reaped_reservations, removed);
        if removed < u64::from(batch) {
            return Ok(());
        }
        rest(started).await;
    }
}

async fn reap_members(leases: &Leases, batch: u32, report: &mut ReapReport) -> StoreResult<()> {
    loop {
        let started = Instant::now();
        let removed = leases
            .store
            .groups()
            .reap_members(leases.now(), batch)
            .await?;
        if removed == 0 {
            return Ok(());
        }
        report.batches += 1;
        report.members_removed += removed;
        if removed < u64::from(batch) {
            return Ok(());
        }
        rest(started).await;
    }
}

async fn reap_sessions(leases: &Leases, batch: u32, report: &mut ReapReport) -> StoreResult<()> {
    loop {
        let started = Instant::now();
        let reaped = leases.store.sessions().reap(leases.now(), batch).await?;
        if reaped.keys.is_empty() && reaped.sessions == 0 && reaped.members == 0 {
            return Ok(());
        }
        report.batches += 1;
        report.locks_removed += reaped.keys.len() as u64;
        report.sessions_removed += reaped.sessions;
        report.members_removed += reaped.members;
        Metrics::add(&leases.metrics.reaped_locks, reaped.keys.len() as u64);
        Metrics::add(&leases.metrics.sessions.expiries, reaped.sessions);
        let full = reaped.keys.len() as u64 + reaped.sessions + reaped.members >= u64::from(batch);
        wake(leases, reaped.keys);
        if !full {
            return Ok(());
        }
        rest(started).await;
    }
}

/// What the change log keeps: every event younger than `age` and the
/// newest `count` whatever their age, whichever is more, but never more
/// than the newest `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Counted in whole milliseconds of the lease clock.
    pub age: Duration,
    pub count: u64,
    pub max: u64,
}

/// When and how much the reaper does.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub interval: Duration,
    pub batch: u32,
    pub retention: Retention,
}

/// How many rows one step of the rule-7 pass rewrites, in reaper batches:
/// a rewrite of `expires_at` costs a fraction of a delete and its event.
const SETTLE_BATCHES: u32 = 10;

/// Writes the fresh TTLs a start left to read from its window (rule 7) into
/// the rows, in paced steps like the reaper's batches, and closes the
/// window; answers how many rows were rewritten. Without a window, one read.
pub async fn settle_resumed(leases: &Leases, batch: u32) -> StoreResult<u64> {
    let batch = batch.saturating_mul(SETTLE_BATCHES);
    let mut at = Settling::start();
    let mut rewritten = 0;
    loop {
        let started = Instant::now();
        let step = leases.store.settle_resumed(at, batch).await?;
        rewritten += step.rewritten;
        match step.next {
            Some(next) => at = next,
            None => break,
        }
        rest(started).await;
    }
    if rewritten > 0 {
        tracing::info!(
            leases.resumed = rewritten,
            "fresh TTLs of the leases live at the last stop written into their rows"
        );
    }
    Ok(rewritten)
}

/// Prunes the change log down to `retention`, in batches of `batch`;
/// answers how many events went.
pub async fn prune_events(leases: &Leases, retention: Retention, batch: u32) -> StoreResult<u64> {
    let mut pruned = 0;
    loop {
        let started = Instant::now();
        let older_than = leases.now().saturating_sub(retention.age.into());
        let n = leases
            .store
            .log()
            .prune(older_than, retention.count, retention.max, batch)
            .await?;
        pruned += n;
        if n < u64::from(batch) {
            return Ok(pruned);
        }
        rest(started).await;
    }
}

/// Runs passes every `interval` until `stop` turns true, and records that the
/// server is alive at each tick (see rule 7: downtime does not steal leases).
/// A stop ends it at once, whatever call it is waiting on.
pub async fn run(leases: Leases, schedule: Schedule, mut stop: watch::Receiver<bool>) {
    let Schedule {
        interval,
        batch,
        retention,
    } = schedule;
    // The start recorded the server alive; the first pass comes one
    // interval later, like every other.
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let stopped = async {
        let _ = stop.wait_for(|stopping| *stopping).await;
    };
    tokio::pin!(stopped);
    loop {
        let round = async {
            ticker.tick().await;
            record_alive(&leases).await;
            // A long backlog takes many paced batches: the heartbeat goes on
            // at every tick meanwhile.
            let pass = async {
                // First, so that no reaper statement meets rows still waiting
                // for their fresh TTL.
                settle_resumed(&leases, batch).await?;
                let report = reap_once(&leases, batch).await?;
                prune_events(&leases, retention, batch).await?;
                Ok::<_, store::Error>(report)
            };
            tokio::pin!(pass);
            loop {
                tokio::select! {
                    pass = &mut pass => break pass,
                    _ = ticker.tick() => record_alive(&leases).await,
                }
            }
        };
        let pass = tokio::select! {
            pass = round => pass,
            () = &mut stopped => return,
        };
        match pass {
            Ok(report) if report.locks_removed + report.reservations_removed > 0 => {
                tracing::debug!(
                    reaper.removed = report.locks_removed,
                    reaper.reservations_removed = report.reservations_removed,
                    reaper.batches = report.batches,
                    "reaped expired leases"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "reaper pass failed"),
        }
    }
}

async fn record_alive(leases: &Leases) {
    if let Err(e) = leases.store.record_alive(leases.now()).await {
        tracing::warn!(error = %e, "cannot record that the server is alive");
    }
}
