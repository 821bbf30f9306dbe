//! `leasehold subnet …`: reserve a subnet of a pool, then renew, confirm or
//! release it; show and list reservations.

use std::time::Duration;

use clap::{Args, Subcommand};

use super::output::{expires_in, more, table};
use super::{CliError, ClientArgs, LeaseTokenArg, default_holder, examples, exit, local_networks};
use crate::client::{Client, ReservationJson, ReserveBody, millis};
use crate::config::parse_duration;

#[derive(Debug, Args)]
#[command(after_help = examples::SUBNET)]
pub struct SubnetCommand {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The pool the subnet belongs to.
    #[arg(long, global = true)]
    pub pool: Option<String>,
    #[command(subcommand)]
    pub action: SubnetAction,
}

#[derive(Debug, Subcommand)]
pub enum SubnetAction {
    /// Reserve a free block of --prefix-len, or the named --subnet, and print
    /// it with its secret lease token.
    #[command(after_help = examples::SUBNET_RESERVE)]
    Reserve {
        /// Any free block of this length.
        #[arg(long, required_unless_present = "subnet", conflicts_with = "subnet")]
        prefix_len: Option<u8>,
        /// This aligned block of the pool.
        #[arg(long)]
        subnet: Option<String>,
        /// A network the grant must not overlap; repeat for more.
        #[arg(long)]
        exclude: Vec<String>,
        /// Exclude this host's own interface networks too (the subnets
        /// taken at the system level).
        #[arg(long)]
        exclude_local: bool,
        /// How long the reservation lives unless renewed or confirmed (server default 60s).
        #[arg(long, value_parser = parse_duration)]
        ttl: Option<Duration>,
        /// A cap on the reservation's tenure while unconfirmed: renewals keep
        /// it until it was granted plus this and never past it (its ends_by).
        #[arg(long, value_parser = parse_duration)]
        max_lifetime: Option<Duration>,
        /// Who holds it (informational); `host/pid-N` by default.
        #[arg(long)]
        holder: Option<String>,
        /// Reserve this many blocks of --prefix-len at once (1 to 256), all or none.
        #[arg(long, conflicts_with = "subnet")]
        count: Option<u16>,
    },
    /// Renew a reservation.
    #[command(after_help = examples::SUBNET_RENEW)]
    Renew {
        id: String,
        #[command(flatten)]
        token: LeaseTokenArg,
        /// The new TTL from now; the reservation's own TTL when omitted.
        #[arg(long, value_parser = parse_duration)]
        ttl: Option<Duration>,
    },
    /// Confirm a reservation: it is allocated and no longer expires.
    #[command(after_help = examples::SUBNET_CONFIRM)]
    Confirm {
        id: String,
        #[command(flatten)]
        token: LeaseTokenArg,
    },
    /// Release a reservation (or, with --force and no token, remove it).
    #[command(after_help = examples::SUBNET_RELEASE)]
    Release {
        id: String,
        #[command(flatten)]
        token: LeaseTokenArg,
        /// Remove it without its token (admin).
        #[arg(long, conflicts_with_all = ["lease_token", "lease_token_flag"])]
        force: bool,
    },
    /// Show a reservation.
    #[command(after_help = examples::SUBNET_SHOW)]
    Show { id: String },
    /// List a pool's live reservations in address order.
    #[command(after_help = examples::SUBNET_LIST)]
    List {
        /// Page size (1 to 1000).
        #[arg(long)]
        limit: Option<u32>,
        /// `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
}

pub async fn execute(cmd: SubnetCommand) -> Result<u8, CliError> {
    let args = cmd.client;
    let client = args.client()?;
    let pool = cmd
        .pool
        .ok_or_else(|| CliError::new(exit::USAGE, "--pool is required"))?;
    match cmd.action {
        action @ SubnetAction::Reserve { .. } => {
            return reserve(&args, &client, &pool, action).await;
        }
        SubnetAction::Renew { id, token, ttl } => {
            let lease_token = token.require(&args, "subnet renew")?;
            let r = client
                .renew_reservation(&pool, &id, &lease_token, ttl)
                .await?;
            args.print(&r, show);
        }
        SubnetAction::Confirm { id, token } => {
            let lease_token = token.require(&args, "subnet confirm")?;
            let r = client.confirm_reservation(&pool, &id, &lease_token).await?;
            args.print(&r, show);
        }
        SubnetAction::Release { id, token, force } => {
            if force {
                client.force_release_reservation(&pool, &id).await?;
            } else {
                let lease_token = token.require(&args, "subnet release")?;
                client.release_reservation(&pool, &id, &lease_token).await?;
            }
            if !args.json {
                println!("released {id}");
            }
        }
        SubnetAction::Show { id } => {
            let r = client.get_reservation(&pool, &id).await?;
            args.print(&r, show);
        }
        SubnetAction::List { limit, cursor } => {
            let page = client
                .list_reservations(&pool, limit, cursor.as_deref())
                .await?;
            args.print(&page, |p| {
                let rows: Vec<Vec<String>> = p.items.iter().map(row).collect();
                table(&["id", "subnet", "holder", "fencing", "state"], &rows)
                    + &more(p.next_cursor.as_deref())
            });
        }
    }
    Ok(exit::OK)
}

/// A reservation as a line of `subnet list`.
fn row(r: &ReservationJson) -> Vec<String> {
    vec![
        r.id.clone(),
        r.subnet.clone(),
        r.holder.clone(),
        r.fencing_token.to_string(),
        status(r),
    ]
}

/// `reserved, expires in 40s` or `allocated`.
fn status(r: &ReservationJson) -> String {
    match r.expires_in_ms {
        Some(ms) => format!("{}, {}", r.state, expires_in(ms)),
        None => r.state.clone(),
    }
}

fn show(r: &ReservationJson) -> String {
    format!(
        "{} {} in pool {}, held by {} (fencing token {}): {}",
        r.id,
        r.subnet,
        r.pool,
        r.holder,
        r.fencing_token,
        status(r)
    )
}

/// A reserve: one block, or a batch of `count`.
async fn reserve(
    args: &ClientArgs,
    client: &Client,
    pool: &str,
    action: SubnetAction,
) -> Result<u8, CliError> {
    let SubnetAction::Reserve {
        prefix_len,
        subnet,
        mut exclude,
        exclude_local,
        ttl,
        max_lifetime,
        holder,
        count,
    } = action
    else {
        return Ok(exit::OK);
    };
    if exclude_local {
        exclude
            .extend(local_networks::local_networks().map_err(|e| CliError::new(exit::OTHER, e))?);
    }
    let request = ReserveBody {
        holder: holder.unwrap_or_else(default_holder),
        prefix_len,
        subnet,
        ttl_ms: ttl.map(millis),
        max_lifetime_ms: max_lifetime.map(millis),
        exclude,
        metadata: None,
        count,
    };
    if count.is_some() {
        let batch = client.reserve_subnets(pool, &request).await?;
        args.print(&batch, |b| {
            let lines = b.items.iter().map(|r| {
                format!(
                    "{}\ntoken: {}\n",
                    show(r),
                    r.token.as_deref().unwrap_or("-")
                )
            });
            lines.collect()
        });
        return Ok(exit::OK);
    }
    let r = client.reserve_subnet(pool, &request).await?;
    args.print(&r, |r| {
        format!(
            "{}\ntoken: {}\n",
            show(r),
            r.token.as_deref().unwrap_or("-")
        )
    });
    Ok(exit::OK)
}
