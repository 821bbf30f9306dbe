//! `leasehold lock run KEY [--key K]… [--] CMD…`: `flock` across hosts.
//!
//! Acquires the lock, or with several keys all of them under one session
//! ([`super::hold`]; waiting up to `--wait`, in long polls no longer than the
//! server allows), runs the command in its own process group with the leases
//! in its environment, renews the lease or the session while it runs
//! ([`super::keepalive`]), and releases the lease or closes the session when
//! the command ends. If the lease is lost (a renew answers
//! `lease-lost`), or could end before a renewal gets through, the whole
//! process group gets SIGTERM, then SIGKILL after `--kill-after`, timed so
//! that it is dead before the server could grant the key again, and
//! leasehold exits with [`exit::LEASE_LOST`]. SIGINT and SIGTERM sent to
//! leasehold are passed on to the command; the keys are freed once it has
//! exited.
//!
//! [`run`] is that command run under what is held, shared with `elect`,
//! which runs it once per term of leadership.

use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::{Instant, sleep};

use super::hold::{self, FREE_AFTER_STOP, Holding, Wait};
use super::keepalive::Budget;
use super::{CliError, default_holder, exit};
use crate::client::Client;
use crate::config::parse_duration;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The lock key.
    pub key: String,
    /// Another key to hold with KEY, all or none; repeat it for more
    /// (--key b --key c). Several keys are held under one session.
    #[arg(long = "key", value_name = "KEY")]
    pub keys: Vec<String>,
    /// Hold the key under a session of its own, as several keys always are:
    /// lock run opens it with --ttl, renews it and closes it at the end.
    #[arg(long)]
    pub session: bool,
    /// TTL of the lease (or session); it is renewed several times within it
    /// while the command runs.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub ttl: Duration,
    /// A cap on the lease's (or session's) tenure: renewed or not, it ends
    /// by then (its ends_by), and the command is stopped in time for it as
    /// when the lease is lost (exit code 6, reason lifetime_ended).
    #[arg(long, value_parser = parse_duration)]
    pub max_lifetime: Option<Duration>,
    /// How long to wait for the key (every key) if it is held (0: give up at once).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub wait: Duration,
    /// Who holds it (informational); `host/pid-N` by default.
    #[arg(long)]
    pub holder: Option<String>,
    /// After SIGTERM to a command that lost its lease, how long until SIGKILL;
    /// with 500ms for teardown, at most two thirds of --ttl. Default 5s, or
    /// two thirds of --ttl less 500ms when --ttl is too short for 5s.
    #[arg(long, value_parser = parse_duration)]
    pub kill_after: Option<Duration>,
    /// After the lease expires (not when released), keep the key unavailable
    /// this long; --kill-after plus 500ms by default. One key without
    /// --session only.
    #[arg(long, value_parser = parse_duration, conflicts_with_all = ["keys", "session"])]
    pub lock_delay: Option<Duration>,
    /// Take K permits of the key's capacity (`lock capacity set`) instead of
    /// 1: the command runs once what is held plus K fits. One key without
    /// --session only.
    #[arg(long, value_name = "K", conflicts_with_all = ["keys", "session"])]
    pub permits: Option<u32>,
    /// The command and its arguments, after `--` or not: everything from the
    /// first word that is not a flag of `lock run` on belongs to the command.
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub async fn execute(client: &Client, args: RunArgs) -> Result<u8, CliError> {
    let budget = Budget::new(args.ttl, args.kill_after)
        .map_err(|e| CliError::new(exit::USAGE, e))?
        .with_max_lifetime(args.max_lifetime);
    let holder = args.holder.clone().unwrap_or_else(default_holder);
    let wait = Wait::For(args.wait);
    let holding = if args.keys.is_empty() && !args.session {
        let lock_delay = args.lock_delay.unwrap_or_else(|| budget.lock_delay());
        let (lease, sent) = hold::acquire(
            client,
            &args.key,
            &holder,
            budget,
            lock_delay,
            args.permits,
            wait,
        )
        .await?;
        hold::keep(client, &args.key, &holder, budget, &lease, sent).await?
    } else {
        let keys = std::iter::once(args.key.clone())
            .chain(args.keys.iter().cloned())
            .collect();
        hold::set(client, keys, &holder, budget, wait).await?
    };
    run(client, holding, &args.command, budget, &mut Signals::new()?).await
}

/// SIGINT and SIGTERM, taken from their default action once for the whole
/// process: one that arrives while nothing listens (between a grant and the
/// command's start) is kept for the next `recv`.
pub struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> Result<Self, CliError> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).map_err(io_error)?,
            terminate: signal(SignalKind::terminate()).map_err(io_error)?,
        })
    }

    /// The next SIGINT or SIGTERM.
    pub async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.interrupt.recv() => Signal::SIGINT,
            _ = self.terminate.recv() => Signal::SIGTERM,
        }
    }
}

/// Runs `command` with what `holding` holds in its environment, while its
/// keeper renews it; frees it when the command ends and answers the
/// command's exit code, or stops the command when it is lost and answers
/// [`exit::LEASE_LOST`].
pub async fn run(
    client: &Client,
    mut holding: Holding,
    command: &[String],
    budget: Budget,
    signals: &mut Signals,
) -> Result<u8, CliError> {
    // From here on, SIGINT and SIGTERM are for the command, not for us.
    let mut child = match Command::new(&command[0])
        .args(&command[1..])
        .envs(holding.env.iter().map(|(name, value)| (name, value)))
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            let _ = holding.free(client, FREE_AFTER_STOP).await;
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Err(CliError::new(code, format!("{}: {e}", command[0])));
        }
    };
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);

    let outcome = loop {
        tokio::select! {
            status = child.wait() => break Ok(status.map_err(io_error)?),
            sig = signals.recv() => signal_group(pgid, sig),
            Ok(()) = holding.lost.changed() => {
                let Some(why) = holding.lost.borrow().clone() else { continue };
                let kill_at = Instant::now() + budget.kill_after();
                stop_group(&mut child, pgid, why.kill_by.map_or(kill_at, |by| by.min(kill_at))).await;
                break Err(why);
            }
        }
    };
    holding.stop_renewing();

    let what = holding.what.clone();
    match outcome {
        Ok(status) => {
            if let Err(e) = holding.kept.release(client).await {
                eprintln!("leasehold: releasing {what}: {e}");
            }
            Ok(exit_code(status))
        }
        Err(why) => {
            if why.kill_by.is_some() {
                // It may still be live: free the keys if the server hears us.
                let _ = holding.free(client, FREE_AFTER_STOP).await;
            }
            Err(CliError::new(
                exit::LEASE_LOST,
                format!("lost {what} ({}); stopped the command", why.reason),
            ))
        }
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
