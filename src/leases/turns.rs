//! Waiting one's turn: an acquire with `wait_ms` queues on every key it
//! asks for (`waiters`), tries only when first in each queue, and between
//! tries sleeps until woken, until what refused it clears, or until its
//! wait ends.

use futures::future::select_all;
use tokio::time::{Instant, sleep_until};

use super::Leases;
use super::shed::Shed;
use crate::domain::waiting::Waiting;
use crate::domain::{At, Ms};

/// What one try of a waiting grant came to.
pub(super) enum Try<T> {
    /// Granted, or refused for a reason waiting cannot cure: the answer.
    Answer(T),
    /// Refused until `clears_at` (a lease's end, a lock delay): `answer` is
    /// the refusal given if the wait runs out first.
    Until { clears_at: At, answer: T },
}

/// Who waits, as a key's queue lists it: the rest (since when, until when,
/// for how many keys) `take_turns` fills in.
pub(super) struct Asking<'a> {
    pub holder: &'a str,
    pub mode: crate::domain::LockMode,
    pub max_holders: Option<std::num::NonZeroU32>,
    pub permits: std::num::NonZeroU32,
}

/// The waiting of an acquire, for one key or a set: queues on every key of
/// `keys` in one arrival order, tries (`attempt`) only when first in every
/// queue, and between tries sleeps until woken, until what refused it clears,
/// or until the wait ends. `queued(i)` answers a request that waited its
/// whole `wait_ms` (or saw the server stop) behind others on `keys[i]`.
/// `Err` when there was no waiter slot to wait in.
pub(super) async fn take_turns<T, A, AF, Q, QF>(
    leases: &Leases,
    keys: &[String],
    wait_ms: Ms,
    who: Asking<'_>,
    mut attempt: A,
    queued: Q,
) -> Result<T, Shed>
where
    A: FnMut() -> AF,
    AF: Future<Output = Try<T>>,
    Q: Fn(usize) -> QF,
    QF: Future<Output = T>,
{
    let deadline = Instant::now() + wait_ms.to_std();
    let since = leases.now();
    let waiting = Waiting {
        holder: who.holder.to_owned(),
        mode: who.mode,
        max_holders: who.max_holders,
        permits: who.permits,
        keys: keys.len() as u32,
        since,
        until: since + wait_ms,
    };
    let tickets = leases.waiters.enqueue_all(keys, waiting);
    let mut stopping = leases.stopping();
    // Taken when the request first has to wait, held until it answers.
    let mut parked = None;
    loop {
        let mut wake_at = deadline;
        match tickets.iter().position(|t| !t.is_head()) {
            // Granted, or a refusal that waiting cannot cure. The tickets go
            // with the answer: the next waiters' turn.
            None => match attempt().await {
                Try::Answer(answer) => return Ok(answer),
                Try::Until { answer, .. } if Instant::now() >= deadline => return Ok(answer),
                Try::Until { clears_at, .. } => {
                    let in_ms = clears_at - leases.now();
                    wake_at = wake_at.min(Instant::now() + in_ms.to_std());
                }
            },
            Some(i) if Instant::now() >= deadline => return Ok(queued(i).await),
            Some(_) => {}
        }
        if parked.is_none() {
            parked = Some(leases.admission.park()?);
        }
        let woken = select_all(tickets.iter().map(|t| Box::pin(t.woken())));
        let stop = tokio::select! {
            _ = woken => false,
            () = sleep_until(wake_at) => false,
            _ = stopping.wait_for(|stop| *stop) => true,
        };
        if stop {
            return Ok(queued(0).await);
        }
    }
}
