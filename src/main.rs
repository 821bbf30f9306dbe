//! The `leasehold` command line: `serve`, the client commands (`lock`, `pool`,
//! `subnet`, in `leasehold::cli`), `openapi` to print the spec, and shell
//! completions and a manual page generated from these definitions.

use std::io::stdout;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use leasehold::cli::{self, EXIT_CODES_HELP};
use leasehold::config::{ServeConfig, format_duration};
use leasehold::startup::Application;
use leasehold::store::DbAddress;

/// Requests allocate and free many small buffers on every worker thread:
/// jemalloc's thread caches spend less time on them than the system's
/// allocator.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Freed memory goes back to the system within about a second (a burst of
/// waiters that disconnect must not leave the server large), by a
/// background thread of the allocator's own.
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

#[derive(Parser)]
#[command(
    name = "leasehold",
    version = leasehold::telemetry::build_info::LONG_VERSION,
    about = "A durable lease service: keyed locks and subnet reservations",
    after_help = EXIT_CODES_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Which OpenAPI version `leasehold openapi` prints.
#[derive(Clone, Copy, ValueEnum)]
enum OpenapiVersion {
    #[value(name = "3.1")]
    V3_1,
    #[value(name = "3.0")]
    V3_0,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve(ServeConfig),
    /// Keyed locks: run a command under one, acquire, renew, release, show, list.
    Lock(cli::lock::LockCommand),
    /// Leader election: campaign for NAME and run a command while leading,
    /// or --observe who leads.
    Elect(cli::elect::ElectCommand),
    /// Print changes (locks, reservations, sessions) as they happen.
    Watch(cli::watch::WatchCommand),
    /// Sessions: one heartbeat for many leases. Open, renew, close, show.
    Session(cli::session::SessionCommand),
    /// Subnet pools: put, show, list, delete.
    Pool(cli::pool::PoolCommand),
    /// Subnet reservations of a pool: reserve, renew, confirm, release, show, list.
    Subnet(cli::subnet::SubnetCommand),
    /// Rate limits: define, take, show, list, delete.
    Limit(cli::limit::LimitCommand),
    /// What the API token may read, counted (locks, waiters, sessions,
    /// groups, members, reservations), the database, and whether it is an admin.
    Status(cli::status::StatusCommand),
    /// API tokens for the auth file: new, hash.
    Token(cli::token::TokenCommand),
    /// Print the OpenAPI document.
    Openapi {
        /// `3.1` (the document as served at /openapi.json) or `3.0` (its
        /// 3.0.3 rendering, served at /openapi-3.0.json, for generators that
        /// read only 3.0).
        #[arg(long, value_enum, default_value_t = OpenapiVersion::V3_1)]
        openapi_version: OpenapiVersion,
    },
    /// Print a shell completion script: `source <(leasehold completions bash)`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `leasehold man | man -l -`.
    Man,
    /// Copy the database consistently (safe while the server runs).
    Backup {
        #[arg(long, env = "LEASEHOLD_DB", default_value = "./leasehold.db", value_parser = DbAddress::parse)]
        db: DbAddress,
        /// The copy to write; must not exist.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Check the database's integrity; exits non-zero on a problem.
    Check {
        #[arg(long, env = "LEASEHOLD_DB", default_value = "./leasehold.db", value_parser = DbAddress::parse)]
        db: DbAddress,
    },
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

async fn serve(config: ServeConfig) -> Result<(), String> {
    leasehold::telemetry::init_tracing(config.log_format);
    tracing::info!(
        listen = %config.listen,
        db = %config.db,
        durability = ?config.durability,
        db_timeout = %format_duration(config.db_timeout),
        reaper_interval = %format_duration(config.reaper_interval),
        reaper_batch = config.reaper_batch,
        default_ttl = %format_duration(config.default_ttl),
        max_ttl = %format_duration(config.max_ttl),
        max_lease_lifetime = %config.max_lease_lifetime.map(format_duration).unwrap_or_else(|| "none".into()),
        max_wait = %format_duration(config.max_wait),
        max_in_flight = config.max_in_flight,
        max_in_flight_per_client = config.in_flight_per_client(),
        max_connections = config.max_connections,
        max_waiters = config.max_waiters,
        max_waiters_per_client = config.waiters_per_client(),
        max_watchers = config.max_watchers,
        max_watchers_per_client = config.watchers_per_client(),
        max_session_leases = config.max_session_leases,
        max_capabilities_bytes = config.max_capabilities_bytes,
        event_buffer = config.event_buffer,
        event_retention = %format_duration(config.event_retention),
        event_retention_count = config.event_retention_count,
        event_retention_max = config.event_retention_max,
        header_timeout = %format_duration(config.header_timeout),
        body_timeout = %format_duration(config.body_timeout),
        send_timeout = %format_duration(config.send_timeout),
        shutdown_timeout = %format_duration(config.shutdown_timeout),
        log_format = ?config.log_format,
        log_requests = config.log_requests,
        slow_request = %format_duration(config.slow_request),
        auth_file = ?config.auth_file,
        allow_unauthenticated = config.allow_unauthenticated,
        cors_origins = ?config.cors_origins,
        allowed_hosts = ?config.allowed_hosts,
        "starting leasehold"
    );
    let app = Application::build(config).await?;
    tracing::info!(port = app.port(), "listening");
    app.run_until(shutdown_signal())
        .await
        .map_err(|e| format!("server error: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("leasehold: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cli));
    // Nothing left running is worth waiting for once a command is done: a
    // blocking task still at work (a name lookup while the DNS server does
    // not answer, say) must not hold a stopped server past its
    // `--shutdown-timeout`.
    runtime.shutdown_background();
    code
}

async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve(config) => serve(config).await,
        Command::Lock(cmd) => return cli::finish(cli::lock::execute(cmd).await),
        Command::Elect(cmd) => return cli::finish(cli::elect::execute(cmd).await),
        Command::Watch(cmd) => return cli::finish(cli::watch::execute(cmd).await),
        Command::Session(cmd) => return cli::finish(cli::session::execute(cmd).await),
        Command::Pool(cmd) => return cli::finish(cli::pool::execute(cmd).await),
        Command::Subnet(cmd) => return cli::finish(cli::subnet::execute(cmd).await),
        Command::Limit(cmd) => return cli::finish(cli::limit::execute(cmd).await),
        Command::Status(cmd) => return cli::finish(cli::status::execute(cmd).await),
        Command::Token(cmd) => cli::token::execute(cmd),
        Command::Openapi { openapi_version } => {
            let text = match openapi_version {
                OpenapiVersion::V3_1 => serde_json::to_string_pretty(&leasehold::api::openapi()),
                OpenapiVersion::V3_0 => serde_json::to_string_pretty(&leasehold::api::openapi_30()),
            };
            text.map(|text| println!("{text}"))
                .map_err(|e| e.to_string())
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "leasehold", &mut stdout());
            Ok(())
        }
        Command::Man => match clap_mangen::Man::new(Cli::command()).render(&mut stdout()) {
            // `leasehold man | head` is not a failure.
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
            _ => Ok(()),
        },
        Command::Backup { db, out } => leasehold::store::backup(&db, &out)
            .await
            .map(|bytes| println!("backed up {} to {} ({bytes} bytes)", db, out.display())),
        Command::Check { db } => match leasehold::store::integrity_check(&db).await {
            Ok(problems) if problems.is_empty() => {
                println!("ok");
                Ok(())
            }
            Ok(problems) => Err(problems.join("\n")),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("leasehold: {message}");
            ExitCode::FAILURE
        }
    }
}
