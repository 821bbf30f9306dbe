//! Which bound refused a request: the `reason` a shed request's 503 names,
//! and the label its count carries in `/metrics`. It stands apart from
//! `admission`, which keeps the bounds, so that each bound (the turns of the
//! readers of history among them) names its refusal without importing the
//! others.

/// Which bound refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// Too many requests in flight.
    InFlight,
    /// Too many acquires waiting for keys.
    Waiters,
    /// The client holds its whole share of the in-flight bound.
    ClientInFlight,
    /// Too many event streams open.
    Watchers,
    /// The client holds its whole share of the waiter bound.
    ClientWaiters,
    /// The client holds its whole share of the watcher bound.
    ClientWatchers,
    /// Too many readers of the change log's history at once, or a new one's
    /// first turn did not come in time: the server is saturated.
    HistoryReads,
    /// The client has its whole share of the readers of history.
    ClientHistoryReads,
}

pub const SHED_REASONS: [Shed; 8] = [
    Shed::InFlight,
    Shed::Waiters,
    Shed::ClientInFlight,
    Shed::Watchers,
    Shed::ClientWaiters,
    Shed::ClientWatchers,
    Shed::HistoryReads,
    Shed::ClientHistoryReads,
];

impl Shed {
    pub fn as_str(self) -> &'static str {
        match self {
            Shed::InFlight => "in_flight",
            Shed::Waiters => "waiters",
            Shed::ClientInFlight => "client_in_flight",
            Shed::Watchers => "watchers",
            Shed::ClientWaiters => "client_waiters",
            Shed::ClientWatchers => "client_watchers",
            Shed::HistoryReads => "history_reads",
            Shed::ClientHistoryReads => "client_history_reads",
        }
    }
}
