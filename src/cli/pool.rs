//! `leasehold pool …`: define, show, list and delete subnet pools.

use std::collections::BTreeMap;

use clap::{Args, Subcommand};

use super::output::{more, table};
use super::{CliError, ClientArgs, examples, exit};
use serde_json::{Map, Value};

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
    #[command(after_help = examples::POOL_PUT, visible_alias = "create")]
    Put {
        name: String,
        /// An aligned IPv4 or IPv6 block, e.g. 10.0.0.0/8.
        cidr: String,
        /// The pool it is cut from: its block must be free there.
        #[arg(long)]
        parent: Option<String>,
        /// A rule, `name=value`: min_prefix_len, max_prefix_len,
        /// default_prefix_len, allowed, disallowed, required_labels
        /// (the last three repeat for more).
        #[arg(long = "rule", value_parser = parse_label)]
        rules: Vec<(String, String)>,
        /// A label, `name=value`; repeat for more.
        #[arg(long = "label", value_parser = parse_label)]
        labels: Vec<(String, String)>,
    },
    /// Show a pool and its usage.
    #[command(after_help = examples::POOL_SHOW)]
    Show { name: String },
    /// Show a pool and the pools cut from it, level by level.
    Tree { name: String },
    /// The blocks reserves would take next, in order.
    Free {
        name: String,
        /// The blocks' prefix length (default: the pool's default_prefix_len).
        #[arg(long)]
        prefix_len: Option<u8>,
        /// How many blocks (1 to 1000, default 10).
        #[arg(long)]
        limit: Option<u32>,
    },
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
        PoolAction::Put {
            name,
            cidr,
            parent,
            rules,
            labels,
        } => {
            let labels: BTreeMap<String, String> = labels.into_iter().collect();
            let rules = rules_json(&rules).map_err(|why| CliError::new(exit::USAGE, why))?;
            let pool = client
                .put_pool(&name, &cidr, parent.as_deref(), rules.as_ref(), &labels)
                .await?;
            args.print(&pool, show);
        }
        PoolAction::Tree { name } => {
            let mut lines = String::new();
            let mut stack = vec![(name, 0usize)];
            while let Some((name, level)) = stack.pop() {
                let pool = client.get_pool(&name).await?;
                lines.push_str(&tree_line(&pool, level));
                let children = pool.usage.map(|u| u.children).unwrap_or_default();
                stack.extend(children.into_iter().rev().map(|c| (c.name, level + 1)));
            }
            print!("{lines}");
        }
        PoolAction::Free {
            name,
            prefix_len,
            limit,
        } => {
            let free = client.pool_free(&name, prefix_len, limit).await?;
            args.print(&free, |f| {
                f.blocks
                    .iter()
                    .map(|b| format!("{b}\n"))
                    .collect::<String>()
            });
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

/// The rules of `--rule name=value` flags as the API takes them; `None`
/// for none.
fn rules_json(rules: &[(String, String)]) -> Result<Option<Value>, String> {
    if rules.is_empty() {
        return Ok(None);
    }
    let mut out = Map::new();
    for (name, value) in rules {
        match name.as_str() {
            "min_prefix_len" | "max_prefix_len" | "default_prefix_len" => {
                let len: u8 = value
                    .parse()
                    .map_err(|_| format!("--rule {name}={value}: not a prefix length"))?;
                out.insert(name.clone(), len.into());
            }
            "allowed" | "disallowed" | "required_labels" => {
                let list = out
                    .entry(name.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(items) = list {
                    items.push(value.clone().into());
                }
            }
            _ => return Err(format!("--rule {name}: no such rule")),
        }
    }
    Ok(Some(Value::Object(out)))
}

/// A pool of a tree, indented by its level.
fn tree_line(pool: &PoolJson, level: usize) -> String {
    let usage = pool.usage.as_ref().map_or(String::new(), |u| {
        format!(
            "  {} of {} addresses free",
            u.free_addresses, u.total_addresses
        )
    });
    format!("{}{} {}{usage}\n", "  ".repeat(level), pool.name, pool.cidr)
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
