//! `leasehold backup` while clients write, `leasehold check`, and a restore
//! into a new server that finds every lease whole.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::{TestApp, encode, spawn_app, spawn_app_in};

/// Runs the real binary; returns (success, stdout, stderr).
async fn leasehold(args: &[&str], db: &Path) -> (bool, String, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .arg("--db")
        .arg(db)
        .env_remove("LEASEHOLD_DB")
        .output()
        .await
        .expect("leasehold runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// One client: acquire, renew, and release every other lease, until `stop`.
async fn lock_client(app: Arc<TestApp>, id: usize, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let key = format!("backup/{id}/{n}");
        let lease = app
            .must_acquire(&key, &format!("client-{id}"), 60_000)
            .await;
        let token = lease["token"].as_str().unwrap();
        assert_eq!(app.renew(&key, token).await.status(), StatusCode::OK);
        if n % 2 == 0 {
            let released = app.release(&key, token).await;
            assert_eq!(released.status(), StatusCode::NO_CONTENT);
        }
        done.fetch_add(1, Ordering::Relaxed);
        n += 1;
    }
}

/// One client reserving /28s, confirming every other one.
async fn subnet_client(app: Arc<TestApp>, id: usize, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) {
    let pool = format!("pool-{id}");
    let put = app
        .client
        .put(app.url(&format!("/v1/pools/{pool}")))
        .json(&json!({"cidr": format!("10.{id}.0.0/16")}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let r = app
            .post(
                &format!("/v1/pools/{pool}/reservations"),
                json!({"holder": format!("client-{id}"), "prefix_len": 28}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let r: Value = r.json().await.unwrap();
        if n % 2 == 0 {
            let path = format!(
                "/v1/pools/{pool}/reservations/{}/confirm",
                r["id"].as_str().unwrap()
            );
            let confirmed = app.post(&path, json!({"token": r["token"]})).await;
            assert_eq!(confirmed.status(), StatusCode::OK);
        }
        done.fetch_add(1, Ordering::Relaxed);
        n += 1;
    }
}

async fn get_ok(app: &TestApp, path: &str) -> Value {
    let r = app.get(path).await;
    assert_eq!(r.status(), StatusCode::OK, "GET {path}");
    r.json().await.unwrap()
}

/// Every item of a paged list.
async fn all_items(app: &TestApp, path: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let page_path = match &cursor {
            Some(c) => format!("{path}{sep}limit=1000&cursor={}", encode(c)),
            None => format!("{path}{sep}limit=1000"),
        };
        let page = get_ok(app, &page_path).await;
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return items,
        }
    }
}

fn assert_lease_fields(lease: &Value) {
    assert!(
        lease["holder"]
            .as_str()
            .is_some_and(|h| h.starts_with("client-")),
        "{lease}"
    );
    assert!(
        lease["fencing_token"].as_i64().is_some_and(|t| t > 0),
        "{lease}"
    );
    assert!(lease["acquired_at"].is_string(), "{lease}");
    assert!(
        lease.get("token").is_none(),
        "tokens are never listed: {lease}"
    );
}

async fn a_backup_taken_under_load_restores_into_a_consistent_server() {
    let app = Arc::new(spawn_app().await);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for id in 0..16 {
        let (app, stop, done) = (app.clone(), stop.clone(), done.clone());
        clients.push(if id < 12 {
            tokio::spawn(lock_client(app, id, stop, done))
        } else {
            tokio::spawn(subnet_client(app, id, stop, done))
        });
    }
    for _ in 0..1500 {
        if done.load(Ordering::Relaxed) >= 50 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let restored = Arc::new(TempDir::new().unwrap());
    let copy = restored.path().join("leasehold.db");
    let at_backup = done.load(Ordering::Relaxed);
    let (ok, out, err) = leasehold(&["backup", "--out", copy.to_str().unwrap()], &app.db).await;
    assert!(ok, "backup failed: {err}");
    assert!(out.contains("backed up"), "{out}");
    let during = done.load(Ordering::Relaxed) - at_backup;
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    eprintln!("{at_backup} client rounds before the backup, {during} while it ran");

    // A second backup to the same file is refused rather than overwriting it.
    let (again, _, err) = leasehold(&["backup", "--out", copy.to_str().unwrap()], &app.db).await;
    assert!(!again, "a backup never overwrites");
    assert!(err.contains("exists"), "{err}");

    let (ok, out, err) = leasehold(&["check"], &copy).await;
    assert!(ok, "check failed: {out}{err}");
    assert_eq!(out.trim(), "ok");

    // Restore: a new server on the copy.
    let server = spawn_app_in(restored, |_| {}).await;
    let locks = all_items(&server, "/v1/locks?prefix=backup%2F").await;
    assert!(!locks.is_empty(), "the copy holds leases");
    let mut max_fencing = 0;
    for lock in &locks {
        assert_lease_fields(lock);
        let key = lock["key"].as_str().unwrap();
        let one = get_ok(&server, &format!("/v1/locks/{}", encode(key))).await;
        assert_eq!(one["fencing_token"], lock["fencing_token"], "{key}");
        max_fencing = max_fencing.max(lock["fencing_token"].as_i64().unwrap());
    }
    let mut reservations = 0;
    for id in 12..16 {
        let pool = format!("pool-{id}");
        if server.get(&format!("/v1/pools/{pool}")).await.status() == StatusCode::NOT_FOUND {
            continue; // the pool was created after the snapshot
        }
        for r in all_items(&server, &format!("/v1/pools/{pool}/reservations")).await {
            assert_lease_fields(&r);
            let path = format!(
                "/v1/pools/{pool}/reservations/{}",
                r["id"].as_str().unwrap()
            );
            assert_eq!(get_ok(&server, &path).await["subnet"], r["subnet"]);
            max_fencing = max_fencing.max(r["fencing_token"].as_i64().unwrap());
            reservations += 1;
        }
    }
    eprintln!(
        "the copy holds {} locks and {reservations} reservations",
        locks.len()
    );
    // The fencing counter in the copy is at least every token in it.
    let next = server
        .must_acquire("after-restore", "client-new", 60_000)
        .await;
    assert!(
        next["fencing_token"].as_i64().unwrap() > max_fencing,
        "{next} after a max of {max_fencing}"
    );
}

async fn check_fails_on_a_damaged_file() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("broken.db");
    std::fs::write(&db, b"SQLite format 3\0 but not really a database at all").unwrap();
    let (ok, _, err) = leasehold(&["check"], &db).await;
    assert!(!ok, "check exits non-zero on a damaged file");
    assert!(!err.is_empty());
}

crate::harness::tests! {
    a_backup_taken_under_load_restores_into_a_consistent_server(4 threads),
    check_fails_on_a_damaged_file,
}
