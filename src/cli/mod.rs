//! The client commands of the `leasehold` binary: `lock`, `session`, `pool`,
//! `subnet`, `limit`, `status`.
//!
//! Each command talks to a server through [`crate::client::Client`], prints a
//! human-readable answer (or the server's JSON with `--json`), and maps a
//! refusal to one line on stderr and a documented exit code ([`exit`]).

pub mod capacity;
pub mod elect;
pub mod examples;
pub mod follow;
pub mod hold;
pub mod keepalive;
pub mod limit;
pub mod local_networks;
pub mod lock;
pub mod output;
pub mod pool;
pub mod retry;
pub mod run;
pub mod session;
pub mod status;
pub mod subnet;
pub mod token;
pub mod watch;

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use crate::client::{Client, ClientError, DEFAULT_URL};

/// The exit codes of the client commands, as `leasehold --help` lists them.
pub mod exit {
    pub const OK: u8 = 0;
    /// Any other failure.
    pub const OTHER: u8 = 1;
    /// Bad input or usage (a 400 from the server, or a flag clap refused).
    pub const USAGE: u8 = 2;
    /// Held or conflicting (409): the lock is held, the pool is exhausted, the
    /// lease was lost.
    pub const CONFLICT: u8 = 3;
    /// Not found (404).
    pub const NOT_FOUND: u8 = 4;
    /// The server is unreachable or failed (5xx).
    pub const UNAVAILABLE: u8 = 5;
    /// `lock run`: the lease was lost while the command ran; it was stopped.
    pub const LEASE_LOST: u8 = 6;
    /// No valid token (401), or the token may not do this (403).
    pub const DENIED: u8 = 7;
    /// The token holds its quota of live leases, or a rate refused the
    /// request (429): `limit take` found too few tokens.
    pub const QUOTA: u8 = 8;
    /// `lock check`: the fencing token is not current (superseded, no longer
    /// held, or never granted).
    pub const NOT_CURRENT: u8 = 9;
    /// `watch`, `elect --observe`: the revision to resume from is older than
    /// the history the server keeps (410 history-compacted).
    pub const HISTORY_COMPACTED: u8 = 10;
}

/// The exit codes, for `leasehold --help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes of the client commands:
  0  success
  1  any other error
  2  bad input or usage (the server answered 400, or a flag is wrong)
  3  held or conflicting (409: lock held, pool exhausted, lease lost)
  4  not found (404)
  5  server unreachable, or a server error (5xx)
  6  lock run: the lease was lost while the command ran; it was stopped
  7  no valid API token (401: give --api-token or LEASEHOLD_TOKEN), or the
     token may not do this (403)
  8  the token holds its quota of live leases, or limit take found too few
     tokens (429)
  9  lock check: the fencing token is not current
 10  watch, elect --observe: the revision to resume from is older than the
     server's history (410 history-compacted); start again without --since
`lock run` and `elect` otherwise exit with the command's own code, 128+N if the command
died of signal N, 127 if it was not found, 126 if it could not be started.";

/// How to reach the server, and how to print answers.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// The leasehold server.
    #[arg(long, env = "LEASEHOLD_URL", default_value = DEFAULT_URL, global = true)]
    pub server: String,
    /// The API token of the server's auth file (`lh_…`, from `leasehold token
    /// new`), sent as `Authorization: Bearer <token>`; not the lease token that
    /// `lock acquire` and `subnet reserve` print. `--token` is an older
    /// spelling.
    #[arg(
        long = "api-token",
        alias = "token",
        value_name = "API_TOKEN",
        env = "LEASEHOLD_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub api_token: Option<String>,
    /// Print the server's JSON (one line) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

