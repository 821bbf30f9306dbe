//! `leasehold watch`: the change log as lines, following it forever. It
//! resumes by itself after a reconnect from the last revision it printed
//! ([`super::follow`]), so no event is printed twice and none is skipped.

use clap::Args;

use super::follow::Follower;
use super::{CliError, ClientArgs, examples};
use crate::client::{EventJson, EventQuery};
use crate::domain::Revision;

#[derive(Debug, Args)]
#[command(after_help = examples::WATCH)]
pub struct WatchCommand {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Only lock events of keys that start with this text.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Only reservation events of this pool.
    #[arg(long)]
    pub pool: Option<String>,
    /// Start after this revision (the first column of a line printed
    /// before); from now on by default.
    #[arg(long, value_name = "REV")]
    pub since: Option<u64>,
}

pub async fn execute(cmd: WatchCommand) -> Result<u8, CliError> {
    let args = cmd.client;
    let query = EventQuery {
        prefix: cmd.prefix,
        pool: cmd.pool,
        since: cmd
            .since
            .map(|s| Revision::new(i64::try_from(s).unwrap_or(i64::MAX))),
    };
    let mut follower = Follower::new(args.client()?, query);
    loop {
        for event in follower.next().await? {
            args.print(&event, line);
        }
    }
}

/// `42 lock.released db/primary holder=node-7 fencing=17 reason=expired`.
pub fn line(e: &EventJson) -> String {
    let resource = match (&e.key, &e.pool, &e.subnet, &e.id) {
        (Some(key), ..) => key.clone(),
        (None, Some(pool), Some(subnet), Some(id)) => format!("{pool} {subnet} {id}"),
        (None, Some(pool), ..) => pool.clone(),
        _ => e.session.clone().unwrap_or_default(),
    };
    let mut text = format!("{} {} {resource}", e.revision, e.kind);
    if let Some(holder) = &e.holder {
        text.push_str(&format!(" holder={holder}"));
    }
    if let Some(fencing) = e.fencing_token {
        text.push_str(&format!(" fencing={fencing}"));
    }
    if let Some(session) = e
        .session
        .as_ref()
        .filter(|_| e.key.is_some() || e.pool.is_some())
    {
        text.push_str(&format!(" session={session}"));
    }
    if let Some(reason) = &e.reason {
        text.push_str(&format!(" reason={reason}"));
    }
    text
}
