//! How `lock run` keeps its lease, and when it must give up on it.
//!
//! The server may grant the key to someone else as soon as the lease ends, and
//! the client cannot know when that is, only a bound: the server computed
//! `expires_in_ms` no earlier than the request was sent, so the lease lives at
//! least until `sent + min(ttl, expires_in_ms)` on this host's monotonic clock
//! ([`Budget::ends_by`]). The command must be dead by then, so the stop
//! (SIGTERM, `--kill-after`, SIGKILL, teardown) starts that long before it
//! ([`Budget::stop_at`]) unless a renewal got through meanwhile. Renewals come
//! often enough that failed ones can be retried before the stop must begin.
//!
//! What is kept is one lease, or the session that every lease of a lock set
//! is bound to ([`Kept`]): the timing is the same, only the request differs.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep, sleep_until, timeout};

use super::{CliError, exit};

use crate::client::{Client, ClientError};
use crate::config::format_duration;

/// Time left between SIGKILL and the end of the lease, for the kernel to tear
/// the process group down and for a timer that fires late.
pub const TEARDOWN_MARGIN: Duration = Duration::from_millis(500);

/// The grace between SIGTERM and SIGKILL when none is asked for, as long as
/// it fits the TTL; a shorter TTL gets two thirds of itself less
/// [`TEARDOWN_MARGIN`].
pub const DEFAULT_KILL_AFTER: Duration = Duration::from_secs(5);

/// The timing of one `lock run`: its TTL and its grace between SIGTERM and SIGKILL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    ttl: Duration,
    kill_after: Duration,
    /// The cap on the lease's (or session's) tenure asked of the server.
    max_lifetime: Option<Duration>,
}

