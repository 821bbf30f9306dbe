//! Watching the change log: one reader per server follows the log in
//! revision order and fans each event out in memory to the watchers whose
//! filter selects it (`fanout`: each has a queue of `buffer` events); a
//! watcher reads the history it missed from the store first, then follows
//! the fan-out. Where the store hands over the events its own commits
//! recorded, in revision order (SQLite's single writer), the reader takes
//! them from there and reads the log only to fill what they miss.
//!
//! Where writes commit side by side (PostgreSQL), a later revision can be
//! committed before an earlier one. The reader delivers the contiguous
//! prefix of the log; at a gap it notes which of the database's transactions
//! were in progress and holds back until all of them have ended: the gap is
//! then filled, or it never will be (a rolled-back transaction) and is
//! skipped. So every watcher sees every event once, in revision order, on
//! every replica. Transactions of other databases on the same server never
//! hold it back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use super::fanout::Index;
use super::shed::Shed;
use crate::domain::Revision;
use crate::domain::events::Event;
use crate::store::{self, Horizon, Store, StoreError, StoreResult};
use crate::telemetry::PrefixActivity;

/// Events read from the store at once.
pub(super) const PAGE: u32 = 512;
/// How often the reader looks at the log when nothing woke it.
const POLL: Duration = Duration::from_secs(1);
/// How often a reader held at a gap looks whether it may go on.
const GAP_POLL: Duration = Duration::from_millis(10);
/// The least time between two reads of the log once commits keep coming:
/// under load one read takes every event committed meanwhile, not one read
/// per write.
const GATHER: Duration = Duration::from_millis(5);
/// How many reads in a row, each within `GATHER` of the one before, make a
/// load: below it (a quiet server, a few writes at once) each read runs as
/// soon as a commit wakes it, so a write is in the log's pages at once.
const BURST: u32 = 4;

/// Why a watch cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The events after the revision asked for are pruned; the oldest kept
    /// is `oldest`.
    #[error("the history before revision {oldest} is compacted")]
    Compacted { oldest: Revision },
    /// The revision asked for was never handed out.
    #[error("revision {since} is past the newest revision")]
    Future { since: Revision },
    /// The watch would read history, and the readers of history (or the
    /// client's share of them) are at their bound, or its first turn to
    /// read did not come in time: the server is saturated.
    #[error("overloaded: too many {}", .0.as_str())]
    Overloaded(Shed),
    /// Storage failed the read of the history.
    #[error(transparent)]
    Store(StoreError),
}

impl From<store::Error> for WatchError {
    fn from(error: store::Error) -> Self {
        match error {
            store::Error::Storage(failed) => WatchError::Store(failed),
            // Reading the change log refuses nothing.
            store::Error::Refused(refused) => WatchError::Store(StoreError::Internal(format!(
                "reading the change log was refused: {refused}"
            ))),
        }
    }
}

/// Why a watch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The watcher fell further behind than its buffer holds.
    TooSlow,
    /// The server is stopping.
    Closed,
}

/// The watchers, and the last revision delivered to them: sending and
/// moving it happen together, under one lock.
pub(super) struct Live {
    pub(super) index: Index,
    pub(super) delivered: Revision,
}

pub struct EventFeed {
    pub(super) store: Arc<Store>,
    pub(super) buffer: usize,
    /// The rows a page of history examines at most.
    pub(super) scan: u32,
    pub(super) live: Arc<std::sync::Mutex<Live>>,
    pub(super) ready: watch::Sender<bool>,
    pub(super) slow_ended: Arc<AtomicU64>,
    /// Counts each lock event by its key's prefix.
    prefixes: Arc<PrefixActivity>,
}

/// A gap in the log the reader holds back at.
#[derive(Debug, Clone)]
struct Gap {
    /// The transactions in progress when the gap was seen: the one that
    /// took each missing revision is among them, if it has not ended.
    seen: Horizon,
    /// The highest revision seen before the gap was noted: every missing
    /// revision up to it was taken by a transaction in progress then.
    covers: Revision,
    /// Every such transaction has ended.
    passed: bool,
}

impl EventFeed {
    /// A feed whose watchers may each fall `buffer` events behind, and
    /// whose pages of history examine at most `scan` rows each.
    pub fn new(store: Arc<Store>, buffer: usize, scan: u32, prefixes: Arc<PrefixActivity>) -> Self {
        Self {
            store,
            buffer: buffer.max(1),
            scan: scan.max(1),
            live: Arc::new(std::sync::Mutex::new(Live {
                index: Index::default(),
                delivered: Revision::ZERO,
            })),
            ready: watch::Sender::new(false),
            slow_ended: Arc::new(AtomicU64::new(0)),
            prefixes,
        }
    }

