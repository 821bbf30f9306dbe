//! `leasehold limit …`: define, take from, show, list and delete rate
//! limits.

use std::time::Duration;

use clap::{Args, Subcommand};

use super::output::{human_ms, more, table};
use super::{CliError, ClientArgs, examples, exit};
use crate::client::LimitJson;
use crate::config::parse_duration;

#[derive(Debug, Args)]
#[command(after_help = examples::LIMIT)]
pub struct LimitCommand {
    #[command(flatten)]
    pub client: ClientArgs,
    #[command(subcommand)]
    pub action: LimitAction,
}

#[derive(Debug, Subcommand)]
pub enum LimitAction {
    /// Define a rate limit, or change its numbers (what was spent stays
    /// spent). A name ending in `/` is a family: each name under it gets a
    /// bucket of its own.
    Define {
        name: String,
        /// Tokens added per period.
        #[arg(long)]
        rate: u64,
        /// The period of the rate.
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        period: Duration,
        /// The most tokens held at once (default: the rate).
        #[arg(long)]
        burst: Option<u64>,
    },
    /// Take tokens; refused (exit 8) when the limit holds fewer, unless
    /// they come within --wait.
    Take {
        name: String,
        /// Tokens to take.
        #[arg(long, default_value_t = 1)]
        cost: u64,
        /// How long to wait on the server for them (at most its maximum).
        #[arg(long, default_value = "0s", value_parser = parse_duration)]
        wait: Duration,
    },
    /// Show a limit and what it holds now.
    Show { name: String },
    /// List limits.
    List {
        /// Only names that start with this.
        #[arg(long)]
        prefix: Option<String>,
        /// Page size (1 to 1000).
        #[arg(long)]
        limit: Option<u32>,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Delete a limit (a family with its buckets).
    Delete { name: String },
}

pub async fn execute(cmd: LimitCommand) -> Result<u8, CliError> {
    let args = cmd.client;
    let client = args.client()?;
    match cmd.action {
        LimitAction::Define {
            name,
            rate,
            period,
            burst,
        } => {
            let limit = client.define_limit(&name, rate, period, burst).await?;
            args.print(&limit, show);
        }
        LimitAction::Take { name, cost, wait } => {
            let taken = client.take_limit(&name, cost, wait).await?;
            args.print(&taken, |t| {
                format!(
                    "took {} from {name}: {} available, full in {}",
                    t.cost,
                    t.available,
                    human_ms(t.full_in_ms)
                )
            });
        }
        LimitAction::Show { name } => {
            let limit = client.get_limit(&name).await?;
            args.print(&limit, show);
        }
        LimitAction::List {
            prefix,
            limit,
            cursor,
        } => {
            let page = client
                .list_limits(prefix.as_deref(), limit, cursor.as_deref())
                .await?;
            args.print(&page, |p| {
                let rows: Vec<Vec<String>> = p.items.iter().map(row).collect();
                table(&["name", "rate", "burst", "available"], &rows)
                    + &more(p.next_cursor.as_deref())
            });
        }
        LimitAction::Delete { name } => {
            client.delete_limit(&name).await?;
            if !args.json {
                println!("deleted limit {name}");
            }
        }
    }
    Ok(exit::OK)
}

fn rate(limit: &LimitJson) -> String {
    format!("{} per {}", limit.rate, human_ms(limit.period_ms))
}

fn row(limit: &LimitJson) -> Vec<String> {
    vec![
        limit.name.clone(),
        rate(limit),
        limit.burst.to_string(),
        limit.available.to_string(),
    ]
}

fn show(limit: &LimitJson) -> String {
    format!(
        "limit {}: {}, burst {}\navailable: {}, full in {}\n",
        limit.name,
        rate(limit),
        limit.burst,
        limit.available,
        human_ms(limit.full_in_ms)
    )
}
