//! What `lock run` and `elect` hold while their command runs, and how they
//! get it: one lease with a TTL of its own, or several keys taken at once as
//! a lock set bound to a session that `lock run` opens, so that one renewal
//! keeps every key and closing the session frees them all in one transaction.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};

use super::keepalive::{Budget, Keeper, Kept, Lost, capped};
use super::retry::{FIRST_RETRY, LAST_RETRY, transient};
use super::{CliError, exit};
use crate::client::{
    AcquireBody, Client, ClientError, LockJson, LockSetBody, OpenSessionBody, SessionJson,
    SessionRef, Tenure, millis,
};
use crate::domain::fencing::FencingToken;
use crate::token::new_id;

/// The longest single long poll: the server's default maximum wait.
const MAX_POLL: Duration = Duration::from_secs(300);
/// Less than this left of `--wait` is not worth another poll.
const MIN_POLL: Duration = Duration::from_millis(50);
/// How long freeing what was held may take when the command never ran or was
/// stopped for want of a renewal: the lease lapses anyway.
pub const FREE_AFTER_STOP: Duration = Duration::from_secs(1);

/// How long an acquire waits for a held key.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// Up to this long, then the refusal is the answer.
    For(Duration),
    /// Until granted, riding out an unreachable or failing server once it
    /// has answered (`answered`: already, before this acquire): a server
    /// never reached is more likely a wrong URL, and answers at once.
    Forever { answered: bool },
}

/// Held keys, and the keeper renewing them.
pub struct Holding {
    pub kept: Kept,
    /// What the messages call it: `the lock K`, `the session ID (keys a, b)`.
    pub what: String,
    /// The environment of the command.
    pub env: Vec<(&'static str, String)>,
    /// Says why, once the lease or session is lost.
    pub lost: watch::Receiver<Option<Lost>>,
    renewer: JoinHandle<()>,
}

impl Holding {
    fn start(kept: Kept, keeper: Keeper) -> Self {
        let (lost_tx, lost) = watch::channel(None::<Lost>);
        Self {
            what: kept.to_string(),
            kept,
            env: Vec::new(),
            lost,
            renewer: tokio::spawn(keeper.keep(lost_tx)),
        }
    }

    /// Stops renewing and frees every key, giving up after `limit`.
    pub async fn free(self, client: &Client, limit: Duration) -> Result<(), String> {
        self.renewer.abort();
        match timeout(limit, self.kept.release(client)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("no answer".into()),
        }
    }

