//! The SQLite file is one server's: a second server on it is refused before
//! it reads or writes anything, while backup and check keep working beside
//! the first; and the database, its WAL, its shared memory, its lock and
//! every backup are readable by their owner alone, whatever the umask.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::ServerProcess;
use crate::refusals::serve_refused;

const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

/// A shell that sets `umask` and execs the arguments it is given next.
pub fn umasked(umask: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", &format!("umask {umask} && exec \"$@\""), "sh", BIN]);
    command
}

pub async fn acquire(client: &reqwest::Client, address: &str, key: &str) -> Value {
    let response = client
        .post(format!("{address}/v1/locks/{key}/acquire"))
        .json(&json!({"holder": "first", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.unwrap()
}

pub async fn show(client: &reqwest::Client, address: &str, key: &str) -> Value {
    let response = client
        .get(format!("{address}/v1/locks/{key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

fn mode(path: &Path) -> u32 {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta.permissions().mode() & 0o777
}

async fn a_second_server_on_the_same_file_is_refused_and_changes_no_lease() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("leasehold.db");
    let client = reqwest::Client::new();
    let first = ServerProcess::start(&db, &[]);
    let lease = acquire(&client, &first.address, "only-mine").await;
    // Time passes, so a start that refreshed the leases would move this one.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let line = serve_refused(&db, &["--listen", "127.0.0.1:0"], &[]).await;
    assert!(line.contains(&db.display().to_string()), "{line}");
    assert!(line.contains("another leasehold server"), "{line}");

    let shown = show(&client, &first.address, "only-mine").await;
    assert_eq!(shown["expires_at"], lease["expires_at"]);
    assert!(
        shown["expires_in_ms"].as_i64() <= Some(60_000 - 300),
        "{shown}"
    );

    // Backup and check are readers: they work beside the running server.
    let copy = dir.path().join("copy.db");
    let backup = Command::new(BIN)
        .args(["backup", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&copy)
        .output()
        .unwrap();
    assert!(backup.status.success(), "{backup:?}");
    for file in [&db, &copy] {
        let check = Command::new(BIN)
            .arg("check")
            .arg("--db")
            .arg(file)
            .output()
            .unwrap();
        assert!(check.status.success(), "{check:?}");
    }
    first.terminate();
    // Once the first has stopped, the file is free again.
    let second = ServerProcess::start(&db, &[]);
    assert_eq!(
        show(&client, &second.address, "only-mine").await["fencing_token"],
        lease["fencing_token"]
    );
}

async fn the_database_and_the_files_beside_it_are_owner_only_whatever_the_umask() {
    for umask in ["022", "000"] {
        let dir = TempDir::new().unwrap();
        let db = dir.path().join("leasehold.db");
        let server = ServerProcess::start_as(umasked(umask), &db, &[]);
        acquire(&reqwest::Client::new(), &server.address, "k").await;
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let file = dir.path().join(format!("leasehold.db{suffix}"));
            assert_eq!(mode(&file), 0o600, "umask {umask}: {}", file.display());
        }
        let copy = dir.path().join("backup.db");
        let backup = umasked(umask)
            .args(["backup", "--db"])
            .arg(&db)
            .arg("--out")
            .arg(&copy)
            .output()
            .unwrap();
        assert!(backup.status.success(), "{backup:?}");
        assert_eq!(mode(&copy), 0o600, "umask {umask}: the backup");
        server.terminate();
    }
}

async fn a_database_left_readable_by_others_is_made_owner_only_at_start() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("leasehold.db");
    let first = ServerProcess::start(&db, &[]);
    acquire(&reqwest::Client::new(), &first.address, "made").await;
    first.terminate();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = ServerProcess::start(&db, &[]);
    acquire(&reqwest::Client::new(), &server.address, "k").await;
    for suffix in ["", "-wal", "-shm"] {
        let file = dir.path().join(format!("leasehold.db{suffix}"));
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
}

crate::harness::tests! {
    a_second_server_on_the_same_file_is_refused_and_changes_no_lease,
    the_database_and_the_files_beside_it_are_owner_only_whatever_the_umask,
    a_database_left_readable_by_others_is_made_owner_only_at_start,
}
