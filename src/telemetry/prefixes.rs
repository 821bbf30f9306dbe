//! Lock activity by key prefix, with bounded cardinality and never a whole
//! key for a name. With an auth file the buckets are its tokens' key
//! prefixes, fixed at start: a key counts under the longest it starts with,
//! any other key under `other`. Without one, a key's bucket is its first
//! path segment with its slash (`lb/` for `lb/3f2a`), for the first `limit`
//! prefixes seen; every other key, and every key without a `/`, is counted
//! in `other`. Each bucket counts grants, releases, expiries
//! and refusals since the start, the waits of acquires that waited, and the
//! same in five-second slots over the last five minutes, for rates and
//! charts. The waiters by prefix are counted by the caller and handed to
//! `render`, as `/metrics` does for every gauge.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::exposition::{Exposition, Kind};
use super::histogram::Histogram;
use super::waits::WAIT_BUCKETS;

#[path = "prefix_naming.rs"]
mod naming;

use naming::Naming;
pub use naming::first_segment;

/// A counter family of `/metrics`: its name, help and what it counts.
type Counter = (&'static str, &'static str, fn(&Counts) -> u64);

/// One slot of the recent window.
pub const SLOT: Duration = Duration::from_secs(5);
/// Slots kept: five minutes.
pub const SLOTS: usize = 60;
/// The bucket of every prefix past the limit.
pub const OTHER: &str = "other";

const KINDS: usize = 4;
const BINS: usize = WAIT_BUCKETS.len() + 1;

/// What happened on a key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Activity {
    Grant,
    Release,
    Expiry,
    Refusal,
    /// An acquire that asked to wait was answered after this long.
    Wait(Duration),
}

/// What one slot (or a sum of slots) counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub grants: u64,
    pub releases: u64,
    pub expiries: u64,
    pub refusals: u64,
    /// Waits per bin of `WAIT_BUCKETS` (the last one past the highest bound).
    pub waits: Vec<u64>,
}

impl Counts {
    fn add(&mut self, slot: &Slot) {
        self.grants += u64::from(slot.counts[0]);
        self.releases += u64::from(slot.counts[1]);
        self.expiries += u64::from(slot.counts[2]);
        self.refusals += u64::from(slot.counts[3]);
        self.waits.resize(BINS, 0);
        for (sum, n) in self.waits.iter_mut().zip(slot.waits) {
            *sum += u64::from(n);
        }
    }

    fn merge(&mut self, other: &Counts) {
        self.grants += other.grants;
        self.releases += other.releases;
        self.expiries += other.expiries;
        self.refusals += other.refusals;
        self.waits.resize(BINS, 0);
        for (sum, n) in self.waits.iter_mut().zip(&other.waits) {
            *sum += n;
        }
    }

    /// The `q` quantile of the waits, in milliseconds, interpolated within
    /// its bin; `None` without waits.
    pub fn wait_quantile_ms(&self, q: f64) -> Option<f64> {
        let total: u64 = self.waits.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = q * total as f64;
        let mut seen = 0.0;
        for (i, &n) in self.waits.iter().enumerate() {
            let next = seen + n as f64;
            if n > 0 && next >= rank {
                let low = if i == 0 { 0.0 } else { WAIT_BUCKETS[i - 1] };
                let high = WAIT_BUCKETS.get(i).copied().unwrap_or(low * 2.0);
                let within = ((rank - seen) / n as f64).clamp(0.0, 1.0);
                return Some((low + (high - low) * within) * 1000.0);
            }
            seen = next;
        }
        None
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    epoch: u64,
    counts: [u32; KINDS],
    waits: [u32; BINS],
}

#[derive(Debug)]
struct Bucket {
    totals: [AtomicU64; KINDS],
    /// Takes of rate limits admitted, and denied with 429.
    limit_takes: [AtomicU64; 2],
    waits: Histogram,
    recent: Mutex<Vec<Slot>>,
}

impl Bucket {
    fn new() -> Self {
        Self {
            totals: Default::default(),
            limit_takes: Default::default(),
            waits: Histogram::new(WAIT_BUCKETS),
            recent: Mutex::new(vec![Slot::default(); SLOTS]),
        }
    }

