//! `leasehold lock …`: acquire, renew, release, show and list lock leases,
//! a key's history, and `lock run` (in [`super::run`]) to run a command
//! under one.

use std::time::Duration;

use clap::{Args, Subcommand};

use super::capacity::CapacityAction;
use super::output::{expires_in, human_ms, more, table};
use super::run::RunArgs;
use super::{CliError, ClientArgs, LeaseTokenArg, default_holder, examples, exit};
use serde_json::{Map, Value};

use crate::client::{
    AcquireBody, FencingJson, LockJson, LockMode, SessionRef, Tenure, WaiterJson, millis,
};
use crate::config::parse_duration;
use crate::domain::fencing::FencingToken;

#[derive(Debug, Args)]
#[command(after_help = examples::LOCK)]
pub struct LockCommand {
    #[command(flatten)]
    pub client: ClientArgs,
    #[command(subcommand)]
    pub action: LockAction,
}

#[derive(Debug, Subcommand)]
pub enum LockAction {
    /// Run a command while holding a lock; renew it meanwhile, release it after.
    ///
    /// With one key the command's environment has LEASEHOLD_KEY,
    /// LEASEHOLD_FENCING_TOKEN and LEASEHOLD_HOLDER.
    ///
    /// With several keys (KEY and each --key), or with --session, lock run
    /// opens a session with --ttl, acquires every key bound to it at once (all
    /// or none: if one is held, none is taken), renews the session alone while
    /// the command runs and closes it at the end, which frees every key. The
    /// environment then has LEASEHOLD_KEYS and LEASEHOLD_FENCING_TOKENS (one per
    /// line, in the order the keys were given), LEASEHOLD_SESSION (the session
    /// id) and LEASEHOLD_HOLDER; with one key, LEASEHOLD_KEY and
    /// LEASEHOLD_FENCING_TOKEN as well. If the session is lost, the command is
    /// stopped as when a lease is lost (exit code 6).
    #[command(after_help = examples::LOCK_RUN)]
    Run(RunArgs),
    /// Acquire a lease on a key and print it with its secret lease token.
    #[command(after_help = examples::LOCK_ACQUIRE)]
    Acquire(AcquireArgs),
    /// Renew a lease, keeping its fencing token.
    #[command(after_help = examples::LOCK_RENEW)]
    Renew {
        key: String,
        #[command(flatten)]
        token: LeaseTokenArg,
        /// The new TTL from now; the lease's own TTL when omitted.
        #[arg(long, value_parser = parse_duration)]
        ttl: Option<Duration>,
    },
    /// Release a lease (or, with --force and no token, every lease on the key).
    #[command(after_help = examples::LOCK_RELEASE)]
    Release {
        key: String,
        #[command(flatten)]
        token: LeaseTokenArg,
        /// Remove every lease on the key without its token (admin).
        #[arg(long, conflicts_with_all = ["lease_token", "lease_token_flag"])]
        force: bool,
    },
    /// Check a fencing token: exit 0 if a live lease on the key carries it,
    /// 9 if not (superseded by a later lease, no longer held, or never granted).
    #[command(after_help = examples::LOCK_CHECK)]
    Check {
        key: String,
        /// The fencing token a write carries (`lock acquire` printed it).
        #[arg(value_parser = fencing_token)]
        fencing_token: FencingToken,
    },
    /// Show who holds a key and who waits for it.
    #[command(after_help = examples::LOCK_SHOW)]
    Show { key: String },
    /// Show what happened to a key: its newest events, newest first.
    #[command(after_help = examples::LOCK_HISTORY)]
    History {
        key: String,
        /// How many events (1 to 500; 50 by default).
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Store, show or delete a key's capacity: the permits its leases may
    /// hold in all (a weighted semaphore kept on the server).
    #[command(after_help = examples::LOCK_CAPACITY)]
    Capacity {
        #[command(subcommand)]
        action: CapacityAction,
    },
    /// List live leases.
    #[command(after_help = examples::LOCK_LIST)]
    List {
        /// Only keys that start with this text.
        #[arg(long)]
        prefix: Option<String>,
        /// Page size (1 to 1000).
        #[arg(long)]
        limit: Option<u32>,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
}

/// What `lock acquire` takes.
#[derive(Debug, Args)]
pub struct AcquireArgs {
    key: String,
    /// How long the lease lives unless renewed.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    ttl: Duration,
    /// A cap on the lease's tenure: renewals keep it alive until it was
    /// granted plus this and never past it (the answer's ends_by).
    #[arg(long, value_parser = parse_duration)]
    max_lifetime: Option<Duration>,
    /// How long to wait for the key if it is held (at most the server's maximum).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    wait: Duration,
    /// Who holds it (informational); `host/pid-N` by default.
    #[arg(long)]
    holder: Option<String>,
    /// A shared lease: coexists with other shared leases, not with an exclusive one.
    #[arg(long)]
    shared: bool,
    /// Make the key a semaphore of N permits (every acquirer names the same
    /// N; under a stored capacity, leave it out).
    #[arg(long, value_name = "N")]
    max_holders: Option<u32>,
    /// Take K permits of the key's capacity (1 by default).
    #[arg(long, value_name = "K")]
    permits: Option<u32>,
    /// After this lease expires (not when released), keep the key unavailable this long.
    #[arg(long, value_parser = parse_duration)]
    lock_delay: Option<Duration>,
    /// A JSON object stored with the lease.
    #[arg(long, value_parser = parse_metadata)]
    metadata: Option<Map<String, Value>>,
    /// Retrying with the same key returns the same live lease.
    #[arg(long)]
    idempotency_key: Option<String>,
    /// Bind the lease to this session (from `session open`) instead of
    /// a TTL of its own: it lives exactly as long as the session.
    #[arg(
        long,
        value_name = "ID",
        requires = "session_token",
        conflicts_with = "ttl"
    )]
    session: Option<String>,
    /// The session token `session open` printed.
    #[arg(long, value_name = "SESSION_TOKEN", requires = "session")]
    session_token: Option<String>,
}

