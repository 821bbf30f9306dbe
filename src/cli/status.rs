//! `leasehold status`: what the API token may read, counted (live locks,
//! waiters, sessions, groups, members, reservations), the database the
//! server runs on, and whether the token is an admin.

use clap::Args;

use super::output::human_bytes;
use super::{CliError, ClientArgs, examples, exit};
use crate::client::{DatabaseJson, StatusJson};

#[derive(Debug, Args)]
#[command(after_help = examples::STATUS)]
pub struct StatusCommand {
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn execute(cmd: StatusCommand) -> Result<u8, CliError> {
    let args = cmd.client;
    let status = args.client()?.status().await?;
    args.print(&status, describe);
    Ok(exit::OK)
}

fn describe(s: &StatusJson) -> String {
    let c = &s.counts;
    let mut text = String::new();
    for (name, n) in [
        ("locks", c.locks),
        ("waiters", c.waiters),
        ("sessions", c.sessions),
        ("groups", c.groups),
        ("members", c.members),
        ("reservations", c.reservations),
    ] {
        text.push_str(&format!("{name:<14}{n}\n"));
    }
    text.push_str(&format!("{:<14}{}\n", "revision", s.revision));
    text.push_str(&database(&s.database));
    let admin = if s.caller.admin { "yes" } else { "no" };
    text.push_str(&format!("{:<14}{admin}\n", "admin"));
    text
}

fn database(d: &DatabaseJson) -> String {
    if let Some(sqlite) = &d.sqlite {
        let checkpoint = sqlite.last_checkpoint_at.as_deref().unwrap_or("none yet");
        return format!(
            "{:<14}sqlite: file {}, log {}, last checkpoint {checkpoint}\n",
            "database",
            human_bytes(sqlite.file_bytes),
            human_bytes(sqlite.wal_bytes),
        );
    }
    let Some(postgres) = &d.postgres else {
        return format!("{:<14}{}\n", "database", d.backend);
    };
    let mut text = format!(
        "{:<14}postgres: {} replicas seen alive\n",
        "database",
        postgres.replicas.len()
    );
    for r in &postgres.replicas {
        let this = if r.this { " (this server)" } else { "" };
        let name = r.name.as_deref().unwrap_or("unnamed");
        text.push_str(&format!(
            "  {name}{this}, last seen {}, id {}\n",
            r.last_seen_at, r.replica
        ));
    }
    text
}
