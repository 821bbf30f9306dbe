//! The server's clock. Every lease decision takes its `now` from here, so tests
//! can drive time by hand and the rules in `domain` never read a clock.
//!
//! Lease time is measured on a monotonic clock (rule 2): the lease clock is
//! anchored once, at start, and from then on advances with the kernel's
//! boot-time clock, which steps of the wall clock (an NTP correction, an
//! operator's `date -s`) do not move and which keeps counting while the
//! machine sleeps. The wall clock is read only to show times to people.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::time::{ClockId, clock_gettime};

use crate::domain::{At, Ms};

/// A source of "now" in milliseconds on the lease clock.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> At;

    /// How far the wall clock is ahead of the lease clock, to show a lease
    /// time as the wall-clock time people read.
    fn wall_offset(&self) -> Ms {
        Ms::ZERO
    }

    /// Sets the lease clock to `at` and starts it: the start-up work done
    /// before this (resuming leases) does not count against any lease.
    fn anchor(&self, _at: At) {}
}

/// Unix milliseconds on the wall clock.
pub fn wall_now() -> At {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    At::from_millis(i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
}

/// Milliseconds on the monotonic boot-time clock: how long since boot.
fn monotonic_now() -> Ms {
    let t = clock_gettime(ClockId::CLOCK_BOOTTIME)
        .or_else(|_| clock_gettime(ClockId::CLOCK_MONOTONIC))
        .expect("the monotonic clock is readable");
    Ms::new(t.tv_sec() * 1_000 + t.tv_nsec() / 1_000_000)
}

/// How far the wall clock must move from the lease clock before times are
/// shown with the new offset: the two clocks are read one after the other,
/// and a time shown twice must read the same.
const OFFSET_STEP_MS: Ms = Ms::new(250);

/// The real lease clock: the wall clock's reading until it is anchored, then
/// the anchor plus the monotonic time elapsed since.
#[derive(Debug, Default)]
pub struct SystemClock {
    anchored: OnceLock<(At, Ms)>,
    /// The wall clock's offset as last shown.
    shown_offset: AtomicI64,
}

impl SystemClock {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> At {
        match self.anchored.get() {
            Some(&(at, since)) => at + (monotonic_now() - since),
            None => wall_now(),
        }
    }

    fn wall_offset(&self) -> Ms {
        if self.anchored.get().is_none() {
            return Ms::ZERO;
        }
        let offset = wall_now() - self.now();
        let shown = Ms::new(self.shown_offset.load(Ordering::Relaxed));
        if (offset - shown).abs() < OFFSET_STEP_MS {
            return shown;
        }
        self.shown_offset
            .store(offset.as_millis(), Ordering::Relaxed);
        offset
    }

    fn anchor(&self, at: At) {
        if self.anchored.set((at, monotonic_now())).is_ok() {
            self.shown_offset
                .store((wall_now() - at).as_millis(), Ordering::Relaxed);
        }
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(start: At) -> Self {
        Self(Arc::new(AtomicI64::new(start.as_millis())))
    }

    pub fn advance(&self, by_ms: Ms) {
        self.0.fetch_add(by_ms.as_millis(), Ordering::SeqCst);
    }

    pub fn set(&self, to: At) {
        self.0.store(to.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> At {
        At::from_millis(self.0.load(Ordering::SeqCst))
    }
}

pub type SharedClock = Arc<dyn Clock>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchored_clock_starts_at_its_anchor_and_advances() {
        let clock = SystemClock::new();
        clock.anchor(At::from_millis(1_000));
        let first = clock.now().as_millis();
        assert!((1_000..1_100).contains(&first), "{first}");
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(clock.now().as_millis() >= first + 20);
    }

    #[test]
    fn its_wall_offset_is_the_wall_clock_minus_the_lease_clock() {
        let clock = SystemClock::new();
        clock.anchor(wall_now() - Ms::new(60_000));
        let offset = clock.wall_offset();
        assert!((59_900..60_100).contains(&offset.as_millis()), "{offset}");
        for _ in 0..1_000 {
            assert_eq!(
                clock.wall_offset(),
                offset,
                "a time shown twice reads the same"
            );
        }
    }
}
