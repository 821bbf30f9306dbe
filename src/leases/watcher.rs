//! One watcher of the change log: the history it missed, read in bounded
//! pages filtered in the store by its selection, then the live events the
//! fan-out queues for it, each once, in revision order.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::admission::{Admission, WatcherSlot};
use super::events::{Ended, EventFeed, Live, PAGE, WatchError};
use super::fanout::Subscriber;
use super::history_turns::{FIRST_TURN, Place, Turn};
use crate::domain::Revision;
use crate::domain::events::{Event, EventFilter};
use crate::domain::selection::Selection;
use crate::store::{HistoryQuery, Store};

/// One watcher: the history it missed, then the live events, each once, in
/// revision order.
pub struct Watch {
    pub(super) store: Arc<Store>,
    /// The last revision passed (shown, filtered out, or examined).
    pub(super) last: Revision,
    /// The history ends here; the fan-out has every event after it.
    pub(super) through: Revision,
    /// The rows a page of history examines at most.
    pub(super) scan: u32,
    /// Events of history read and not yet taken (all at or before `last`).
    pub(super) page: VecDeque<Arc<Event>>,
    pub(super) events: mpsc::Receiver<Arc<Event>>,
    /// Set when the fan-out dropped this watcher for a full queue.
    pub(super) slow: Arc<AtomicBool>,
    pub(super) _registered: Registered,
    pub(super) selection: Selection,
    pub(super) slow_ended: Arc<AtomicU64>,
    pub(super) _slot: WatcherSlot,
    /// Held while the watch reads history: its place among the readers.
    pub(super) history: Option<Place>,
    /// The turn to read the first page in, taken before the watch began.
    pub(super) turn: Option<Turn>,
}

/// A watcher's place in the fan-out's index, given up when it goes.
pub(super) struct Registered {
    pub(super) live: Arc<std::sync::Mutex<Live>>,
    pub(super) id: u64,
    pub(super) filter: EventFilter,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.index.remove(self.id, &self.filter);
    }
}

impl Watch {
    /// The revision to resume after: the last one this watch passed.
    pub fn last(&self) -> Revision {
        self.last
    }

    /// Whether history is left to read before the live events.
    pub fn in_history(&self) -> bool {
        self.last < self.through
    }

    /// One page of history: at most `limit` of the events the watcher
    /// wants, from a bounded read of the log (its selection runs in the
    /// store). `last` moves past what the read examined, whether or not
    /// anything matched, so a page is answered at once however little of
    /// the log the watcher may see. The page is read in the watch's turn,
    /// waited for when it has none, and given back as soon as it is read.
    pub async fn history(&mut self, limit: usize) -> Result<Vec<Arc<Event>>, Ended> {
        let turn = match (self.turn.take(), &self.history) {
            (Some(turn), _) => Some(turn),
            (None, Some(place)) => Some(place.turn().await),
            (None, None) => None,
        };
        let query = HistoryQuery {
            after: self.last,
            through: self.through,
            limit: u32::try_from(limit).unwrap_or(u32::MAX).max(1),
            scan: self.scan,
            selection: self.selection.clone(),
        };
        let read = self.store.log().history(query).await;
        drop(turn);
        let page = match read {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the change log for a watcher");
                return Err(Ended::Closed);
            }
        };
        self.last = page.examined.clamp(self.last, self.through);
        if !self.in_history() {
            self.history = None;
        }
        Ok(page
            .events
            .into_iter()
            .filter(|e| self.selection.matches(e))
            .map(Arc::new)
            .collect())
    }

    /// The next event the watcher wants; `Ok(None)` when none came by
    /// `deadline` (none: wait as long as it takes).
    pub async fn next(&mut self, deadline: Option<Instant>) -> Result<Option<Arc<Event>>, Ended> {
        loop {
            if let Some(event) = self.page.pop_front() {
                return Ok(Some(event));
            }
            if self.in_history() {
                let events = self.history(PAGE as usize).await?;
                self.page.extend(events);
                continue;
            }
            let received = match deadline {
                Some(at) => match tokio::time::timeout_at(at, self.events.recv()).await {
                    Ok(received) => received,
                    Err(_) => return Ok(None),
                },
                None => self.events.recv().await,
            };
            match received {
                Some(event) if event.revision <= self.last => {}
                Some(event) => {
                    self.last = event.revision;
                    if self.selection.matches(&event) {
                        return Ok(Some(event));
                    }
                }
                None if self.slow.load(Ordering::Relaxed) => {
                    self.slow_ended.fetch_add(1, Ordering::Relaxed);
                    return Err(Ended::TooSlow);
                }
                None => return Err(Ended::Closed),
            }
        }
    }
}

impl EventFeed {
    /// Starts a watch of the events after `since` (none: from now on) that
    /// `selection` selects (`filter` is what the fan-out indexes it by),
    /// holding `slot`; one that must read history first holds a place among
    /// `admission`'s readers of history too, until it has, and waits for the
    /// turn to read its first page before it begins (refused when that
    /// turn does not come in time).
    pub async fn watch(
        &self,
        since: Option<Revision>,
        filter: EventFilter,
        selection: Selection,
        slot: WatcherSlot,
        admission: &Admission,
    ) -> Result<Watch, WatchError> {
        let mut ready = self.ready.subscribe();
        let _ = ready.wait_for(|r| *r).await;
        if let Some(since) = since {
            let bounds = self.store.log().bounds().await?;
            if since > bounds.head {
                return Err(WatchError::Future { since });
            }
            if since < bounds.pruned_through {
                return Err(WatchError::Compacted {
                    oldest: bounds.pruned_through + 1,
                });
            }
        }
        // Registered before the watermark is read: every event past it
        // comes through the fan-out, every one up to it is in the store.
        let (queue, events) = mpsc::channel(self.buffer);
        let slow = Arc::new(AtomicBool::new(false));
        let (id, through) = {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            let id = live.index.add(&filter, || Subscriber {
                queue: queue.clone(),
                slow: slow.clone(),
            });
            (id, live.delivered)
        };
        drop(queue);
        let registered = Registered {
            live: self.live.clone(),
            id,
            filter,
        };
        let last = since.unwrap_or(through);
        let (history, turn) = if last < through {
            let place = admission.read_history().map_err(WatchError::Overloaded)?;
            let turn = place
                .first_turn(FIRST_TURN)
                .await
                .map_err(WatchError::Overloaded)?;
            (Some(place), Some(turn))
        } else {
            (None, None)
        };
        Ok(Watch {
            store: self.store.clone(),
            last,
            through,
            scan: self.scan,
            page: VecDeque::new(),
            events,
            slow,
            _registered: registered,
            selection,
            slow_ended: self.slow_ended.clone(),
            _slot: slot,
            history,
            turn,
        })
    }
}
