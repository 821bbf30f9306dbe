//! A replica cut off from PostgreSQL by a silent network: nothing refused,
//! every socket left open, no byte forwarded. Every call on the database is
//! bounded, so an acquire, a release, a waiter and the readiness probe each
//! answer 503 instead of hanging; the reaper keeps trying; once the network
//! heals (the cut connections stay dead) the replica serves again by itself,
//! and a SIGTERM while cut off, with calls stuck on the silent connections,
//! stops it within its shutdown timeout all the same. At the defaults an
//! acquire on a cut network is answered 503 (it prints how soon: the bound
//! is the README's, measured, not asserted), while one that waits longer
//! than the database's probe for a lock on a network that answers is not
//! cut short.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use tempfile::TempDir;

use super::database_down::through;
use super::proxy::Partition;
use crate::helpers::{STOPS_WITHIN, ServerProcess, wait_until_ready};

async fn storage_unavailable(answer: reqwest::Result<reqwest::Response>, what: &str) {
    let answer = answer.unwrap_or_else(|e| panic!("{what}: no answer: {e}"));
    assert_eq!(
        answer.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "{what}: {:?}",
        answer.text().await
    );
    let problem: Value = answer.json().await.unwrap();
    assert_eq!(
        problem["type"], "/problems/storage-unavailable",
        "{what}: {problem}"
    );
}

/// A replica started with `extra` flags on a fresh database, through a
/// partition that can cut the network between them; a client whose timeout
/// is far longer than any bound of the server, so a hang shows as an error.
struct Cut {
    _dir: TempDir,
    db: std::path::PathBuf,
    partition: Partition,
    server: ServerProcess,
    client: reqwest::Client,
}

async fn behind_a_partition(extra: &[&str]) -> Cut {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let (_, upstream) = through(db.to_str().unwrap(), 0);
    let partition = Partition::in_front_of(upstream).await;
    let (url, _) = through(db.to_str().unwrap(), partition.port);
    let server = ServerProcess::start(std::path::Path::new(&url), extra);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    wait_until_ready(&client, &server.address).await;
    Cut {
        _dir: dir,
        db,
        partition,
        server,
        client,
    }
}

