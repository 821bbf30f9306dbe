//! A backup killed half-way leaves nothing under the name a restore would
//! use, and `leasehold check` says in plain words what is wrong with a file
//! that is cut short, empty, or no leasehold database at all, creating
//! nothing beside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;

use crate::helpers::spawn_app;
use crate::refusals::serve_refused;

#[path = "../../../benches/loadgen/seed.rs"]
mod seed;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

fn backup(db: &Path, out: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["backup", "--db"])
        .arg(db)
        .arg("--out")
        .arg(out);
    command
}

fn check(db: &Path) -> Output {
    Command::new(BIN)
        .args(["check", "--db"])
        .arg(db)
        .output()
        .unwrap()
}

fn beside(path: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", path.display()))
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// A stopped server's database, with `leases` live leases in it.
async fn seeded(leases: i64) -> (Arc<TempDir>, PathBuf) {
    let app = spawn_app().await;
    app.must_acquire("before-seed", "h", 60_000).await;
    let db = app.db.clone();
    let dir = app.stop().await;
    seed::seed(&db, leases, true).await.unwrap();
    (dir, db)
}

async fn a_backup_killed_half_way_leaves_no_file_under_its_name() {
    let (dir, db) = seeded(300_000).await;
    let out = dir.path().join("backup.db");
    let partial = beside(&out, ".partial");
    let mut child = backup(&db, &out).spawn().unwrap();
    // Kill it once the copy has begun to be written, under whatever name.
    for _ in 0..2_000 {
        if size(&partial) > 0 || size(&out) > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(size(&partial) > 0 || size(&out) > 0, "the copy never began");
    assert!(
        child.try_wait().unwrap().is_none(),
        "killed before it finished"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists(), "a killed backup left {}", out.display());

    // The next backup to the same name discards what the killed one left.
    let again = backup(&db, &out).output().unwrap();
    assert!(again.status.success(), "{again:?}");
    for leftover in [partial.clone(), beside(&partial, "-journal")] {
        assert!(!leftover.exists(), "{} was left", leftover.display());
    }
    let checked = check(&out);
    assert!(checked.status.success(), "{checked:?}");
    for suffix in ["-journal", "-wal", "-shm"] {
        assert!(
            !beside(&out, suffix).exists(),
            "check made {suffix} beside the backup"
        );
    }
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&out)
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let counter: i64 = sqlx::query_scalar("SELECT value FROM fencing_counter WHERE id = 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(counter > 300_000, "the copy's fencing counter is {counter}");
    pool.close().await;
}

/// `check` on `file` fails with a message holding `words`, creating nothing.
fn refused_by_check(file: &Path, words: &[&str]) {
    let output = check(file);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}: {stderr}", file.display());
    for word in words {
        assert!(stderr.contains(word), "{word:?} missing from {stderr:?}");
    }
    assert!(!stderr.contains("readonly"), "{stderr}");
    for suffix in ["-wal", "-shm"] {
        assert!(
            !beside(file, suffix).exists(),
            "check made {suffix} beside it"
        );
    }
}

async fn check_says_what_is_wrong_with_a_file_that_is_no_database() {
    let (dir, db) = seeded(1_000).await;
    let copy = dir.path().join("copy.db");
    assert!(backup(&db, &copy).output().unwrap().status.success());
    let whole = std::fs::read(&copy).unwrap();

    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    refused_by_check(&cut, &["cut short", "interrupted copy"]);
    assert!(!beside(&cut, "-journal").exists());

    // A copy interrupted with its rollback journal beside it.
    std::fs::write(beside(&cut, "-journal"), vec![7u8; 4096]).unwrap();
    refused_by_check(&cut, &["was being written", "incomplete"]);

    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    refused_by_check(&empty, &["is empty"]);

    let random = dir.path().join("random.db");
    std::fs::write(
        &random,
        (0..8192u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    refused_by_check(&random, &["not a SQLite database"]);

    let foreign = dir.path().join("foreign.db");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&foreign)
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    sqlx::query("CREATE TABLE notes (text TEXT)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    refused_by_check(&foreign, &["not a leasehold database"]);
}

async fn a_half_written_copy_is_refused_at_start_and_left_as_it_was() {
    let (dir, db) = seeded(1_000).await;
    let copy = dir.path().join("copy.db");
    assert!(backup(&db, &copy).output().unwrap().status.success());
    let whole = std::fs::read(&copy).unwrap();
    let cut = dir.path().join("restored.db");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();

    let line = serve_refused(&cut, &["--listen", "127.0.0.1:0"], &[]).await;
    assert!(line.contains("cut short"), "{line}");
    // A copy whose writer was stopped leaves its rollback journal beside it.
    std::fs::write(&cut, &whole).unwrap();
    std::fs::write(beside(&cut, "-journal"), vec![7u8; 4096]).unwrap();
    let line = serve_refused(&cut, &["--listen", "127.0.0.1:0"], &[]).await;
    assert!(line.contains("was being written"), "{line}");
    assert_eq!(
        std::fs::read(&cut).unwrap(),
        whole,
        "the file was left as it was"
    );
    assert!(beside(&cut, "-journal").exists());
}

crate::harness::tests! {
    a_backup_killed_half_way_leaves_no_file_under_its_name,
    check_says_what_is_wrong_with_a_file_that_is_no_database,
    a_half_written_copy_is_refused_at_start_and_left_as_it_was,
}