impl Budget {
    /// Refuses a `--kill-after` that leaves less than a third of the TTL for
    /// renewals: the whole stop must fit before the lease can end. Without
    /// one, the grace is [`DEFAULT_KILL_AFTER`], shortened to fit `ttl`.
    pub fn new(ttl: Duration, kill_after: Option<Duration>) -> Result<Self, String> {
        let most = (ttl * 2 / 3).saturating_sub(TEARDOWN_MARGIN);
        let fits = |grace: Duration| grace + TEARDOWN_MARGIN <= ttl * 2 / 3;
        match kill_after {
            Some(grace) if fits(grace) => Ok(Self {
                ttl,
                kill_after: grace,
                max_lifetime: None,
            }),
            Some(grace) => Err(format!(
                "--kill-after {} does not fit in --ttl {}: the command must be stopped before \
                 the lease can end, so --kill-after plus {} must be at most two thirds of --ttl \
                 (at most {} here); give a shorter --kill-after or a longer --ttl",
                format_duration(grace),
                format_duration(ttl),
                format_duration(TEARDOWN_MARGIN),
                format_duration(most),
            )),
            None if fits(Duration::ZERO) => Ok(Self {
                ttl,
                kill_after: DEFAULT_KILL_AFTER.min(most),
                max_lifetime: None,
            }),
            None => Err(format!(
                "--ttl {} is too short to stop the command before the lease can end: \
                 {} of teardown must fit in two thirds of it; give a --ttl of at least {}",
                format_duration(ttl),
                format_duration(TEARDOWN_MARGIN),
                format_duration(TEARDOWN_MARGIN * 3 / 2),
            )),
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// With a cap on the tenure (`--max-lifetime`): the server ends the
    /// lease by then however often it is renewed, and the command is
    /// stopped in time for it, as for any end of the lease.
    pub fn with_max_lifetime(self, max_lifetime: Option<Duration>) -> Self {
        Self {
            max_lifetime,
            ..self
        }
    }

    pub fn max_lifetime(&self) -> Option<Duration> {
        self.max_lifetime
    }

    pub fn kill_after(&self) -> Duration {
        self.kill_after
    }

    /// From SIGTERM to a dead process group.
    fn stop_takes(&self) -> Duration {
        self.kill_after + TEARDOWN_MARGIN
    }

    /// The lock delay asked of the server: after the lease expires, the key
    /// stays unavailable as long as a stop takes, so a stop that began late
    /// (this process was slow) still ends before anyone else holds the key.
    pub fn lock_delay(&self) -> Duration {
        self.stop_takes()
    }

    /// The earliest instant the lease can end, for a grant or renewal sent at `sent`.
    pub fn ends_by(&self, sent: Instant, expires_in_ms: u64) -> Instant {
        sent + self.ttl.min(Duration::from_millis(expires_in_ms))
    }

    /// When the stop must begin for the command to be dead by `ends_by`.
    pub fn stop_at(&self, ends_by: Instant) -> Instant {
        ends_by.checked_sub(self.stop_takes()).unwrap_or(ends_by)
    }

    /// When SIGKILL must be sent at the latest.
    pub fn kill_by(&self, ends_by: Instant) -> Instant {
        ends_by.checked_sub(TEARDOWN_MARGIN).unwrap_or(ends_by)
    }

    /// The part of the TTL that is not reserved for the stop.
    fn usable(&self) -> Duration {
        self.ttl.saturating_sub(self.stop_takes())
    }

    /// Renew a third of the usable part after the last renewal was sent,
    /// leaving two thirds of it for retries.
    pub fn renew_every(&self) -> Duration {
        self.usable() / 3
    }

    /// The pause before retrying a failed renewal.
    fn retry_after(&self) -> Duration {
        (self.usable() / 10).clamp(Duration::from_millis(50), Duration::from_secs(1))
    }

    /// How long one renewal may take before it counts as failed: a request
    /// stuck on a dead connection must not use up the time for retries.
    fn attempt_timeout(&self) -> Duration {
        self.renew_every().max(Duration::from_millis(100))
    }
}

/// Why the command must stop.
#[derive(Debug, Clone)]
pub struct Lost {
    pub reason: String,
    /// SIGKILL no later than this: the lease may end soon after. `None` when
    /// the server said the lease is already gone.
    pub kill_by: Option<Instant>,
}

/// A renewal that did not get through.
enum Failed {
    /// The server says the lease is gone.
    Gone(String),
    /// No answer, or one that says nothing about the lease: worth retrying.
    Transient(String),
}

/// The lease or session being kept, and the earliest instant it can end.
pub struct Keeper {
    client: Client,
    kept: Kept,
    budget: Budget,
    sent: Instant,
    ends_by: Instant,
    /// An answer said the expiry is the end of the tenure: no renewal
    /// extends it, and the stop says so.
    capped: bool,
}

impl Keeper {
    /// For a lease or session granted by a request sent at `sent`, answered
    /// with `expires_in_ms`.
    pub fn new(
        client: Client,
        budget: Budget,
        sent: Instant,
        expires_in_ms: u64,
        kept: Kept,
    ) -> Self {
        Self {
            client,
            kept,
            budget,
            sent,
            ends_by: budget.ends_by(sent, expires_in_ms),
            capped: false,
        }
    }

    /// Whether the grant's answer said its expiry is the end of its tenure.
    pub fn capped(self, capped: bool) -> Self {
        Self { capped, ..self }
    }

    /// When the next renewal is due.
    pub fn renew_due(&self) -> Instant {
        self.sent + self.budget.renew_every()
    }

    /// Renews before the command starts, when the grant took so long to come
    /// (a long wait) that the bound on the lease's end is too close or past.
    /// Retries until the lease would surely have ended (`received` + TTL).
    pub async fn renew_now(&mut self, received: Instant) -> Result<(), CliError> {
        let give_up = received + self.budget.ttl;
        loop {
            let limit = self
                .budget
                .attempt_timeout()
                .min(give_up.saturating_duration_since(Instant::now()));
            match self.attempt(limit).await {
                Ok(()) => return Ok(()),
                Err(Failed::Gone(reason)) => {
                    return Err(CliError::new(
                        exit::CONFLICT,
                        format!("lost {} before the command started ({reason})", self.kept),
                    ));
                }
                Err(Failed::Transient(reason)) if Instant::now() >= give_up => {
                    return Err(CliError::new(
                        exit::UNAVAILABLE,
                        format!(
                            "could not renew {} to start the command: {reason}",
                            self.kept
                        ),
                    ));
                }
                Err(Failed::Transient(_)) => sleep(self.budget.retry_after()).await,
            }
        }
    }

    /// Renews until a renewal is refused or the stop must begin, then says why.
    pub async fn keep(mut self, lost: watch::Sender<Option<Lost>>) {
        let mut next = self.renew_due();
        let why = loop {
            let stop_at = self.budget.stop_at(self.ends_by);
            tokio::select! {
                biased;
                () = sleep_until(stop_at) => break self.deadline(),
                // Nothing extends a lease at the end of its tenure.
                () = sleep_until(next), if !self.capped => {}
            }
            let limit = self
                .budget
                .attempt_timeout()
                .min(stop_at.saturating_duration_since(Instant::now()));
            match self.attempt(limit).await {
                Ok(()) => next = self.renew_due(),
                Err(Failed::Gone(reason)) => {
                    break Lost {
                        reason,
                        kill_by: None,
                    };
                }
                Err(Failed::Transient(_)) => next = Instant::now() + self.budget.retry_after(),
            }
        };
        let _ = lost.send(Some(why));
    }

    fn deadline(&self) -> Lost {
        let left = self.ends_by.saturating_duration_since(Instant::now());
        if self.capped {
            return Lost {
                reason: format!(
                    "lifetime_ended: the lease reaches the end of its tenure (--max-lifetime, \
                     or the server's ceiling) in {}",
                    format_duration(millis_only(left)),
                ),
                kill_by: Some(self.budget.kill_by(self.ends_by)),
            };
        }
        Lost {
            reason: format!(
                "no renewal got through for {}, and the lease may end in {}",
                format_duration(millis_only(
                    Instant::now().saturating_duration_since(self.sent)
                )),
                format_duration(millis_only(left)),
            ),
            kill_by: Some(self.budget.kill_by(self.ends_by)),
        }
    }

    /// One renewal, given at most `limit`.
    async fn attempt(&mut self, limit: Duration) -> Result<(), Failed> {
        let sent = Instant::now();
        let renewal = self.kept.renew(&self.client, self.budget.ttl);
        match timeout(limit, renewal).await {
            Ok(Ok((expires_in_ms, capped))) => {
                self.sent = sent;
                self.ends_by = self.budget.ends_by(sent, expires_in_ms);
                self.capped = self.capped || capped;
                Ok(())
            }
            Ok(Err(e)) if e.is_problem("lease-lost") => Err(Failed::Gone(e.to_string())),
            Ok(Err(ClientError::Problem { status: 404, .. })) => {
                Err(Failed::Gone(format!("{} is gone", self.kept)))
            }
            Ok(Err(e)) => Err(Failed::Transient(e.to_string())),
            Err(_) => Err(Failed::Transient(format!(
                "no answer within {}",
                format_duration(millis_only(limit))
            ))),
        }
    }
}

/// Whether an answer's expiry (`expires_in_ms`) is the end of its tenure:
/// its `lifetime_left_ms` (among the fields kept) is no longer.
pub fn capped(expires_in_ms: u64, fields: &serde_json::Map<String, serde_json::Value>) -> bool {
    fields
        .get("lifetime_left_ms")
        .and_then(serde_json::Value::as_u64)
        .is_some_and(|left| left <= expires_in_ms)
}

/// Whole milliseconds, for messages.
fn millis_only(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What a keeper renews: one lock lease, or a session and with it every
/// lease bound to it.
#[derive(Debug, Clone)]
pub enum Kept {
    Lock { key: String, token: String },
    Session { id: String, token: String },
}

impl Kept {
    /// One renewal for `ttl`; the server's `expires_in_ms`, and whether
    /// that is the end of the tenure.
    pub(super) async fn renew(
        &self,
        client: &Client,
        ttl: Duration,
    ) -> Result<(u64, bool), ClientError> {
        match self {
            Self::Lock { key, token } => {
                client.renew_lock(key, token, Some(ttl)).await.map(|lease| {
                    (
                        lease.expires_in_ms,
                        capped(lease.expires_in_ms, &lease.extra),
                    )
                })
            }
            Self::Session { id, token } => client
                .renew_session(id, token, Some(ttl))
                .await
                .map(|s| (s.expires_in_ms, capped(s.expires_in_ms, &s.extra))),
        }
    }

    /// Releases the lock, or closes the session, which releases every lease
    /// bound to it in one transaction.
    pub async fn release(&self, client: &Client) -> Result<(), ClientError> {
        match self {
            Self::Lock { key, token } => client.release_lock(key, token).await,
            Self::Session { id, token } => client.close_session(id, token).await,
        }
    }
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Lock { key, .. } => write!(f, "the lock {key}"),
            Self::Session { id, .. } => write!(f, "the session {id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(ttl_ms: u64, kill_after_ms: u64) -> Result<Budget, String> {
        Budget::new(
            Duration::from_millis(ttl_ms),
            Some(Duration::from_millis(kill_after_ms)),
        )
    }

    #[test]
    fn without_kill_after_the_default_shrinks_to_fit_the_ttl() {
        let ttl = |ms| Duration::from_millis(ms);
        let default = |ms| Budget::new(ttl(ms), None).map(|b| b.kill_after());
        assert_eq!(default(30_000), Ok(DEFAULT_KILL_AFTER));
        assert_eq!(default(5_000), Ok(ttl(5_000) * 2 / 3 - TEARDOWN_MARGIN));
        assert_eq!(default(750), Ok(Duration::ZERO));
        let refusal = default(600).unwrap_err();
        assert!(refusal.starts_with("--ttl 600ms is too short"), "{refusal}");
        assert!(refusal.contains("at least 750ms"), "{refusal}");
        // The rule still holds for a grace the user chose.
        assert!(budget(5_000, 5_000).is_err());
    }

    #[test]
    fn a_kill_after_that_leaves_a_third_of_the_ttl_fits() {
        assert!(budget(30_000, 5_000).is_ok());
        assert!(budget(3_000, 1_500).is_ok());
        assert!(budget(3_000, 0).is_ok());
    }

    #[test]
    fn a_kill_after_that_leaves_less_is_refused_naming_both_flags() {
        let refusal = budget(6_000, 5_000).unwrap_err();
        assert!(
            refusal.starts_with("--kill-after 5s does not fit in --ttl 6s"),
            "{refusal}"
        );
        assert!(refusal.contains("at most 3500ms here"), "{refusal}");
        assert!(budget(3_000, 1_501).is_err());
        assert!(budget(600, 0).is_err());
    }

    #[test]
    fn the_lease_ends_by_the_send_instant_plus_the_smaller_of_ttl_and_expires_in() {
        let b = budget(3_000, 1_000).unwrap();
        let sent = Instant::now();
        assert_eq!(b.ends_by(sent, 5_000), sent + Duration::from_secs(3));
        assert_eq!(b.ends_by(sent, 2_000), sent + Duration::from_secs(2));
    }

    #[test]
    fn the_stop_ends_before_the_lease_and_renewals_leave_room_for_retries() {
        let b = budget(3_000, 1_000).unwrap();
        let ends = Instant::now() + Duration::from_secs(3);
        assert_eq!(b.stop_at(ends) + b.kill_after(), b.kill_by(ends));
        assert_eq!(b.kill_by(ends) + TEARDOWN_MARGIN, ends);
        assert_eq!(b.renew_every(), Duration::from_millis(500));
        // Two attempts at least fit between the renewal and the stop.
        let first = ends - b.ttl() + b.renew_every();
        assert!(first + 2 * b.attempt_timeout() <= b.stop_at(ends));
        assert_eq!(b.lock_delay(), Duration::from_millis(1_500));
    }
}
