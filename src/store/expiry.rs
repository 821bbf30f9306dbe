//! A row's expiry as rule 7 gives it, one text for both dialects.
//!
//! A start that finds the service was down from `alive_at` (S) until its
//! lease clock's start (A, with A ≥ S) gives every lease live at S a full TTL
//! from A without rewriting the rows: it records S and A in `server_state`
//! (`resumed_alive_at`, `resumed_anchor`), and while they are set a row whose
//! own `expires_at` E has S < E < A + `ttl_ms` expires at A + `ttl_ms`. A
//! row written since (a grant, a renewal) has E ≥ A + `ttl_ms`, so the rule
//! never catches it. A fresh expiry never passes the row's cap on tenure
//! (`ends_by`), as no renewal's does. The reaper writes the fresh expiries into the rows in
//! batches and then clears S and A (`resume::settle`).
//!
//! Every statement that compares or shows an expiry goes through these
//! fragments. Each keeps a range on `expires_at` (or `gone_at`) that an
//! index can serve; S and A are read once per statement.

use std::fmt;
use std::sync::LazyLock;

/// A statement text, or part of one, built from these fragments once on
/// first use; shown (in `format!`) as its text.
pub struct Text(LazyLock<String>);

impl Text {
    pub const fn new(build: fn() -> String) -> Self {
        Self(LazyLock::new(build))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// S: the last instant the last run was known alive, while its leases wait
/// for their fresh TTL; NULL otherwise.
const ALIVE_AT: &str = "(SELECT resumed_alive_at FROM server_state WHERE id = 1)";

/// A: where the lease clock of the run that resumed started.
const ANCHOR: &str = "(SELECT resumed_anchor FROM server_state WHERE id = 1)";

/// The fresh expiry of the row `t` (A + its TTL), never past its cap on
/// tenure (`ends_by`, NULL without one: the comparison is then not true).
fn fresh_expiry(t: &str) -> String {
    format!(
        "(CASE WHEN {t}.ends_by < {ANCHOR} + {t}.ttl_ms THEN {t}.ends_by \
         ELSE {ANCHOR} + {t}.ttl_ms END)"
    )
}

/// The expiry a write at some instant gives a row: `expiry` (such as
/// `$3 + ttl_ms`), never past the row's cap on tenure (`ends_by`, a column
/// of the row the statement updates).
pub fn renewed(expiry: &str) -> String {
    format!("(CASE WHEN ends_by < {expiry} THEN ends_by ELSE {expiry} END)")
}

/// The row `t` waits for its fresh TTL and has it past `now` (`extra` is
/// added to the fresh expiry: a lock's delay); never NULL.
fn fresh_past(t: &str, extra: &str, now: &str) -> String {
    format!(
        "coalesce({t}.expires_at > {ALIVE_AT} AND {}{extra} > {now}, false)",
        fresh_expiry(t)
    )
}

/// The lowest own expiry a row live at `now` can have: `now`, or S while
/// leases wait for their fresh TTL.
fn floor(now: &str) -> String {
    format!("(CASE WHEN {ALIVE_AT} < {now} THEN {ALIVE_AT} ELSE {now} END)")
}

/// The expiry of the row `t` (NULL stays NULL: an allocated reservation).
pub fn expires_at(t: &str) -> String {
    let fresh = fresh_expiry(t);
    format!(
        "(CASE WHEN {t}.expires_at > {ALIVE_AT} AND {t}.expires_at < {fresh} \
         THEN {fresh} ELSE {t}.expires_at END)"
    )
}

/// The row `t` has not expired at `now` (a parameter such as `$3`).
pub fn live(t: &str, now: &str) -> String {
    format!(
        "({t}.expires_at > {} AND ({t}.expires_at > {now} OR {}))",
        floor(now),
        fresh_past(t, "", now)
    )
}

/// The row `t` has expired at `now`.
pub fn expired(t: &str, now: &str) -> String {
    format!(
        "({t}.expires_at <= {now} AND NOT {})",
        fresh_past(t, "", now)
    )
}

/// The lock row `t` still affects its key at `now` (its expiry plus its
/// lock delay, `gone_at`, is past `now`).
pub fn present(t: &str, now: &str) -> String {
    format!(
        "({t}.gone_at > {} AND ({t}.gone_at > {now} OR {}))",
        floor(now),
        fresh_past(t, &format!(" + {t}.lock_delay_ms"), now)
    )
}

/// The lock row `t` no longer affects its key at `now`.
pub fn gone(t: &str, now: &str) -> String {
    format!(
        "({t}.gone_at <= {now} AND NOT {})",
        fresh_past(t, &format!(" + {t}.lock_delay_ms"), now)
    )
}

/// The row `t` lasts `extra` past its expiry and that is still after `now`
/// (one row, found by its key: no index range needed).
pub fn outlives(t: &str, extra: &str, now: &str) -> String {
    format!(
        "({t}.expires_at + {extra} > {now} OR {})",
        fresh_past(t, &format!(" + {extra}"), now)
    )
}

/// Rows of `t` still waiting for their fresh TTL, as a condition.
pub fn waiting(t: &str) -> String {
    format!(
        "({t}.expires_at > {ALIVE_AT} AND {t}.expires_at < {})",
        fresh_expiry(t)
    )
}

/// The fresh expiry of a row `t` that waits for it.
pub fn fresh(t: &str) -> String {
    fresh_expiry(t)
}

/// A row of `table` is live as far as its session goes: unbound, or bound to
/// a session live at `$n`.
pub fn live_by_session(table: &str, n: u8) -> String {
    format!(
        "({table}.session_id IS NULL OR EXISTS (SELECT 1 FROM sessions s \
         WHERE s.id = {table}.session_id AND {}))",
        live("s", &format!("${n}"))
    )
}

/// A row of `table` bound to a session that had expired by `$n` (its rows
/// are absent, as an expired lease's are: rule 1).
pub fn ended_by_session(table: &str, n: u8) -> String {
    format!(
        "{table}.session_id IN (SELECT id FROM sessions WHERE {})",
        expired("sessions", &format!("${n}"))
    )
}
