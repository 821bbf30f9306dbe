//! `leasehold elect NAME -- CMD…`: campaign for leadership of `NAME` (the
//! lock of that key) and run the command while leading; `elect NAME
//! --observe`: print who leads, once per change.
//!
//! A campaigner waits for the lock in long polls, riding out an unreachable
//! server once it has reached it (a server never reached answers at once,
//! exit 5: the URL is likely wrong), then runs the command under the lease
//! exactly as `lock run` does ([`super::run::run`]): renewed meanwhile, stopped (SIGTERM, SIGKILL
//! after `--kill-after`) before the lease can end if it is lost. Losing
//! leadership does not end the campaign: the command is stopped and the
//! campaigner waits for the lock again, so a leader cut off by a partition
//! rejoins as a candidate by itself and N campaigners keep one leader as
//! long as any of them lives (etcd's election does the same). `--once`
//! exits instead, with the `lock run` code for a lost lease (6), for a
//! supervisor that restarts it. A command that ends by itself ends the
//! campaign: the lock is released and its exit code is leasehold's.

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::follow::Follower;
use super::hold::{self, Wait};
use super::keepalive::Budget;
use super::retry::{FIRST_RETRY, LAST_RETRY, transient};
use super::run;
use super::{CliError, ClientArgs, default_holder, examples, exit};
use crate::client::{Client, EventJson, EventQuery};
use crate::config::parse_duration;
use crate::domain::fencing::FencingToken;

#[derive(Debug, Args)]
#[command(after_help = examples::ELECT)]
pub struct ElectCommand {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The election: the lock key its leader holds.
    pub name: String,
    /// Print the leader's holder and fencing token at start and at each
    /// change, until interrupted, instead of campaigning.
    #[arg(long, conflicts_with_all = ["command", "once"])]
    pub observe: bool,
    /// After losing leadership, exit (code 6) instead of campaigning again.
    #[arg(long)]
    pub once: bool,
    /// TTL of the leader's lease; renewed several times within it.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub ttl: Duration,
    /// The leader's identity, as observers see it; `host/pid-N` by default.
    #[arg(long)]
    pub holder: Option<String>,
    /// After SIGTERM to a command that lost leadership, how long until
    /// SIGKILL; with 500ms for teardown, at most two thirds of --ttl. Default
    /// 5s, or two thirds of --ttl less 500ms when --ttl is too short for 5s.
    #[arg(long, value_parser = parse_duration)]
    pub kill_after: Option<Duration>,
    /// The command to run while leading, after `--`.
    #[arg(
        required_unless_present = "observe",
        trailing_var_arg = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
}

pub async fn execute(cmd: ElectCommand) -> Result<u8, CliError> {
    let client = cmd.client.client()?;
    if cmd.observe {
        return observe(&client, &cmd).await;
    }
    let budget = Budget::new(cmd.ttl, cmd.kill_after).map_err(|e| CliError::new(exit::USAGE, e))?;
    let holder = cmd.holder.clone().unwrap_or_else(default_holder);
    let lock_delay = budget.lock_delay();
    // Installed once: while campaigning, an interrupt ends the campaign;
    // while leading, it goes to the command, even one that arrives before
    // the command has started.
    let mut signals = run::Signals::new()?;
    let mut wait = Wait::Forever { answered: false };
    loop {
        let (lease, sent) = tokio::select! {
            granted = hold::acquire(&client, &cmd.name, &holder, budget, lock_delay, None, wait) => granted?,
            sig = signals.recv() => return Ok(128 + sig as u8),
        };
        eprintln!(
            "leasehold: leading {} as {} (fencing token {})",
            cmd.name, holder, lease.fencing_token
        );
        wait = Wait::Forever { answered: true };
        let term = match hold::keep(&client, &cmd.name, &holder, budget, &lease, sent).await {
            Ok(holding) => run::run(&client, holding, &cmd.command, budget, &mut signals).await,
            Err(e) => Err(e),
        };
        match term {
            // Lost before the command started, or while it ran.
            Err(lost) if !cmd.once && matches!(lost.code, exit::LEASE_LOST | exit::CONFLICT) => {
                eprintln!("leasehold: {}; campaigning again", lost.message);
            }
            ended => return ended,
        }
    }
}

/// Who leads, as `--observe` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Leader {
    key: String,
    holder: Option<String>,
    fencing_token: Option<FencingToken>,
}

impl Leader {
    fn line(&self) -> String {
        match (&self.holder, self.fencing_token) {
            (Some(holder), Some(fencing)) => {
                format!("{}: leader {holder} (fencing token {fencing})", self.key)
            }
            _ => format!("{}: no leader", self.key),
        }
    }
}

/// The leader now, then one line per change: the lock's state first, then
/// its events from a revision read before it. Fencing tokens only grow, so
/// an event older than what was read (its token no greater) changes nothing.
/// A history compacted away is met by reading the state afresh.
async fn observe(client: &Client, cmd: &ElectCommand) -> Result<u8, CliError> {
    let query = EventQuery {
        prefix: Some(cmd.name.clone()),
        ..EventQuery::default()
    };
    let mut follower = Follower::new(client.clone(), query);
    let mut shown: Option<Leader> = None;
    loop {
        let mut events = follower.now().await?;
        let mut leader = current(client, &cmd.name).await?;
        // The highest fencing token known: nothing at or below it is news.
        let mut high = leader.fencing_token.unwrap_or(FencingToken::new(0));
        show(&cmd.client, &mut shown, &leader);
        loop {
            for event in events
                .iter()
                .filter(|e| e.key.as_deref() == Some(&cmd.name))
            {
                apply(&mut leader, &mut high, event);
                show(&cmd.client, &mut shown, &leader);
            }
            events = match follower.next().await {
                Ok(events) => events,
                Err(e) if e.code == exit::HISTORY_COMPACTED => {
                    follower.restart();
                    break;
                }
                Err(e) => return Err(e),
            };
        }
    }
}

/// Prints `leader` unless it is the one printed last.
fn show(args: &ClientArgs, shown: &mut Option<Leader>, leader: &Leader) {
    if shown.as_ref() != Some(leader) {
        args.print(leader, Leader::line);
        *shown = Some(leader.clone());
    }
}

/// The leader as `GET /v1/locks/{key}` shows it.
async fn current(client: &Client, key: &str) -> Result<Leader, CliError> {
    let mut pause = FIRST_RETRY;
    loop {
        match client.get_lock(key).await {
            Ok(lease) => {
                return Ok(Leader {
                    key: key.to_owned(),
                    holder: Some(lease.holder),
                    fencing_token: Some(lease.fencing_token),
                });
            }
            Err(e) if e.status() == Some(404) => {
                return Ok(Leader {
                    key: key.to_owned(),
                    holder: None,
                    fencing_token: None,
                });
            }
            Err(e) if transient(&e) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LAST_RETRY);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn apply(leader: &mut Leader, high: &mut FencingToken, event: &EventJson) {
    let Some(fencing) = event.fencing_token else {
        return;
    };
    match event.kind.as_str() {
        "lock.acquired" if fencing > *high => {
            *high = fencing;
            leader.holder = event.holder.clone();
            leader.fencing_token = Some(fencing);
        }
        "lock.released" if leader.fencing_token == Some(fencing) => {
            leader.holder = None;
            leader.fencing_token = None;
        }
        _ => {}
    }
}
