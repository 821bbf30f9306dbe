//! `leasehold lock run KEY -- CMD…`: `flock` across hosts.
//!
//! Acquires the lock (waiting up to `--wait`, in long polls no longer than the
//! server allows), runs the command in its own process group with the lease in
//! its environment, renews the lease at a third of its TTL, and releases it
//! when the command ends. If the lease is lost (a renew answers `lease-lost`, or
//! the TTL runs out with no renew getting through) the whole process group gets
//! SIGTERM, then SIGKILL after `--kill-after`, and leasehold exits with
//! [`exit::LEASE_LOST`]. SIGINT and SIGTERM sent to leasehold are passed on to
//! the command; the lease is released once it has exited.

use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout};

use super::{CliError, default_holder, exit};
use crate::client::{AcquireLock, Client, ClientError, LockLease, millis};
use crate::config::parse_duration;

/// The longest single long poll: the server's default maximum wait.
const MAX_POLL: Duration = Duration::from_secs(300);
/// Less than this left of `--wait` is not worth another poll.
const MIN_POLL: Duration = Duration::from_millis(50);

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The lock key.
    pub key: String,
    /// TTL of the lease; it is renewed every third of it while the command runs.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub ttl: Duration,
    /// How long to wait for the key if it is held (0: give up at once).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub wait: Duration,
    /// Who holds it (informational); `host/pid-N` by default.
    #[arg(long)]
    pub holder: Option<String>,
    /// After SIGTERM to a command that lost its lease, how long until SIGKILL.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub kill_after: Duration,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub async fn execute(client: &Client, args: RunArgs) -> Result<u8, CliError> {
    let holder = args.holder.clone().unwrap_or_else(default_holder);
    let lease = acquire(client, &args, &holder).await?;
    let token = lease
        .token
        .clone()
        .ok_or_else(|| CliError::new(exit::OTHER, "the server granted the lock without a token"))?;

    // From here on, SIGINT and SIGTERM are for the command, not for us.
    let mut interrupt = signal(SignalKind::interrupt()).map_err(io_error)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(io_error)?;
    let mut child = match Command::new(&args.command[0])
        .args(&args.command[1..])
        .env("LEASEHOLD_KEY", &args.key)
        .env("LEASEHOLD_FENCING_TOKEN", lease.fencing_token.to_string())
        .env("LEASEHOLD_HOLDER", &holder)
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            let _ = client.release_lock(&args.key, &token).await;
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Err(CliError::new(code, format!("{}: {e}", args.command[0])));
        }
    };
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);

    let (lost_tx, mut lost) = watch::channel(None::<String>);
    let renewer = tokio::spawn(renew_until_lost(
        client.clone(),
        args.key.clone(),
        token.clone(),
        args.ttl,
        Instant::now() + Duration::from_millis(lease.expires_in_ms),
        lost_tx,
    ));

    let outcome = loop {
        tokio::select! {
            status = child.wait() => break Ok(status.map_err(io_error)?),
            _ = interrupt.recv() => signal_group(pgid, Signal::SIGINT),
            _ = terminate.recv() => signal_group(pgid, Signal::SIGTERM),
            Ok(()) = lost.changed() => {
                let reason = lost.borrow().clone().unwrap_or_default();
                stop_group(&mut child, pgid, args.kill_after).await;
                break Err(reason);
            }
        }
    };
    renewer.abort();

    match outcome {
        Ok(status) => {
            if let Err(e) = client.release_lock(&args.key, &token).await {
                eprintln!("leasehold: releasing {}: {e}", args.key);
            }
            Ok(exit_code(status))
        }
        Err(reason) => Err(CliError::new(
            exit::LEASE_LOST,
            format!("lost the lock {} ({reason}); stopped the command", args.key),
        )),
    }
}

/// Acquires the lock, long-polling again after each `lock-held` until `--wait`
/// has passed. A server that allows shorter waits than [`MAX_POLL`] refuses
/// the poll as invalid; shorter polls are tried then.
async fn acquire(client: &Client, args: &RunArgs, holder: &str) -> Result<LockLease, CliError> {
    let deadline = Instant::now() + args.wait;
    let mut max_poll = MAX_POLL;
    loop {
        let poll = deadline
            .saturating_duration_since(Instant::now())
            .min(max_poll);
        let request = AcquireLock {
            holder: holder.to_owned(),
            ttl_ms: millis(args.ttl),
            wait_ms: (!poll.is_zero()).then(|| millis(poll)),
            ..AcquireLock::default()
        };
        match client.acquire_lock(&args.key, &request).await {
            Err(e) if e.is_problem("lock-held") && Instant::now() + MIN_POLL < deadline => {}
            Err(e) if e.field() == Some("wait_ms") && poll > MIN_POLL => max_poll = poll / 2,
            other => return Ok(other?),
        }
    }
}

/// Renews every third of the TTL. A failed renew is retried (every second at
/// most) until the lease would have expired; a `lease-lost` ends it at once.
async fn renew_until_lost(
    client: Client,
    key: String,
    token: String,
    ttl: Duration,
    mut valid_until: Instant,
    lost: watch::Sender<Option<String>>,
) {
    let period = ttl / 3;
    let retry = (ttl / 10).clamp(Duration::from_millis(50), Duration::from_secs(1));
    let mut next = Instant::now() + period;
    loop {
        tokio::select! {
            () = sleep_until_instant(next) => {}
            () = sleep_until_instant(valid_until) => {
                let _ = lost.send(Some(format!("no renewal got through within its TTL of {}", crate::config::format_duration(ttl))));
                return;
            }
        }
        let sent = Instant::now();
        let left = valid_until.saturating_duration_since(sent);
        match timeout(left, client.renew_lock(&key, &token, Some(ttl))).await {
            Ok(Ok(lease)) => {
                valid_until = sent + Duration::from_millis(lease.expires_in_ms);
                next = sent + period;
            }
            Ok(Err(e)) if e.is_problem("lease-lost") => {
                let _ = lost.send(Some(e.to_string()));
                return;
            }
            Ok(Err(ClientError::Problem { status: 404, .. })) => {
                let _ = lost.send(Some("the lock is gone".into()));
                return;
            }
            Ok(Err(_)) | Err(_) => next = Instant::now() + retry,
        }
    }
}

async fn sleep_until_instant(at: Instant) {
    tokio::time::sleep_until(at).await;
}

/// SIGTERM to the group, SIGKILL after `kill_after` to whatever is left of it.
async fn stop_group(child: &mut Child, pgid: Option<Pid>, kill_after: Duration) {
    signal_group(pgid, Signal::SIGTERM);
    let deadline = Instant::now() + kill_after;
    let _ = timeout(kill_after, child.wait()).await;
    // Members of the group may outlive its leader.
    while Instant::now() < deadline && group_alive(pgid) {
        sleep(Duration::from_millis(50)).await;
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

fn io_error(e: std::io::Error) -> CliError {
    CliError::new(exit::OTHER, e.to_string())
}
