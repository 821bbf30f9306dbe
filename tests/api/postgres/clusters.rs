//! PostgreSQL clusters of a test's own, for what the shared test server
//! cannot show: a primary and its streaming standby, the primary stopped
//! dead and the standby promoted. The binaries are found as
//! `.ci/postgres.sh` finds them (on the `PATH`, else the newest
//! `/usr/lib/postgresql/*/bin`) and run as the `postgres` user when the
//! tests run as root (initdb refuses root). A cluster is stopped, and its
//! folder removed, when dropped: whether the test passed or failed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sqlx::{Connection, PgConnection};
use tempfile::TempDir;
use tokio::process::Command;

/// How the primary waits for its standby before it acknowledges a commit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// `synchronous_standby_names` names the standby, `synchronous_commit`
    /// is on: a commit is acknowledged once the standby has it on disk.
    Synchronous,
    /// The primary acknowledges a commit once it is on its own disk.
    Asynchronous,
}

pub struct Cluster {
    pub port: u16,
    dir: TempDir,
    bin: PathBuf,
}

/// The standby's name, as the primary's `synchronous_standby_names` names it.
const STANDBY: &str = "standby";

impl Cluster {
    /// A fresh primary, running.
    pub async fn primary(replication: Replication) -> Self {
        let cluster = Self::new();
        let data = cluster.data();
        cluster
            .run(
                "initdb",
                &[
                    "-D",
                    &data,
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ],
            )
            .await;
        let names = match replication {
            Replication::Synchronous => STANDBY,
            Replication::Asynchronous => "",
        };
        // fsync off: a cluster stopped with `-m immediate` loses nothing the
        // kernel holds, and the tests never cut the power.
        cluster.configure(
            "postgresql.conf",
            &format!(
                "fsync = off\nmax_connections = 100\n\
                 synchronous_standby_names = '{names}'\nsynchronous_commit = on\n"
            ),
        );
        cluster.start().await;
        cluster
    }

    /// A standby of `primary`, copied from it and running: it streams the
    /// primary's changes through `link`, the port where it reaches it.
    pub async fn standby_of(primary: &Cluster, link: u16) -> Self {
        let cluster = Self::new();
        let data = cluster.data();
        cluster
            .run(
                "pg_basebackup",
                &[
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &primary.port.to_string(),
                    "-U",
                    "postgres",
                    "-D",
                    &data,
                    "-R",
                    "--checkpoint=fast",
                    "--no-sync",
                ],
            )
            .await;
        // Read after the primary's settings it copied. Once promoted it has
        // no standby of its own to wait for.
        cluster.configure(
            "postgresql.auto.conf",
            &format!(
                "primary_conninfo = 'host=127.0.0.1 port={link} user=postgres \
                 application_name={STANDBY}'\nsynchronous_standby_names = ''\n"
            ),
        );
        cluster.start().await;
        cluster
    }

    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Waits until the standby streams from this primary, in `state`
    /// (`sync` or `async`).
    pub async fn wait_for_standby(&self, state: &str) {
        let mut conn = PgConnection::connect(&self.url()).await.unwrap();
        for _ in 0..200 {
            let seen: Option<String> = sqlx::query_scalar(
                "SELECT sync_state FROM pg_stat_replication \
                 WHERE application_name = $1 AND state = 'streaming'",
            )
            .bind(STANDBY)
            .fetch_optional(&mut conn)
            .await
            .unwrap();
            if seen.as_deref() == Some(state) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the standby never streamed as {state}");
    }

    /// Waits until the standby has replayed everything this primary wrote.
    pub async fn wait_until_replayed(&self, standby: &Cluster) {
        let mut primary = PgConnection::connect(&self.url()).await.unwrap();
        let mut replica = PgConnection::connect(&standby.url()).await.unwrap();
        let written: String = sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
            .fetch_one(&mut primary)
            .await
            .unwrap();
        for _ in 0..200 {
            let caught_up: bool =
                sqlx::query_scalar("SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn")
                    .bind(&written)
                    .fetch_one(&mut replica)
                    .await
                    .unwrap();
            if caught_up {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the standby never replayed the primary's WAL up to {written}");
    }

    /// Stops the server at once, as a crash does: no checkpoint, nothing
    /// more sent to the standby.
    pub async fn crash(&self) {
        let data = self.data();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .await;
    }

    /// Makes a standby a primary, and waits until it takes writes.
    pub async fn promote(&self) {
        let data = self.data();
        self.run("pg_ctl", &["-D", &data, "-w", "promote"]).await;
    }

    fn new() -> Self {
        let dir = TempDir::new().unwrap();
        if is_root() {
            let owned = std::process::Command::new("chown")
                .arg("postgres")
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(owned.success(), "chown postgres {}", dir.path().display());
        }
        Self {
            port: free_port(),
            dir,
            bin: bin_dir(),
        }
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn configure(&self, file: &str, lines: &str) {
        use std::io::Write;
        let path = self.dir.path().join("data").join(file);
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        write!(
            conf,
            "\nlisten_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n{lines}",
            self.port,
            self.dir.path().display()
        )
        .unwrap();
    }

    async fn start(&self) {
        let (data, log) = (self.data(), self.log());
        self.run("pg_ctl", &["-D", &data, "-l", &log, "-w", "start"])
            .await;
    }

    fn log(&self) -> String {
        self.dir.path().join("server.log").display().to_string()
    }

    /// One of the PostgreSQL programs, run as `postgres` when root.
    fn command(&self, program: &str) -> std::process::Command {
        let program = self.bin.join(program);
        if !is_root() {
            return std::process::Command::new(program);
        }
        let mut command = std::process::Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    }

    async fn run(&self, program: &str, args: &[&str]) {
        let out = Command::from(self.command(program))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?}: {}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.log()).unwrap_or_default()
        );
    }
}

/// Stopped however the test ended (a stopped one just says so).
impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.log()).unwrap_or_default();
            eprintln!("--- PostgreSQL on port {} ---\n{log}", self.port);
        }
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|me| me.uid() == 0)
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Where `initdb`, `pg_ctl` and `pg_basebackup` are, as `.ci/postgres.sh`
/// looks for them: beside the `pg_ctl` on the `PATH` (a link followed to
/// where it points), else in the newest `/usr/lib/postgresql/*/bin`.
fn bin_dir() -> PathBuf {
    let complete = |dir: &Path| {
        ["initdb", "pg_ctl", "pg_basebackup"]
            .iter()
            .all(|program| dir.join(program).is_file())
    };
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("pg_ctl"))
            .filter_map(|pg_ctl| std::fs::canonicalize(pg_ctl).ok())
            .filter_map(|pg_ctl| pg_ctl.parent().map(Path::to_path_buf))
            .find(|dir| complete(dir))
    });
    if let Some(dir) = on_path {
        return dir;
    }
    let mut installed: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            complete(&bin).then_some((version, bin))
        })
        .collect();
    installed.sort();
    installed.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!(
            "no PostgreSQL binaries (initdb, pg_ctl, pg_basebackup): neither beside the \
             pg_ctl on the PATH nor in /usr/lib/postgresql/*/bin"
        )
    })
}
