//! A full disk, for real: the database lives on a small tmpfs that a filler
//! file fills up. Writes answer 503 `storage-unavailable`, reads keep
//! working, nothing acknowledged is lost, nothing refused is half-written,
//! and writes resume by themselves once space is freed.
//!
//! Mounting needs root (CI runs as root); without it the test fails and says so.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::{encode, problem, spawn_app_in};

/// A size-limited tmpfs mounted on a fresh folder; unmounted when dropped,
/// also when the test fails.
struct Tmpfs {
    dir: Arc<TempDir>,
}

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = Arc::new(TempDir::new().expect("temp dir"));
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output()
            .expect("the mount command runs");
        assert!(
            out.status.success(),
            "this test needs to mount a {size} tmpfs to fill a disk for real, which \
             needs root (CAP_SYS_ADMIN); run the tests as root as CI does. mount said: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let path = self.dir.path();
        let unmounted = Command::new("umount").arg(path).status();
        if !unmounted.is_ok_and(|s| s.success()) {
            // Still in use (a server that has not stopped yet): detach it now,
            // the kernel frees it when the last file is closed.
            let _ = Command::new("umount").arg("-l").arg(path).status();
        }
    }
}

/// Writes zeros to `path` until the filesystem refuses; answers the bytes written.
fn fill(path: &Path) -> u64 {
    let mut file = std::fs::File::create(path).expect("the filler is created");
    let chunk = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    let mut size = chunk.len();
    // Large chunks first, then smaller ones, down to the last free bytes.
    while size > 0 {
        match file.write(&chunk[..size]) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) if e.raw_os_error() == Some(28) => size /= 2,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    let _ = file.sync_all();
    written
}

fn big_metadata(i: usize) -> Value {
    json!({"n": i, "pad": "x".repeat(3_900)})
}

async fn acquire(app: &crate::helpers::TestApp, key: &str, i: usize) -> reqwest::Response {
    app.post(
        &format!("/v1/locks/{}/acquire", encode(key)),
        json!({"holder": format!("h-{i}"), "ttl_ms": 3_600_000, "metadata": big_metadata(i)}),
    )
    .await
}

async fn integrity(db: &Path) -> String {
    use sqlx::ConnectOptions;
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .connect()
        .await
        .expect("the database opens");
    sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&mut conn)
        .await
        .expect("the check runs")
}