impl AcquireArgs {
    /// The request these arguments make.
    fn body(&self) -> AcquireBody {
        // clap asks for the session's token with the session, and refuses
        // --ttl beside them.
        let tenure = match self.session.clone().zip(self.session_token.clone()) {
            Some((id, token)) => Tenure::Session(SessionRef { id, token }),
            None => Tenure::Ttl(millis(self.ttl)),
        };
        AcquireBody {
            holder: self.holder.clone().unwrap_or_else(default_holder),
            tenure,
            wait_ms: (!self.wait.is_zero()).then(|| millis(self.wait)),
            mode: self.shared.then_some(LockMode::Shared),
            max_holders: self.max_holders,
            permits: self.permits,
            lock_delay_ms: self.lock_delay.map(millis),
            metadata: self.metadata.clone(),
            idempotency_key: self.idempotency_key.clone(),
            max_lifetime_ms: self.max_lifetime.map(millis),
        }
    }
}

pub fn parse_metadata(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("must be a JSON object, such as {\"az\": \"eu-west-1a\"}".into()),
        Err(e) => Err(format!("is not JSON: {e}")),
    }
}

pub async fn execute(cmd: LockCommand) -> Result<u8, CliError> {
    let args = cmd.client;
    let client = args.client()?;
    match cmd.action {
        LockAction::Run(run) => return super::run::execute(&client, run).await,
        LockAction::Capacity { action } => super::capacity::execute(&args, &client, action).await?,
        LockAction::Acquire(acquire) => {
            let lease = client.acquire_lock(&acquire.key, &acquire.body()).await?;
            args.print(&lease, |l| {
                format!(
                    "acquired {} (fencing token {}), {}\ntoken: {}\n",
                    l.key,
                    l.fencing_token,
                    expires_in(l.expires_in_ms),
                    l.token.as_deref().unwrap_or("-")
                )
            });
        }
        LockAction::Renew { key, token, ttl } => {
            let lease_token = token.require(&args, "lock renew")?;
            let lease = client.renew_lock(&key, &lease_token, ttl).await?;
            args.print(&lease, |l| {
                format!("renewed {}, {}\n", l.key, expires_in(l.expires_in_ms))
            });
        }
        LockAction::Release { key, token, force } => {
            if force {
                client.force_release_lock(&key).await?;
            } else {
                let lease_token = token.require(&args, "lock release")?;
                client.release_lock(&key, &lease_token).await?;
            }
            if !args.json {
                println!("released {key}");
            }
        }
        LockAction::Check { key, fencing_token } => {
            let checked = client.check_fencing(&key, fencing_token).await?;
            args.print(&checked, check);
            if !checked.current {
                return Ok(exit::NOT_CURRENT);
            }
        }
        LockAction::Show { key } => {
            let lock = client.get_lock(&key).await?;
            let waiters = client.lock_waiters(&key).await?.items;
            args.print(&Shown { lock, waiters }, show);
        }
        LockAction::History { key, limit } => {
            let history = client.lock_history(&key, limit).await?;
            args.print(&history, |h| {
                if h.items.is_empty() {
                    return format!("no events of {key}\n");
                }
                h.items
                    .iter()
                    .map(|e| super::watch::line(e) + "\n")
                    .collect()
            });
        }
        LockAction::List {
            prefix,
            limit,
            cursor,
        } => {
            let page = client
                .list_locks(prefix.as_deref(), limit, cursor.as_deref())
                .await?;
            args.print(&page, |p| {
                let rows: Vec<Vec<String>> = p.items.iter().map(row).collect();
                table(&["key", "holder", "fencing", "expires"], &rows)
                    + &more(p.next_cursor.as_deref())
            });
        }
    }
    Ok(exit::OK)
}

