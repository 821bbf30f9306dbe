//! `leasehold token`: make API tokens and the auth file entries that name
//! them by their SHA-256, so that the file never holds a token in clear.

use std::io::Read;

use clap::{Args, Subcommand};

use crate::auth::{Access, TokenEntry, hash_hex, new_token};

#[derive(Debug, Args)]
pub struct TokenCommand {
    #[command(subcommand)]
    pub command: TokenAction,
}

#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Print a fresh random token (line 1, give it to the client) and its
    /// auth file entry as JSON (line 2, add it to the file's `tokens`).
    New {
        /// The token's name: in logs, and the owner of the leases it creates.
        #[arg(long)]
        name: String,
        /// Lock keys starting with this (repeatable); "" is every key.
        #[arg(long = "lock-prefix")]
        lock_prefixes: Vec<String>,
        /// A pool it may use (repeatable); "*" is every pool.
        #[arg(long = "pool")]
        pools: Vec<String>,
        /// Read and list only.
        #[arg(long, conflicts_with = "admin")]
        read_only: bool,
        /// May force release and delete pools.
        #[arg(long)]
        admin: bool,
        /// May read /metrics (a scrape token needs no --lock-prefix).
        #[arg(long)]
        metrics: bool,
        /// Live leases it may hold at once.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        max_live_leases: Option<u32>,
        /// Sessions it may hold open at once (default: --max-live-leases).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        max_live_sessions: Option<u32>,
        /// Groups it may have created at once (default: --max-live-leases).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        max_groups: Option<u32>,
        /// Requests that change something it may send per second.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        max_writes_per_second: Option<u32>,
    },
    /// Read a token on stdin and print the hex of its SHA-256.
    Hash,
}

pub fn execute(cmd: TokenCommand) -> Result<(), String> {
    match cmd.command {
        TokenAction::New {
            name,
            lock_prefixes,
            pools,
            read_only,
            admin,
            metrics,
            max_live_leases,
            max_live_sessions,
            max_groups,
            max_writes_per_second,
        } => {
            if lock_prefixes.is_empty() && pools.is_empty() && !metrics {
                eprintln!(
                    "leasehold: note: without --lock-prefix or --pool this token may touch no \
                     key and no pool (--lock-prefix \"\" is every key, --pool \"*\" every pool)"
                );
            }
            let token = new_token();
            let entry = TokenEntry {
                name,
                sha256: hash_hex(&token),
                lock_prefixes,
                pools,
                access: if read_only {
                    Access::ReadOnly
                } else {
                    Access::ReadWrite
                },
                admin,
                metrics,
                max_live_leases,
                max_live_sessions,
                max_groups,
                max_writes_per_second,
            };
            println!("{token}");
            println!(
                "{}",
                serde_json::to_string(&entry).map_err(|e| e.to_string())?
            );
            Ok(())
        }
        TokenAction::Hash => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the token on stdin: {e}"))?;
            let token = text.trim_end_matches(['\r', '\n']);
            if token.is_empty() {
                return Err("no token on stdin".into());
            }
            println!("{}", hash_hex(token));
            Ok(())
        }
    }
}
