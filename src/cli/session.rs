//! `leasehold session …`: open, renew, close, show and list sessions, the
//! one heartbeat that keeps every lease bound to it alive.

use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use super::lock::parse_metadata;
use super::output::{expires_in, more, table};
use super::{CliError, ClientArgs, LeaseTokenArg, default_holder, examples, exit};
use crate::client::{OpenSessionBody, SessionJson, SessionLeasesJson, millis};
use crate::config::parse_duration;

#[derive(Debug, Args)]
#[command(after_help = examples::SESSION)]
pub struct SessionCommand {
    #[command(flatten)]
    pub client: ClientArgs,
    #[command(subcommand)]
    pub action: SessionAction,
}

#[derive(Debug, Subcommand)]
pub enum SessionAction {
    /// Open a session and print its id and secret session token.
    Open {
        /// How long the session (and every lease bound to it) lives unless renewed.
        #[arg(long, default_value = "30s", value_parser = parse_duration)]
        ttl: Duration,
        /// A cap on the session's tenure: renewals keep it alive until it was
        /// granted plus this and never past it (the answer's ends_by).
        #[arg(long, value_parser = parse_duration)]
        max_lifetime: Option<Duration>,
        /// Who holds it (informational); `host/pid-N` by default.
        #[arg(long)]
        holder: Option<String>,
        /// A JSON object stored with the session.
        #[arg(long, value_parser = parse_metadata)]
        metadata: Option<Map<String, Value>>,
        /// Retrying with the same key returns the same live session.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Keep a session, and every lease bound to it, alive.
    Renew {
        id: String,
        /// The session token `session open` printed.
        #[command(flatten)]
        token: LeaseTokenArg,
        /// The new TTL from now; the session's own TTL when omitted.
        #[arg(long, value_parser = parse_duration)]
        ttl: Option<Duration>,
    },
    /// Close a session, releasing every lease bound to it (or, with --force
    /// and no token, close it as an admin).
    Close {
        id: String,
        #[command(flatten)]
        token: LeaseTokenArg,
        /// Close it without its token (admin).
        #[arg(long, conflicts_with_all = ["lease_token", "lease_token_flag"])]
        force: bool,
    },
    /// Show a session, how many leases it holds, and which (with --json,
    /// the session alone).
    Show { id: String },
    /// List the live sessions this API token may see, with what each holds.
    List {
        /// Only the sessions of this holder.
        #[arg(long)]
        holder: Option<String>,
        /// Page size (1 to 1000).
        #[arg(long)]
        limit: Option<u32>,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
}

fn describe(s: &SessionJson) -> String {
    let mut text = format!(
        "session {} held by {}, {}\n",
        s.id,
        s.holder,
        expires_in(s.expires_in_ms)
    );
    if let (Some(locks), Some(reservations)) = (s.locks, s.reservations) {
        text.push_str(&format!(
            "holds {locks} locks and {reservations} reservations\n"
        ));
    }
    if let Some(token) = &s.token {
        text.push_str(&format!("token: {token}\n"));
    }
    text
}

/// One line per lease bound to the session, as its end would release them.
fn bound(l: &SessionLeasesJson) -> String {
    let mut text = String::new();
    for lock in &l.locks {
        text.push_str(&format!(
            "lock {} (fencing token {})\n",
            lock.key, lock.fencing_token
        ));
    }
    for r in &l.reservations {
        text.push_str(&format!("reservation {} {} ({})\n", r.pool, r.subnet, r.id));
    }
    for m in &l.members {
        text.push_str(&format!("member {} of {}\n", m.member, m.group));
    }
    if l.truncated {
        text.push_str("(at most 1000 of each are shown)\n");
    }
    text
}

fn row(s: &SessionJson) -> Vec<String> {
    let count = |n: Option<u64>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
    vec![
        s.id.clone(),
        s.holder.clone(),
        count(s.locks),
        count(s.reservations),
        expires_in(s.expires_in_ms),
    ]
}

pub async fn execute(cmd: SessionCommand) -> Result<u8, CliError> {
    let args = cmd.client;
    let client = args.client()?;
    match cmd.action {
        SessionAction::Open {
            ttl,
            max_lifetime,
            holder,
            metadata,
            idempotency_key,
        } => {
            let request = OpenSessionBody {
                holder: holder.unwrap_or_else(default_holder),
                ttl_ms: millis(ttl),
                max_lifetime_ms: max_lifetime.map(millis),
                metadata,
                idempotency_key,
            };
            let session = client.open_session(&request).await?;
            args.print(&session, describe);
        }
        SessionAction::Renew { id, token, ttl } => {
            let session_token = token.require(&args, "session renew")?;
            let session = client.renew_session(&id, &session_token, ttl).await?;
            args.print(&session, |s| {
                format!(
                    "renewed session {}, {}\n",
                    s.id,
                    expires_in(s.expires_in_ms)
                )
            });
        }
        SessionAction::Close { id, token, force } => {
            if force {
                client.force_close_session(&id).await?;
            } else {
                let session_token = token.require(&args, "session close")?;
                client.close_session(&id, &session_token).await?;
            }
            if !args.json {
                println!("closed session {id}");
            }
        }
        SessionAction::Show { id } => {
            let session = client.get_session(&id).await?;
            if args.json {
                args.print(&session, describe);
            } else {
                let leases = client.session_leases(&id).await?;
                args.print(&session, |s| describe(s) + &bound(&leases));
            }
        }
        SessionAction::List {
            holder,
            limit,
            cursor,
        } => {
            let page = client
                .list_sessions(holder.as_deref(), limit, cursor.as_deref())
                .await?;
            args.print(&page, |p| {
                let rows: Vec<Vec<String>> = p.items.iter().map(row).collect();
                table(&["id", "holder", "locks", "reservations", "expires"], &rows)
                    + &more(p.next_cursor.as_deref())
            });
        }
    }
    Ok(exit::OK)
}