impl ClientArgs {
    pub fn client(&self) -> Result<Client, CliError> {
        // Without a scheme the URL would fail as "unreachable", which sends
        // one looking at the network instead of at the setting.
        let server = self.server.trim();
        let lower = server.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(CliError::new(
                exit::USAGE,
                format!(
                    "the server URL {server:?} (--server or LEASEHOLD_URL) needs a scheme: http://{}",
                    server.split("://").last().unwrap_or(server)
                ),
            ));
        }
        Ok(Client::new(server, self.api_token.clone())?)
    }

    /// Prints `value` as one line of JSON, or `human` of it.
    pub fn print<T: Serialize>(&self, value: &T, human: impl FnOnce(&T) -> String) {
        if self.json {
            match serde_json::to_string(value) {
                Ok(text) => println!("{text}"),
                Err(e) => eprintln!("leasehold: {e}"),
            }
        } else {
            let text = human(value);
            if !text.is_empty() {
                println!("{}", text.trim_end());
            }
        }
    }
}

/// The secret of one lease, as `lock acquire` or `subnet reserve` printed it
/// (`token: …`): after the key or id, or as `--lease-token`.
#[derive(Debug, Clone, Args)]
pub struct LeaseTokenArg {
    /// The lease token that `lock acquire` or `subnet reserve` printed (32 hex
    /// digits); not the API token.
    #[arg(value_name = "LEASE_TOKEN")]
    lease_token: Option<String>,
    /// The lease token, as a flag (the same as the argument).
    #[arg(
        long = "lease-token",
        value_name = "LEASE_TOKEN",
        conflicts_with = "lease_token"
    )]
    lease_token_flag: Option<String>,
}

impl LeaseTokenArg {
    /// The lease token if one was given.
    pub fn given(&self) -> Option<&str> {
        self.lease_token
            .as_deref()
            .or(self.lease_token_flag.as_deref())
    }

    /// The lease token, or a usage error that tells the two tokens apart:
    /// `--token` (the API token's older spelling) is the likely mistake.
    pub fn require(&self, args: &ClientArgs, command: &str) -> Result<String, CliError> {
        let usage = |why: String| CliError::new(exit::USAGE, why);
        match self.given() {
            Some(token) if token.starts_with("lh_") => Err(usage(format!(
                "{command}: {token:.6}… is an API token (lh_…, from `leasehold token new`), \
                 not a lease token: give the API token as --api-token and the lease token \
                 that the grant printed (token: …) after the key or id, or as --lease-token"
            ))),
            Some(token) => Ok(token.to_owned()),
            None => {
                let mut why = format!(
                    "{command} needs the lease token that the grant printed (token: …): \
                     give it after the key or id, or as --lease-token"
                );
                if args.api_token.is_some() {
                    why.push_str(
                        "; the token given (--api-token, --token or LEASEHOLD_TOKEN) is the \
                         API token of the server's auth file, which only authenticates",
                    );
                }
                Err(usage(why))
            }
        }
    }
}

/// A failed command: the message for stderr and the exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<ClientError> for CliError {
    fn from(err: ClientError) -> Self {
        let code = match &err {
            ClientError::Problem { status, .. } => match status {
                400 | 422 => exit::USAGE,
                404 => exit::NOT_FOUND,
                401 | 403 => exit::DENIED,
                409 => exit::CONFLICT,
                429 => exit::QUOTA,
                500..=599 => exit::UNAVAILABLE,
                _ => exit::OTHER,
            },
            ClientError::Unreachable { .. } => exit::UNAVAILABLE,
            ClientError::Unexpected(_) => exit::OTHER,
        };
        // One line, whatever the server put in its detail.
        let mut message = err.to_string().replace('\n', " ");
        if err.status() == Some(401) {
            message.push_str(
                " (give the API token of the server's auth file with --api-token or \
                 LEASEHOLD_TOKEN; a lease token does not authenticate)",
            );
        }
        Self { code, message }
    }
}

/// Turns a command's result into the process's exit code, saying why on stderr.
pub fn finish(result: Result<u8, CliError>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("leasehold: {}", err.message);
            ExitCode::from(err.code)
        }
    }
}

/// `host/pid-N`: the holder named when `--holder` is not given.
pub fn default_holder() -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}/pid-{}", std::process::id())
}