    fn note(&self, epoch: u64, what: Activity) {
        let (kind, bin) = match what {
            Activity::Grant => (Some(0), None),
            Activity::Release => (Some(1), None),
            Activity::Expiry => (Some(2), None),
            Activity::Refusal => (Some(3), None),
            Activity::Wait(d) => {
                self.waits.observe_duration(d);
                let s = d.as_secs_f64();
                (
                    None,
                    Some(
                        WAIT_BUCKETS
                            .iter()
                            .position(|&b| s <= b)
                            .unwrap_or(BINS - 1),
                    ),
                )
            }
        };
        if let Some(k) = kind {
            self.totals[k].fetch_add(1, Ordering::Relaxed);
        }
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut recent[(epoch % SLOTS as u64) as usize];
        if slot.epoch != epoch {
            *slot = Slot {
                epoch,
                ..Slot::default()
            };
        }
        match (kind, bin) {
            (Some(k), _) => slot.counts[k] = slot.counts[k].saturating_add(1),
            (_, Some(b)) => slot.waits[b] = slot.waits[b].saturating_add(1),
            _ => {}
        }
    }

    /// The complete slots of the last `slots`, oldest first (zero where
    /// nothing happened), ending before the slot `epoch` in progress.
    fn window(&self, epoch: u64, slots: usize) -> Vec<Counts> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        (1..=slots as u64)
            .rev()
            .map(|back| {
                let mut counts = Counts::default();
                if let Some(e) = epoch.checked_sub(back) {
                    let slot = &recent[(e % SLOTS as u64) as usize];
                    if slot.epoch == e {
                        counts.add(slot);
                    }
                }
                counts.waits.resize(BINS, 0);
                counts
            })
            .collect()
    }

    fn total(&self, kind: usize) -> u64 {
        self.totals[kind].load(Ordering::Relaxed)
    }
}

/// One prefix's figures: its totals since the start and its recent slots.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixFigures {
    pub prefix: String,
    pub totals: Counts,
    /// The last complete slots, oldest first.
    pub recent: Vec<Counts>,
    /// Takes of rate limits admitted and denied since the start.
    pub limit_takes: u64,
    pub limit_denials: u64,
}

/// The buckets of lock activity by key prefix.
#[derive(Debug)]
pub struct PrefixActivity {
    naming: Naming,
    started: Instant,
    other: Arc<Bucket>,
}

impl PrefixActivity {
    /// Buckets for the first `limit` first path segments seen, besides
    /// `other`: for a server without an auth file.
    pub fn first_seen(limit: usize) -> Self {
        Self::with(Naming::first_seen(limit))
    }

    /// A bucket for each of `prefixes` (an auth file's), besides `other`:
    /// `""` (every key) and `other` name none of their own.
    pub fn fixed(prefixes: impl IntoIterator<Item = String>) -> Self {
        Self::with(Naming::fixed(prefixes))
    }

    fn with(naming: Naming) -> Self {
        Self {
            naming,
            started: Instant::now(),
            other: Arc::new(Bucket::new()),
        }
    }

    fn epoch(&self) -> u64 {
        (self.started.elapsed().as_millis() / SLOT.as_millis()) as u64
    }

    /// The name of the bucket counting `key` (created if it may be).
    pub fn bucket_of(&self, key: &str) -> String {
        self.naming
            .find(key)
            .map_or(OTHER.to_owned(), |(name, _)| name.to_string())
    }

    fn bucket(&self, key: &str) -> Arc<Bucket> {
        let found = self.naming.find(key);
        found.map_or_else(|| self.other.clone(), |(_, bucket)| bucket)
    }

    /// Counts `what` on `key`.
    pub fn note(&self, key: &str, what: Activity) {
        let epoch = self.epoch();
        self.bucket(key).note(epoch, what);
    }

    /// Counts a take of the rate limit `name`: admitted, or denied.
    pub fn note_limit(&self, name: &str, taken: bool) {
        self.bucket(name).limit_takes[usize::from(!taken)].fetch_add(1, Ordering::Relaxed);
    }