    /// Stops renewing; what is held is left to the caller.
    pub fn stop_renewing(&self) {
        self.renewer.abort();
    }
}

/// Acquires KEY as one lease with the budget's TTL, waiting as `wait`
/// says, and says when the request that was granted was sent.
pub async fn acquire(
    client: &Client,
    key: &str,
    holder: &str,
    budget: Budget,
    lock_delay: Duration,
    permits: Option<u32>,
    wait: Wait,
) -> Result<(LockJson, Instant), CliError> {
    // Every try carries one key: a grant whose answer was lost is answered
    // again to the retry instead of holding the key against it.
    let idempotency_key = new_id();
    let acquired = long_poll(wait, |wait_ms| {
        let request = AcquireBody {
            idempotency_key: Some(idempotency_key.clone()),
            holder: holder.to_owned(),
            tenure: Tenure::Ttl(millis(budget.ttl())),
            wait_ms,
            mode: None,
            max_holders: None,
            permits,
            lock_delay_ms: (!lock_delay.is_zero()).then(|| millis(lock_delay)),
            metadata: None,
            max_lifetime_ms: budget.max_lifetime().map(millis),
        };
        async move { client.acquire_lock(key, &request).await }
    });
    Ok(acquired.await?)
}

/// Keeps `lease` of KEY, granted by a request sent at `sent`, renewing it at
/// once if the grant came too late for the first renewal. The lease's life
/// counts from `sent` plus what the server says the request waited, never
/// later than its answer arrived.
pub async fn keep(
    client: &Client,
    key: &str,
    holder: &str,
    budget: Budget,
    lease: &LockJson,
    sent: Instant,
) -> Result<Holding, CliError> {
    let received = Instant::now();
    let waited = Duration::from_millis(lease.waited_ms.unwrap_or(0));
    let sent = (sent + waited).min(received);
    let token = lease
        .token
        .clone()
        .ok_or_else(|| CliError::new(exit::OTHER, "the server granted the lock without a token"))?;
    let kept = Kept::Lock {
        key: key.to_owned(),
        token,
    };
    let mut keeper = Keeper::new(
        client.clone(),
        budget,
        sent,
        lease.expires_in_ms,
        kept.clone(),
    )
    .capped(capped(lease.expires_in_ms, &lease.extra));
    if keeper.renew_due() <= received {
        keeper.renew_now(received).await?;
    }
    let mut holding = Holding::start(kept, keeper);
    holding.env = vec![
        ("LEASEHOLD_KEY", key.to_owned()),
        ("LEASEHOLD_FENCING_TOKEN", lease.fencing_token.to_string()),
        ("LEASEHOLD_HOLDER", holder.to_owned()),
    ];
    Ok(holding)
}

/// Opens a session with the TTL and keeps it alive from then on, then
/// acquires every key bound to it, all or none. If the keys cannot be had,
/// the session is closed again.
pub async fn set(
    client: &Client,
    keys: Vec<String>,
    holder: &str,
    budget: Budget,
    wait: Wait,
) -> Result<Holding, CliError> {
    let (mut holding, bound) = open_session(client, holder, budget).await?;
    holding.what = format!("{} (keys {})", holding.kept, keys.join(", "));

    // The session must live while the request waits for the keys; a set
    // whose answer was lost is answered again to the retry (its leases are
    // bound to this very session, and would never end while it lives).
    let idempotency_key = new_id();
    let acquired = long_poll(wait, |wait_ms| {
        let request = LockSetBody {
            idempotency_key: Some(idempotency_key.clone()),
            keys: keys.clone(),
            holder: holder.to_owned(),
            tenure: Tenure::Session(bound.clone()),
            wait_ms,
            metadata: None,
        };
        async move { client.acquire_lock_set(&request).await }
    });
    let outcome = tokio::select! {
        acquired = acquired => acquired.map_err(CliError::from),
        Ok(why) = holding.lost.wait_for(Option::is_some) => {
            let why = why.clone().unwrap_or_else(|| unreachable!());
            let code = if why.kill_by.is_some() { exit::UNAVAILABLE } else { exit::CONFLICT };
            Err(CliError::new(
                code,
                format!("lost {} while waiting for the keys ({})", holding.what, why.reason),
            ))
        }
    };
    let leases = match outcome {
        Ok((leases, _)) => leases,
        Err(e) => {
            let _ = holding.free(client, FREE_AFTER_STOP).await;
            return Err(e);
        }
    };
    set_env(&mut holding, &keys, &leases, bound.id, holder);
    Ok(holding)
}

/// Opens a session with the TTL and keeps it alive from then on.
async fn open_session(
    client: &Client,
    holder: &str,
    budget: Budget,
) -> Result<(Holding, SessionRef), CliError> {
    let sent = Instant::now();
    let session = client
        .open_session(&OpenSessionBody {
            holder: holder.to_owned(),
            ttl_ms: millis(budget.ttl()),
            max_lifetime_ms: budget.max_lifetime().map(millis),
            metadata: None,
            idempotency_key: None,
        })
        .await?;
    let SessionJson { id, token, .. } = session.clone();
    let token = token.ok_or_else(|| {
        CliError::new(exit::OTHER, "the server opened the session without a token")
    })?;
    let bound = SessionRef {
        id: id.clone(),
        token: token.clone(),
    };
    let kept = Kept::Session { id, token };
    let keeper = Keeper::new(
        client.clone(),
        budget,
        sent,
        session.expires_in_ms,
        kept.clone(),
    )
    .capped(capped(session.expires_in_ms, &session.extra));
    Ok((Holding::start(kept, keeper), bound))
}

/// What the command of a held set finds in its environment: the keys and
/// their fencing tokens, in the order given, the session and the holder.
fn set_env(
    holding: &mut Holding,
    keys: &[String],
    leases: &[LockJson],
    session: String,
    holder: &str,
) {
    let fencing: HashMap<&str, FencingToken> = leases
        .iter()
        .map(|l| (l.key.as_str(), l.fencing_token))
        .collect();
    let tokens: Vec<String> = keys
        .iter()
        .map(|k| {
            fencing
                .get(k.as_str())
                .map_or_else(String::new, FencingToken::to_string)
        })
        .collect();
    if let ([key], [token]) = (keys, tokens.as_slice()) {
        holding.env.push(("LEASEHOLD_KEY", key.clone()));
        holding.env.push(("LEASEHOLD_FENCING_TOKEN", token.clone()));
    }
    holding.env.extend([
        ("LEASEHOLD_KEYS", keys.join("\n")),
        ("LEASEHOLD_FENCING_TOKENS", tokens.join("\n")),
        ("LEASEHOLD_SESSION", session),
        ("LEASEHOLD_HOLDER", holder.to_owned()),
    ]);
}

/// Sends requests until one is not refused as `lock-held` or the wait has
/// passed, each a long poll of at most what is left (and of at most what the
/// server allows: a poll refused as too long is tried shorter), and says when
/// the one answered was sent. Waiting forever, a server that has answered is
/// asked again after a pause while it is unreachable or failing.
async fn long_poll<T, F, Fut>(wait: Wait, mut attempt: F) -> Result<(T, Instant), ClientError>
where
    F: FnMut(Option<u64>) -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let (deadline, mut answered) = match wait {
        Wait::For(wait) => (Some(Instant::now() + wait), false),
        Wait::Forever { answered } => (None, answered),
    };
    let more = |now: Instant| deadline.is_none_or(|d| now + MIN_POLL < d);
    let mut max_poll = MAX_POLL;
    let mut pause = FIRST_RETRY;
    loop {
        let sent = Instant::now();
        let poll = deadline.map_or(max_poll, |d| {
            d.saturating_duration_since(sent).min(max_poll)
        });
        let answer = attempt((!poll.is_zero()).then(|| millis(poll))).await;
        answered |= matches!(answer, Ok(_) | Err(ClientError::Problem { .. }));
        match answer {
            Err(e) if e.is_problem("lock-held") && more(Instant::now()) => {}
            Err(e) if e.field() == Some("wait_ms") && poll > MIN_POLL => max_poll = poll / 2,
            Err(e) if deadline.is_none() && answered && transient(&e) => {
                if pause == FIRST_RETRY {
                    eprintln!("leasehold: {e}; trying again");
                }
                sleep(pause).await;
                pause = (pause * 2).min(LAST_RETRY);
            }
            other => return other.map(|answer| (answer, sent)),
        }
    }
}
