//! `leasehold pool …`: define, show, list and delete subnet pools.

use std::collections::BTreeMap;

use clap::{Args, Subcommand};

use super::output::{more, table};
use super::{CliError, ClientArgs, examples, exit};
use crate::client::PoolJson;

#[derive(Debug, Args)]
#[command(after_help = examples::POOL)]
pub struct PoolCommand {
    #[command(flatten)]
    pub client: ClientArgs,
    #[command(subcommand)]
    pub action: PoolAction,
}

#[derive(Debug, Subcommand)]
pub enum PoolAction {
    /// Create a pool, or check that it exists with this definition.
    #[command(after_help = examples::POOL_PUT)]
    Put {
        name: String,
        /// An aligned IPv4 or IPv6 block, e.g. 10.0.0.0/8.
        cidr: String,
        /// A label, `name=value`; repeat for more.
        #[arg(long = "label", value_parser = parse_label)]
        labels: Vec<(String, String)>,
    },
    /// Show a pool and its usage.
    #[command(after_help = examples::POOL_SHOW)]
    Show { name: String },
    /// List pools.
    #[command(after_help = examples::POOL_LIST)]
    List {
        /// Page size (1 to 1000).
        #[arg(long)]
        limit: Option<u32>,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Delete a pool that has no live reservations.
    #[command(after_help = examples::POOL_DELETE)]
    Delete { name: String },
}

fn parse_label(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{text:?} is not name=value"))
}

pub async fn execute(cmd: PoolCommand) -> Result<u8, CliError> {
    let args = cmd.client;
    let client = args.client()?;
    match cmd.action {
        PoolAction::Put { name, cidr, labels } => {
            let labels: BTreeMap<String, String> = labels.into_iter().collect();
            let pool = client.put_pool(&name, &cidr, &labels).await?;
            args.print(&pool, show);
        }
        PoolAction::Show { name } => {
            let pool = client.get_pool(&name).await?;
            args.print(&pool, show);
        }
        PoolAction::List { limit, cursor } => {
            let page = client.list_pools(limit, cursor.as_deref()).await?;
            args.print(&page, |p| {
                let rows: Vec<Vec<String>> = p
                    .items
                    .iter()
                    .map(|pool| {
                        vec![
                            pool.name.clone(),
                            pool.cidr.clone(),
                            pool.family.clone(),
                            labels(&pool.labels),
                        ]
                    })
                    .collect();
                table(&["name", "cidr", "family", "labels"], &rows)
                    + &more(p.next_cursor.as_deref())
            });
        }
        PoolAction::Delete { name } => {
            client.delete_pool(&name).await?;
            if !args.json {
                println!("deleted pool {name}");
            }
        }
    }
    Ok(exit::OK)
}

fn labels(labels: &BTreeMap<String, String>) -> String {
    let text: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    text.join(",")
}

fn show(pool: &PoolJson) -> String {
    let mut text = format!("pool {}: {} ({})\n", pool.name, pool.cidr, pool.family);
    if !pool.labels.is_empty() {
        text.push_str(&format!("labels: {}\n", labels(&pool.labels)));
    }
    if let Some(usage) = &pool.usage {
        text.push_str(&format!(
            "reserved: {}, allocated: {}\nfree addresses: {} of {}\nlargest free block: {}\n",
            usage.reserved_count,
            usage.allocated_count,
            usage.free_addresses,
            usage.total_addresses,
            usage.largest_free.as_deref().unwrap_or("none")
        ));
    }
    text
}
