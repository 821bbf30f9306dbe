//! `leasehold lock run KEY [--] CMD…`: `flock` across hosts.
//!
//! Acquires the lock (waiting up to `--wait`, in long polls no longer than the
//! server allows), runs the command in its own process group with the lease in
//! its environment, renews the lease while it runs ([`super::keepalive`]), and
//! releases it when the command ends. If the lease is lost (a renew answers
//! `lease-lost`), or could end before a renewal gets through, the whole
//! process group gets SIGTERM, then SIGKILL after `--kill-after`, timed so
//! that it is dead before the server could grant the key again, and
//! leasehold exits with [`exit::LEASE_LOST`]. SIGINT and SIGTERM sent to
//! leasehold are passed on to the command; the lease is released once it has
//! exited.

use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout};

use super::keepalive::{Budget, Keeper, Lost};
use super::{CliError, default_holder, exit};
use crate::client::{AcquireBody, Client, ClientError, LockJson, millis};
use crate::config::parse_duration;

/// The longest single long poll: the server's default maximum wait.
const MAX_POLL: Duration = Duration::from_secs(300);
/// Less than this left of `--wait` is not worth another poll.
const MIN_POLL: Duration = Duration::from_millis(50);
/// How long a release may take after the command was stopped for want of a
/// renewal: the server is likely unreachable, and the lease lapses anyway.
const RELEASE_AFTER_STOP: Duration = Duration::from_secs(1);

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The lock key.
    pub key: String,
    /// TTL of the lease; it is renewed several times within it while the command runs.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub ttl: Duration,
    /// How long to wait for the key if it is held (0: give up at once).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub wait: Duration,
    /// Who holds it (informational); `host/pid-N` by default.
    #[arg(long)]
    pub holder: Option<String>,
    /// After SIGTERM to a command that lost its lease, how long until SIGKILL;
    /// with 500ms for teardown, at most two thirds of --ttl.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub kill_after: Duration,
    /// After the lease expires (not when released), keep the key unavailable
    /// this long; --kill-after plus 500ms by default.
    #[arg(long, value_parser = parse_duration)]
    pub lock_delay: Option<Duration>,
    /// The command and its arguments, after `--` or not: everything from the
    /// first word that is not a flag of `lock run` on belongs to the command.
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub async fn execute(client: &Client, args: RunArgs) -> Result<u8, CliError> {
    let term = Term::new(
        &args.key,
        &args.command,
        args.holder.clone(),
        args.ttl,
        args.kill_after,
    )?;
    let lock_delay = args.lock_delay.unwrap_or_else(|| term.budget.lock_delay());
    let (lease, sent) = acquire(client, &term, lock_delay, Wait::For(args.wait)).await?;
    term.run(client, lease, sent).await
}

/// One command run under one lease: what `lock run` does once and `elect`
/// once per term of leadership.
pub struct Term<'a> {
    pub key: &'a str,
    pub command: &'a [String],
    pub holder: String,
    pub budget: Budget,
}

impl<'a> Term<'a> {
    /// Refuses a `--kill-after` that does not fit in `--ttl`.
    pub fn new(
        key: &'a str,
        command: &'a [String],
        holder: Option<String>,
        ttl: Duration,
        kill_after: Duration,
    ) -> Result<Self, CliError> {
        let budget = Budget::new(ttl, kill_after).map_err(|e| CliError::new(exit::USAGE, e))?;
        Ok(Self {
            key,
            command,
            holder: holder.unwrap_or_else(default_holder),
            budget,
        })
    }

    /// Runs the command under `lease`, granted by a request sent at `sent`:
    /// renews it meanwhile, releases it when the command ends and answers
    /// the command's exit code, or stops the command when the lease is lost
    /// and answers [`exit::LEASE_LOST`].
    pub async fn run(
        &self,
        client: &Client,
        lease: LockJson,
        sent: Instant,
    ) -> Result<u8, CliError> {
        let key = self.key;
        let received = Instant::now();
        let token = lease.token.clone().ok_or_else(|| {
            CliError::new(exit::OTHER, "the server granted the lock without a token")
        })?;
        let mut keeper = Keeper::new(client.clone(), self.budget, sent, &lease, token.clone());
        if keeper.renew_due() <= received {
            keeper.renew_now(received).await?;
        }

        // From here on, SIGINT and SIGTERM are for the command, not for us.
        let mut interrupt = signal(SignalKind::interrupt()).map_err(io_error)?;
        let mut terminate = signal(SignalKind::terminate()).map_err(io_error)?;
        let mut child = match Command::new(&self.command[0])
            .args(&self.command[1..])
            .env("LEASEHOLD_KEY", key)
            .env("LEASEHOLD_FENCING_TOKEN", lease.fencing_token.to_string())
            .env("LEASEHOLD_HOLDER", &self.holder)
            .process_group(0)
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                let _ = client.release_lock(key, &token).await;
                let code = if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                return Err(CliError::new(code, format!("{}: {e}", self.command[0])));
            }
        };
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);

        let (lost_tx, mut lost) = watch::channel(None::<Lost>);
        let renewer = tokio::spawn(keeper.keep(lost_tx));
        let kill_after = self.budget.kill_after();

        let outcome = loop {
            tokio::select! {
                status = child.wait() => break Ok(status.map_err(io_error)?),
                _ = interrupt.recv() => signal_group(pgid, Signal::SIGINT),
                _ = terminate.recv() => signal_group(pgid, Signal::SIGTERM),
                Ok(()) = lost.changed() => {
                    let Some(why) = lost.borrow().clone() else { continue };
                    let kill_at = Instant::now() + kill_after;
                    stop_group(&mut child, pgid, why.kill_by.map_or(kill_at, |by| by.min(kill_at))).await;
                    break Err(why);
                }
            }
        };
        renewer.abort();

        match outcome {
            Ok(status) => {
                if let Err(e) = client.release_lock(key, &token).await {
                    eprintln!("leasehold: releasing {key}: {e}");
                }
                Ok(exit_code(status))
            }
            Err(why) => {
                if why.kill_by.is_some() {
                    // The lease may still be live: free the key if the server hears us.
                    let _ = timeout(RELEASE_AFTER_STOP, client.release_lock(key, &token)).await;
                }
                Err(CliError::new(
                    exit::LEASE_LOST,
                    format!("lost the lock {key} ({}); stopped the command", why.reason),
                ))
            }
        }
    }
}

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