    /// Streams ended so far because their watcher was too slow.
    pub fn slow_ended(&self) -> u64 {
        self.slow_ended.load(Ordering::Relaxed)
    }

    fn deliver(&self, event: Event) {
        super::activity::note_event(&self.prefixes, &event);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.delivered = event.revision;
        live.index.send(&Arc::new(event));
    }

    /// Delivers the events the store's own commits recorded, when they
    /// continue the log from `cursor`; answers false when the log must be
    /// read (one is missing, or the store hands none over).
    fn deliver_committed(&self, cursor: &mut Revision) -> bool {
        let Some(committed) = self.store.take_committed_events() else {
            return false;
        };
        for event in committed {
            if event.revision <= *cursor {
                continue;
            }
            if event.revision != *cursor + 1 {
                return false;
            }
            *cursor = event.revision;
            self.deliver(event);
        }
        true
    }

    /// Where the reader starts: the last committed revision, once every
    /// transaction that might still commit an earlier one has ended.
    async fn start(&self) -> StoreResult<Revision> {
        let last = self.store.log().last_visible().await?;
        if let Some(seen) = self.store.log().horizon().await? {
            loop {
                match self.store.log().horizon().await? {
                    Some(now) if !now.all_ended(&seen) => tokio::time::sleep(GAP_POLL).await,
                    _ => break,
                }
            }
        }
        Ok(last)
    }

    /// Delivers what the log holds after `cursor`, up to a gap that may
    /// still fill.
    async fn step(&self, cursor: &mut Revision, gap: &mut Option<Gap>) -> StoreResult<()> {
        loop {
            if let Some(g) = gap.as_mut().filter(|g| !g.passed) {
                match self.store.log().horizon().await? {
                    Some(now) if !now.all_ended(&g.seen) => return Ok(()),
                    _ => g.passed = true,
                }
            }
            let events = self.store.log().read(*cursor, Revision::MAX, PAGE).await?;
            let full = events.len() >= PAGE as usize;
            let seen = events.last().map_or(*cursor, |e| e.revision);
            let mut held = false;
            for event in events {
                if event.revision <= *cursor {
                    continue;
                }
                if event.revision > *cursor + 1
                    && let Some(g) = gap.as_ref().filter(|g| g.passed)
                {
                    // Missing for good: their transactions have ended.
                    *cursor = (*cursor).max((event.revision - 1).min(g.covers));
                }
                if event.revision > *cursor + 1 {
                    match self.store.log().horizon().await? {
                        // Commits come in revision order: nothing will fill it.
                        None => {}
                        Some(now) => {
                            *gap = Some(Gap {
                                seen: now,
                                covers: seen,
                                passed: false,
                            });
                            held = true;
                            break;
                        }
                    }
                }
                *cursor = event.revision;
                self.deliver(event);
            }
            if gap
                .as_ref()
                .is_some_and(|g| g.passed && g.covers <= *cursor)
            {
                *gap = None;
            }
            if held || !full {
                return Ok(());
            }
        }
    }
}

/// Follows the change log until `stop` turns true: woken by the store after
/// a commit that recorded events (on any replica), else every `POLL`.
pub async fn run(feed: Arc<EventFeed>, mut stop: watch::Receiver<bool>) {
    // A stop ends it at once, whatever call on the store it is waiting on.
    tokio::select! {
        () = follow(&feed) => {}
        _ = stop.wait_for(|s| *s) => {}
    }
}

async fn follow(feed: &EventFeed) {
    let signal = feed.store.event_signal();
    let mut cursor = loop {
        match feed.start().await {
            Ok(cursor) => break cursor,
            Err(e) => tracing::warn!(error = %e, "cannot read the change log; retrying"),
        }
        tokio::time::sleep(POLL).await;
    };
    // Anything handed over before the start is in the log up to `cursor`.
    let _ = feed.store.take_committed_events();
    feed.live
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .delivered = cursor;
    feed.ready.send_replace(true);
    let mut gap = None;
    let mut read_log = true;
    let (mut last_read, mut burst) = (tokio::time::Instant::now(), 0);
    loop {
        if read_log || !feed.deliver_committed(&mut cursor) {
            // Under load the next read waits for the commits that follow.
            burst = if last_read.elapsed() < GATHER {
                burst + 1
            } else {
                0
            };
            if burst >= BURST {
                tokio::time::sleep_until(last_read + GATHER).await;
            }
            last_read = tokio::time::Instant::now();
            if let Err(e) = feed.step(&mut cursor, &mut gap).await {
                tracing::warn!(error = %e, "cannot read the change log");
            }
        }
        let wait = if gap.is_some() { GAP_POLL } else { POLL };
        let woken = signal.notified();
        tokio::select! {
            _ = woken => read_log = false,
            _ = tokio::time::sleep(wait) => read_log = true,
        }
    }
}