fn row(l: &LockJson) -> Vec<String> {
    vec![
        l.key.clone(),
        l.holder.clone(),
        l.fencing_token.to_string(),
        expires_in(l.expires_in_ms),
    ]
}

/// A key as `lock show` prints it: its lease and its queue.
#[derive(serde::Serialize)]
struct Shown {
    #[serde(flatten)]
    lock: LockJson,
    waiters: Vec<WaiterJson>,
}

fn show(shown: &Shown) -> String {
    let l = &shown.lock;
    let mut text = format!(
        "{} is held by {} (fencing token {}), {}, acquired at {}\n",
        l.key,
        l.holder,
        l.fencing_token,
        expires_in(l.expires_in_ms),
        l.acquired_at
    );
    if let Some(holders) = l.holders.as_ref().filter(|h| h.len() > 1) {
        let rows: Vec<Vec<String>> = holders
            .iter()
            .map(|h| {
                vec![
                    h.holder.clone(),
                    h.fencing_token.to_string(),
                    h.permits.to_string(),
                    format!("expires in {}", human_ms(h.expires_in_ms)),
                ]
            })
            .collect();
        text.push_str(&table(&["holder", "fencing", "permits", "expires"], &rows));
    }
    text + &queue(&shown.waiters)
}

/// The queue under the holders: who waits, in the order they will be
/// granted.
fn queue(waiters: &[WaiterJson]) -> String {
    if waiters.is_empty() {
        return "nobody waits\n".into();
    }
    let rows: Vec<Vec<String>> = waiters
        .iter()
        .map(|w| {
            vec![
                w.position.to_string(),
                w.holder.clone(),
                w.mode.clone(),
                format!("for {}", human_ms(w.waited_ms)),
                format!("gives up in {}", human_ms(w.wait_left_ms)),
                w.replica.clone(),
            ]
        })
        .collect();
    let header = format!("{} waiting:\n", waiters.len());
    header
        + &table(
            &["#", "holder", "mode", "waiting", "until", "replica"],
            &rows,
        )
}

fn check(c: &FencingJson) -> String {
    let what = format!("{} fencing token {}", c.key, c.fencing_token);
    if c.current {
        return format!(
            "current: {what} is held by {}, {}\n",
            c.holder.as_deref().unwrap_or("-"),
            expires_in(c.expires_in_ms.unwrap_or(0))
        );
    }
    let why = match c.reason.as_deref() {
        Some("superseded") => "a later lease holds the key",
        Some("never_granted") => "no lease was ever granted this token",
        _ => "no live lease on the key carries it",
    };
    format!("not current: {what} ({why})\n")
}

/// A fencing token as the command line names it: decimal digits alone.
fn fencing_token(text: &str) -> Result<FencingToken, String> {
    FencingToken::parse(text).map_err(|e| e.message)
}