/// The pause before asking again a server that did not answer, doubled up
/// to a few seconds while it stays away.
pub const FIRST_RETRY: Duration = Duration::from_millis(200);
pub const LAST_RETRY: Duration = Duration::from_secs(5);

/// Acquires the lock, long-polling again after each `lock-held` until the
/// wait has passed, and says when the request that was granted was sent. A
/// server that allows shorter waits than [`MAX_POLL`] refuses the poll as
/// invalid; shorter polls are tried then.
pub async fn acquire(
    client: &Client,
    term: &Term<'_>,
    lock_delay: Duration,
    wait: Wait,
) -> Result<(LockJson, Instant), CliError> {
    let deadline = match wait {
        Wait::For(wait) => Some(Instant::now() + wait),
        Wait::Forever { .. } => None,
    };
    let mut answered = matches!(wait, Wait::Forever { answered: true });
    let mut max_poll = MAX_POLL;
    let mut pause = FIRST_RETRY;
    loop {
        let sent = Instant::now();
        let poll = deadline.map_or(max_poll, |d| {
            d.saturating_duration_since(sent).min(max_poll)
        });
        let request = AcquireBody {
            holder: term.holder.clone(),
            ttl_ms: millis(term.budget.ttl()),
            wait_ms: (!poll.is_zero()).then(|| millis(poll)),
            lock_delay_ms: (!lock_delay.is_zero()).then(|| millis(lock_delay)),
            ..AcquireBody::default()
        };
        let more = |now: Instant| deadline.is_none_or(|d| now + MIN_POLL < d);
        let granted = client.acquire_lock(term.key, &request).await;
        answered |= matches!(granted, Ok(_) | Err(ClientError::Problem { .. }));
        match granted {
            Err(e) if e.is_problem("lock-held") && more(Instant::now()) => {}
            Err(e) if e.field() == Some("wait_ms") && poll > MIN_POLL => max_poll = poll / 2,
            Err(e) if deadline.is_none() && answered && transient(&e) => {
                if pause == FIRST_RETRY {
                    eprintln!("leasehold: {e}; trying again");
                }
                sleep(pause).await;
                pause = (pause * 2).min(LAST_RETRY);
            }
            other => return Ok((other?, sent)),
        }
    }
}

/// A failure that asking again may cure: no answer, or the server failing.
pub fn transient(e: &ClientError) -> bool {
    match e {
        ClientError::Unreachable { .. } | ClientError::Unexpected(_) => true,
        ClientError::Problem { status, .. } => *status >= 500,
    }
}

/// SIGTERM to the group, SIGKILL at `kill_at` to whatever is left of it.
async fn stop_group(child: &mut Child, pgid: Option<Pid>, kill_at: Instant) {
    signal_group(pgid, Signal::SIGTERM);
    let _ = tokio::time::timeout_at(kill_at, child.wait()).await;
    // Members of the group may outlive its leader.
    while Instant::now() < kill_at && group_alive(pgid) {
        sleep(Duration::from_millis(50).min(kill_at.saturating_duration_since(Instant::now())))
            .await;
    }
    signal_group(pgid, Signal::SIGKILL);
    let _ = child.wait().await;
}

fn signal_group(pgid: Option<Pid>, sig: Signal) {
    if let Some(pgid) = pgid {
        let _ = killpg(pgid, sig);
    }
}

fn group_alive(pgid: Option<Pid>) -> bool {
    pgid.is_some_and(|pgid| killpg(pgid, None).is_ok())
}

/// The command's own code, or 128+N when it died of signal N, as shells do.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(exit::OTHER),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(exit::OTHER),
        (None, None) => exit::OTHER,
    }
}

pub fn io_error(e: std::io::Error) -> CliError {
    CliError::new(exit::OTHER, e.to_string())
}