async fn a_silent_network_is_answered_503_and_the_replica_recovers_when_it_heals() {
    let flags = ["--db-timeout", "1s", "--reaper-interval", "200ms"];
    let Cut {
        _dir,
        db,
        partition,
        server,
        client,
    } = behind_a_partition(&flags).await;
    let base = server.address.clone();
    let acquire = |key: &str, body: Value| {
        client
            .post(format!("{base}/v1/locks/{key}/acquire"))
            .json(&body)
            .send()
    };
    let held = acquire("held", json!({"holder": "a", "ttl_ms": 60_000}))
        .await
        .unwrap();
    assert_eq!(held.status(), StatusCode::CREATED);
    let held: Value = held.json().await.unwrap();
    let brief = acquire("brief", json!({"holder": "a", "ttl_ms": 1_000}))
        .await
        .unwrap();
    assert_eq!(brief.status(), StatusCode::CREATED);

    partition.cut();
    storage_unavailable(
        acquire("during", json!({"holder": "b", "ttl_ms": 10_000})).await,
        "an acquire",
    )
    .await;
    storage_unavailable(
        client
            .post(format!("{base}/v1/locks/held/release"))
            .json(&json!({"token": held["token"]}))
            .send()
            .await,
        "a release",
    )
    .await;
    storage_unavailable(
        acquire(
            "held",
            json!({"holder": "b", "ttl_ms": 10_000, "wait_ms": 3_000}),
        )
        .await,
        "a waiter",
    )
    .await;
    storage_unavailable(
        client.get(format!("{base}/readyz")).send().await,
        "readiness",
    )
    .await;
    // The brief lease ends meanwhile: the reaper's passes fail, bounded.
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    partition.heal();
    wait_until_ready(&client, &base).await;
    let after = acquire("after", json!({"holder": "b", "ttl_ms": 10_000}))
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::CREATED);
    // The release refused during the cut changed nothing: it works now.
    let released = client
        .post(format!("{base}/v1/locks/held/release"))
        .json(&json!({"token": held["token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    // The reaper got through: the brief lease's expiry is announced.
    let mut announced = false;
    for _ in 0..100 {
        let page: Value = client
            .get(format!("{base}/v1/events?since=0&prefix=brief"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let items = page["items"].as_array().unwrap();
        if items
            .iter()
            .any(|e| e["type"] == "lock.released" && e["reason"] == "expired")
        {
            announced = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(announced, "the brief lease's expiry was never announced");

    // Cut off again with calls parked in the database when the network
    // went silent: acquires (and the reaper) waiting behind a lock on their
    // table, on connections that will never answer now. SIGTERM stops the
    // replica within its shutdown timeout all the same, abandoning them.
    let mut blocker = PgConnection::connect(db.to_str().unwrap()).await.unwrap();
    let mut locked = blocker.begin().await.unwrap();
    sqlx::query("LOCK TABLE lock_leases IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *locked)
        .await
        .unwrap();
    let in_flight: Vec<_> = (0..4)
        .map(|i| {
            let (client, base) = (client.clone(), base.clone());
            tokio::spawn(async move {
                client
                    .post(format!("{base}/v1/locks/last{i}/acquire"))
                    .json(&json!({"holder": "c", "ttl_ms": 10_000}))
                    .send()
                    .await
            })
        })
        .collect();
    parked(&db, 4).await;
    partition.cut();
    let took = server.terminate_within(STOPS_WITHIN).await;
    eprintln!("stopped {took:?} after SIGTERM");
    for request in in_flight {
        if let Ok(answer) = request.await.unwrap() {
            assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
        }
    }
    locked.rollback().await.unwrap();
}

/// An acquire's answer, and how long it took.
async fn timed_acquire(client: &reqwest::Client, base: &str, key: &str) -> (StatusCode, Duration) {
    let started = Instant::now();
    let answer = client
        .post(format!("{base}/v1/locks/{key}/acquire"))
        .json(&json!({"holder": "t", "ttl_ms": 10_000}))
        .send()
        .await
        .unwrap();
    (answer.status(), started.elapsed())
}

async fn a_cut_network_is_answered_503_whether_its_connection_was_warm_or_idle() {
    let cut = behind_a_partition(&[]).await;
    let (client, base) = (&cut.client, cut.server.address.clone());
    // A wait for a lock longer than the probe's, on a network that answers,
    // runs its course.
    let mut blocker = PgConnection::connect(cut.db.to_str().unwrap())
        .await
        .unwrap();
    let mut locked = blocker.begin().await.unwrap();
    sqlx::query("LOCK TABLE lock_leases IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *locked)
        .await
        .unwrap();
    let waiting = tokio::spawn({
        let (client, base) = (client.clone(), base.clone());
        async move { timed_acquire(&client, &base, "behind-a-lock").await }
    });
    tokio::time::sleep(Duration::from_secs(4)).await;
    locked.rollback().await.unwrap();
    let (status, took) = waiting.await.unwrap();
    eprintln!("behind a lock: {status} after {took:?}");
    assert_eq!(status, StatusCode::CREATED, "a wait of {took:?} for a lock");
    // Cut right after an answer (its connection is lent again without a
    // ping), then after the connections sat idle: each answered in seconds.
    assert_eq!(
        timed_acquire(client, &base, "warm").await.0,
        StatusCode::CREATED
    );
    cut.partition.cut();
    for key in ["at-once", "after-a-while"] {
        let (status, took) = timed_acquire(client, &base, key).await;
        eprintln!("{key}: {status} after {took:?}");
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{key}");
        tokio::time::sleep(Duration::from_millis(1_500)).await;
    }
    cut.partition.heal();
    wait_until_ready(client, &base).await;
    assert_eq!(
        timed_acquire(client, &base, "healed").await.0,
        StatusCode::CREATED
    );
}

/// Waits until `count` statements on `db` wait for a lock.
async fn parked(db: &std::path::Path, count: i64) {
    let mut conn = PgConnection::connect(db.to_str().unwrap()).await.unwrap();
    for _ in 0..200 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        if waiting >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("fewer than {count} statements ever waited for the lock");
}

crate::harness::tests! {
    a_silent_network_is_answered_503_and_the_replica_recovers_when_it_heals(2 threads),
    a_cut_network_is_answered_503_whether_its_connection_was_warm_or_idle(2 threads),
}