async fn a_full_disk_refuses_writes_keeps_reads_and_recovers_by_itself() {
    let disk = Tmpfs::mount("3m");
    let app = spawn_app_in(disk.dir.clone(), |c| {
        c.reaper_interval = Duration::from_millis(100);
    })
    .await;
    let kept = app.must_acquire("before", "h-before", 3_600_000).await;
    // Leases that expire while the disk is full give the reaper work to fail at.
    for i in 0..5 {
        app.must_acquire(&format!("short/{i}"), "h", 300).await;
    }
    let filler = disk.path().join("filler");
    let filled = fill(&filler);
    assert!(
        filled > 1_000_000,
        "the filler took the free space ({filled} bytes)"
    );
    // Leave room for some grants, so the disk fills up while writes run. A
    // commit appends every page it changed to the write-ahead log (the
    // lease's row, its indexes, its event: about 40 KiB when a grant
    // commits alone, as it may on a busy machine), so the room is sized for
    // a few dozen commits.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&filler)
        .unwrap()
        .set_len(filled - 1024 * 1024)
        .unwrap();

    // Rounds of concurrent grants (so batches share commits) until the
    // database can grow no more; every answer is noted.
    let mut granted: BTreeMap<String, Value> = BTreeMap::new();
    granted.insert("before".into(), kept.clone());
    let mut refused: Vec<String> = vec![];
    for round in 0..500 {
        let answers = futures::future::join_all((0..8).map(|j| {
            let key = format!("full/{round}-{j}");
            let app = &app;
            async move { (key.clone(), acquire(app, &key, round * 8 + j).await) }
        }))
        .await;
        for (key, response) in answers {
            if response.status() == StatusCode::CREATED {
                granted.insert(key, response.json().await.unwrap());
            } else {
                problem(
                    response,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "storage-unavailable",
                )
                .await;
                refused.push(key);
            }
        }
        if !refused.is_empty() {
            break;
        }
    }
    assert!(
        !refused.is_empty(),
        "the disk filled up and writes were refused"
    );
    assert!(
        granted.len() > 10,
        "grants fitted in the room left ({})",
        granted.len()
    );

    // Every kind of write is refused the same way, and the process stays up.
    let first = "before".to_owned();
    let first_token = kept["token"].as_str().unwrap().to_owned();
    // Take the last free bytes too (the filler left room for the grants).
    fill(&disk.path().join("filler-2"));
    // A small write may still fit in room the log file already has; writes
    // go on being refused as soon as they do not.
    let mut refused_again = false;
    for n in 0..50 {
        let key = format!("again/{n}");
        let r = acquire(&app, &key, n).await;
        if r.status() == StatusCode::CREATED {
            granted.insert(key, r.json().await.unwrap());
            continue;
        }
        assert_eq!(r.headers()["retry-after"], "1");
        problem(r, StatusCode::SERVICE_UNAVAILABLE, "storage-unavailable").await;
        refused.push(key);
        refused_again = true;
        break;
    }
    assert!(refused_again, "grants are refused while the disk is full");
    let mut pools_refused = false;
    for n in 0..50 {
        let put = app
            .client
            .put(app.url(&format!("/v1/pools/p{n}")))
            .json(&json!({"cidr": "10.0.0.0/8", "labels": {"pad": "y".repeat(3_000)}}))
            .send()
            .await
            .unwrap();
        if put.status() != StatusCode::CREATED {
            problem(put, StatusCode::SERVICE_UNAVAILABLE, "storage-unavailable").await;
            pools_refused = true;
            break;
        }
    }
    assert!(
        pools_refused,
        "pool writes are refused while the disk is full"
    );
    problem(
        app.get("/readyz").await,
        StatusCode::SERVICE_UNAVAILABLE,
        "storage-unavailable",
    )
    .await;

    assert!(
        crate::helpers::gauge(&app, "leasehold_storage_failures_total").await >= 2,
        "refused writes are counted"
    );
    // Reads keep working.
    let held: Value = app
        .get(&format!("/v1/locks/{}", encode(&first)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(held["holder"], granted[&first]["holder"]);
    let page = app.get("/v1/locks?prefix=full%2F&limit=10").await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    // The reaper and the heartbeat keep failing for a while; the process lives on.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);

    // Space comes back: writes resume without a restart.
    std::fs::remove_file(&filler).unwrap();
    std::fs::remove_file(disk.path().join("filler-2")).unwrap();
    let started = Instant::now();
    loop {
        let r = acquire(&app, "after", 0).await;
        if r.status() == StatusCode::CREATED {
            granted.insert("after".into(), r.json().await.unwrap());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "writes did not resume: {} {}",
            r.status(),
            r.text().await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Ready again within seconds of the last refused write.
    let started = Instant::now();
    while app.get("/readyz").await.status() != StatusCode::OK {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never ready again"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        app.renew(&first, &first_token).await.status(),
        StatusCode::OK
    );

    // A refused write left nothing behind, not even the grants that shared
    // its failed batch.
    for key in &refused {
        let r = app.get(&format!("/v1/locks/{}", encode(key))).await;
        problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
    }
    // Nothing acknowledged was lost, also across a restart.
    let db = app.db.clone();
    let dir = app.stop().await;
    // The log the full disk left behind was checkpointed into the database.
    let wal = db.with_extension("db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
    let app = spawn_app_in(dir, |_| {}).await;
    for (key, lease) in &granted {
        let now: Value = app
            .get(&format!("/v1/locks/{}", encode(key)))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            (&now["holder"], &now["fencing_token"]),
            (&lease["holder"], &lease["fencing_token"]),
            "{key}"
        );
    }
    app.stop().await;
    assert_eq!(integrity(&db).await, "ok");
    drop(disk);
}

crate::harness::tests! {
    a_full_disk_refuses_writes_keeps_reads_and_recovers_by_itself,
}
