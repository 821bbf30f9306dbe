//! What the connection loop sees around the requests it routes: connections
//! open now, connections refused at the cap, request heads refused for their
//! size, and connections closed because their client stopped taking bytes. Rendered with the other series of `GET /metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

use super::exposition::Exposition;

#[derive(Debug, Default)]
pub struct ConnectionStats {
    /// Connections being served now.
    pub open: AtomicU64,
    /// Connections closed at once because `open` was at the cap.
    pub refused: AtomicU64,
    /// Requests whose head was larger than the server reads.
    pub heads_too_large: AtomicU64,
    /// Connections closed because the client took nothing it was sent for
    /// the send timeout (an event stream it stopped reading, say).
    pub stalled: AtomicU64,
}

impl ConnectionStats {
    pub fn render(&self, out: &mut Exposition) {
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        out.gauge(
            "leasehold_connections_open",
            "Client connections open now",
            load(&self.open),
        )
        .counter(
            "leasehold_connections_refused_total",
            "Connections closed at once because the server held --max-connections",
            load(&self.refused),
        )
        .counter(
            "leasehold_request_heads_too_large_total",
            "Requests answered 431 because their head exceeded the header size cap",
            load(&self.heads_too_large),
        )
        .counter(
            "leasehold_connections_stalled_total",
            "Connections closed because the client took nothing it was sent for --send-timeout",
            load(&self.stalled),
        );
    }
}