    /// The figures of every bucket `selects` (by name, `other` included),
    /// in name order, with the last `slots` complete slots.
    pub fn figures(&self, selects: impl Fn(&str) -> bool, slots: usize) -> Vec<PrefixFigures> {
        let epoch = self.epoch();
        let mut buckets = self.naming.all();
        buckets.push((Arc::from(OTHER), self.other.clone()));
        buckets.retain(|(name, _)| selects(name));
        buckets.sort_by(|(a, _), (b, _)| a.cmp(b));
        buckets
            .into_iter()
            .map(|(name, b)| PrefixFigures {
                prefix: name.to_string(),
                totals: Counts {
                    grants: b.total(0),
                    releases: b.total(1),
                    expiries: b.total(2),
                    refusals: b.total(3),
                    waits: Vec::new(),
                },
                recent: b.window(epoch, slots.min(SLOTS - 1)),
                limit_takes: b.limit_takes[0].load(Ordering::Relaxed),
                limit_denials: b.limit_takes[1].load(Ordering::Relaxed),
            })
            .collect()
    }

    /// The recent slots summed over every bucket `selects`, oldest first.
    pub fn series(&self, selects: impl Fn(&str) -> bool, slots: usize) -> Vec<Counts> {
        let mut sum = vec![Counts::default(); slots.min(SLOTS - 1)];
        for figures in self.figures(selects, slots) {
            for (s, slot) in sum.iter_mut().zip(&figures.recent) {
                s.merge(slot);
            }
        }
        sum
    }

    /// The series of `/metrics`: the counters of every bucket, and the
    /// waiters by bucket handed in.
    pub fn render(&self, out: &mut Exposition, waiters: &[(String, u64)]) {
        let figures = self.figures(|_| true, 0);
        let counters: [Counter; KINDS] = [
            (
                "leasehold_prefix_lock_grants_total",
                "Lock leases granted, by key prefix (the auth file's, or else the first path segment; the rest: other)",
                |c| c.grants,
            ),
            (
                "leasehold_prefix_lock_releases_total",
                "Lock leases released (by their holder, a force release or their session's close), by key prefix",
                |c| c.releases,
            ),
            (
                "leasehold_prefix_lock_expiries_total",
                "Lock leases that expired (or whose session expired), by key prefix",
                |c| c.expiries,
            ),
            (
                "leasehold_prefix_lock_refusals_total",
                "Acquires refused with 409, by key prefix",
                |c| c.refusals,
            ),
        ];
        for (name, help, value) in counters {
            out.family(name, Kind::Counter, help);
            for f in &figures {
                out.sample(name, &[("prefix", &f.prefix)], value(&f.totals));
            }
        }
        self.render_limit_takes(out);
        const WAITERS: &str = "leasehold_prefix_waiters";
        out.family(
            WAITERS,
            Kind::Gauge,
            "Acquires waiting on this server, by key prefix",
        );
        for (prefix, n) in waiters {
            out.sample(WAITERS, &[("prefix", prefix)], n);
        }
    }
}

impl PrefixActivity {
    /// The takes of rate limits, admitted and denied, by prefix bucket.
    fn render_limit_takes(&self, out: &mut Exposition) {
        let mut buckets = self.naming.all();
        buckets.push((Arc::from(OTHER), self.other.clone()));
        buckets.sort_by(|(a, _), (b, _)| a.cmp(b));
        let families = [
            (
                "leasehold_prefix_limit_takes_total",
                "Takes of rate limits admitted, by name prefix (bucketed as lock keys are)",
            ),
            (
                "leasehold_prefix_limit_denials_total",
                "Takes of rate limits denied with 429, by name prefix",
            ),
        ];
        for (at, (name, help)) in families.into_iter().enumerate() {
            out.family(name, Kind::Counter, help);
            for (prefix, bucket) in &buckets {
                let value = bucket.limit_takes[at].load(Ordering::Relaxed);
                out.sample(name, &[("prefix", prefix)], value);
            }
        }
    }
}

#[cfg(test)]
#[path = "prefixes_tests.rs"]
mod tests;
