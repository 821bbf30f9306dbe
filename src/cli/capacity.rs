//! `leasehold lock capacity set|show|delete KEY`: a key's capacity kept on
//! the server, the permits its leases may hold in all (`lock acquire
//! --permits K` and `lock run --permits K` take K of it).

use clap::Subcommand;

use super::{CliError, ClientArgs};
use crate::client::{CapacityJson, Client};

#[derive(Debug, Subcommand)]
pub enum CapacityAction {
    /// Store the key's capacity, or change it: nothing held is revoked;
    /// grants wait until what is held plus what is asked fits.
    Set {
        key: String,
        /// The permits the key's leases may hold in all.
        permits: u32,
    },
    /// Show the key's capacity, the permits held and those waiters ask for.
    Show { key: String },
    /// Delete the key's capacity (refused while anything is held of it).
    Delete { key: String },
}

pub async fn execute(
    args: &ClientArgs,
    client: &Client,
    action: CapacityAction,
) -> Result<(), CliError> {
    match action {
        CapacityAction::Set { key, permits } => {
            let capacity = client.put_capacity(&key, permits).await?;
            args.print(&capacity, shown);
        }
        CapacityAction::Show { key } => {
            let capacity = client.get_capacity(&key).await?;
            args.print(&capacity, shown);
        }
        CapacityAction::Delete { key } => {
            client.delete_capacity(&key).await?;
            if !args.json {
                println!("deleted the capacity of {key}");
            }
        }
    }
    Ok(())
}

fn shown(c: &CapacityJson) -> String {
    format!(
        "{}: capacity {}, {} held, {} asked by waiters\n",
        c.key, c.permits, c.held, c.waiting
    )
}
