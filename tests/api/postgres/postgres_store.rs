//! What only PostgreSQL shows: its exclusion constraint refuses overlapping
//! rows by itself, reapers on several replicas share the work without
//! counting a row twice, replicas agree on when the service was down, and the
//! SQLite file tools refuse a PostgreSQL URL plainly.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use tempfile::TempDir;

use crate::helpers::{ServerProcess, spawn_app, spawn_app_in, wait_until_ready};
use crate::subnets::{must_pool, must_reserve};

async fn the_database_itself_refuses_an_overlapping_reservation() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    must_reserve(&app, "p", json!({"holder": "h", "subnet": "10.0.4.0/22"})).await;
    let mut conn = PgConnection::connect(app.db.to_str().unwrap())
        .await
        .unwrap();
    let mut insert = async |subnet: &str, fencing: i64| {
        let block = leasehold::domain::cidr::Block::parse(subnet).unwrap();
        sqlx::query(
            "INSERT INTO subnet_reservations (fencing_token, pool, subnet, first_addr, last_addr, \
             prefix_len, holder, token, acquired_at, expires_at, ttl_ms) \
             VALUES ($1, 'p', $2::cidr, $3, $4, $5, 'x', 't', 0, NULL, 1000)",
        )
        .bind(fencing)
        .bind(subnet)
        .bind(&block.start_bytes()[..])
        .bind(&block.last_bytes()[..])
        .bind(i64::from(block.prefix_len()))
        .execute(&mut conn)
        .await
    };
    for subnet in ["10.0.5.0/24", "10.0.0.0/16"] {
        let err = insert(subnet, 1_000_000).await.unwrap_err();
        let code = err.as_database_error().and_then(|e| e.code());
        assert_eq!(code.as_deref(), Some("23P01"), "{subnet}: {err}");
    }
    insert("10.0.8.0/24", 1_000_001)
        .await
        .expect("a disjoint row is accepted");
}

async fn acquire(client: &reqwest::Client, address: &str, key: &str, ttl_ms: i64) -> Value {
    let r = client
        .post(format!("{address}/v1/locks/{key}/acquire"))
        .json(&json!({"holder": "h", "ttl_ms": ttl_ms}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

async fn expires_in(client: &reqwest::Client, address: &str, key: &str) -> i64 {
    let shown: Value = client
        .get(format!("{address}/v1/locks/{key}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    shown["expires_in_ms"].as_i64().unwrap()
}

async fn a_replica_joining_a_running_one_gives_no_fresh_ttl_but_a_restart_after_downtime_does() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let a = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &a.address).await;
    acquire(&client, &a.address, "k", 4_000).await;
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;

    // Another replica joins while the first runs: the service was never down.
    let b = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &b.address).await;
    let left = expires_in(&client, &b.address, "k").await;
    assert!(left <= 2_600, "the lease kept its expiry: {left} ms left");

    // Both stop; the service is down; the next start gives a full TTL again.
    a.terminate();
    b.terminate();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let c = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &c.address).await;
    let left = expires_in(&client, &c.address, "k").await;
    assert!(left > 3_000, "a full TTL from the restart: {left} ms left");
}

fn an_unreachable_database_fails_the_start_at_once_in_one_line_without_the_password() {
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg("postgres://lh:s3cret-pw@127.0.0.1:1/leasehold")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(10));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("leasehold: cannot connect to postgres://lh:***@127.0.0.1:1/leasehold"),
        "{err}"
    );
    assert!(!err.contains("s3cret-pw"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn backup_and_check_refuse_a_postgres_url_plainly() {
    let url = crate::backend::server_url();
    for args in [
        vec!["backup", "--db", &url, "--out", "/tmp/never-written.db"],
        vec!["check", "--db", &url],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("works on a SQLite file"), "{err}");
        assert!(err.contains("pg_dump"), "{err}");
    }
    assert!(!std::path::Path::new("/tmp/never-written.db").exists());
}

async fn reapers_on_two_replicas_remove_each_expired_row_once() {
    let dir = Arc::new(TempDir::new().unwrap());
    let quiet = |c: &mut leasehold::config::ServeConfig| {
        c.reaper_interval = Duration::from_secs(3600);
    };
    let a = spawn_app_in(dir.clone(), quiet).await;
    let b = spawn_app_in(dir.clone(), quiet).await;
    for i in 0..120 {
        let app = if i % 2 == 0 { &a } else { &b };
        app.must_acquire(&format!("short/{i}"), "h", 100).await;
    }
    let live = a.must_acquire("long", "h", 60_000).await;
    for pool in ["p", "q"] {
        must_pool(&a, pool, "10.0.0.0/16").await;
        for _ in 0..20 {
            // Long enough that no grant here purges an earlier one.
            let body = json!({"holder": "h", "prefix_len": 24, "ttl_ms": 3_000});
            must_reserve(&b, pool, body).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(3_100)).await;
    let (ra, rb) = tokio::join!(
        leasehold::reaper::reap_once(&a.leases, 7),
        leasehold::reaper::reap_once(&b.leases, 7),
    );
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.locks_removed + rb.locks_removed, 120, "{ra:?} {rb:?}");
    assert!(
        ra.locks_removed > 0 && rb.locks_removed > 0,
        "{ra:?} {rb:?}"
    );
    assert_eq!(
        ra.reservations_removed + rb.reservations_removed,
        40,
        "{ra:?} {rb:?}"
    );
    assert_eq!(crate::backend::count_rows(&a.db, "lock_leases").await, 1);
    assert_eq!(
        crate::backend::count_rows(&a.db, "subnet_reservations").await,
        0
    );
    let shown: Value = a.get("/v1/locks/long").await.json().await.unwrap();
    assert_eq!(shown["fencing_token"], live["fencing_token"]);
    // The freed blocks are back: each pool is one free /16 again.
    for pool in ["p", "q"] {
        let usage: Value = b
            .get(&format!("/v1/pools/{pool}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(usage["largest_free"], "10.0.0.0/16", "{usage}");
    }
}

crate::harness::tests! {
    the_database_itself_refuses_an_overlapping_reservation,
    a_replica_joining_a_running_one_gives_no_fresh_ttl_but_a_restart_after_downtime_does,
    reapers_on_two_replicas_remove_each_expired_row_once(4 threads),
    [sync: an_unreachable_database_fails_the_start_at_once_in_one_line_without_the_password,
        backup_and_check_refuse_a_postgres_url_plainly],
}
