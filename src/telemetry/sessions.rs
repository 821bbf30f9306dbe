//! The session series of `/metrics`: what sessions did (counters) and what
//! is open now (gauges the scrape reads from the store).

use std::sync::atomic::{AtomicU64, Ordering};

use super::exposition::Exposition;

#[derive(Debug, Default)]
pub struct SessionMetrics {
    pub opens: AtomicU64,
    pub renewals: AtomicU64,
    /// Closed by their holder or force-closed.
    pub closes: AtomicU64,
    /// Expired sessions the reaper removed.
    pub expiries: AtomicU64,
}

impl SessionMetrics {
    /// The counters, and the gauges of `live` sessions and `bound` leases.
    pub fn render(&self, out: &mut Exposition, live: u64, bound: u64) {
        let counters = [
            ("opens", "Sessions opened", &self.opens),
            ("renewals", "Session keep-alives", &self.renewals),
            (
                "closes",
                "Sessions closed by their holder or force-closed",
                &self.closes,
            ),
            (
                "expiries",
                "Sessions that expired (removed by the reaper)",
                &self.expiries,
            ),
        ];
        for (what, help, value) in counters {
            let name = format!("leasehold_session_{what}_total");
            out.counter(&name, help, value.load(Ordering::Relaxed));
        }
        out.gauge("leasehold_live_sessions", "Open sessions", live)
            .gauge(
                "leasehold_bound_leases",
                "Live leases bound to a session",
                bound,
            );
    }
}
