//! Grants of a free key sent as one statement, with no transaction around it,
//! raced for real: two replicas, many clients and connections hammering
//! the same few keys with plain exclusive grants (one statement when the key
//! is free), waiting grants, shared and semaphore grants (their
//! transactions), Idempotency-Keys, releases and leases left to expire.
//! Afterwards the change log, replayed key by key in revision order, must
//! show every hold compatible with the holds it overlapped (one exclusive
//! holder at a time), fencing tokens strictly increasing, no time going
//! back, and every grant's time the one its client was answered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::replicas::two_replicas;
use crate::helpers::encode;

const KEYS: [&str; 3] = ["race/a", "race/b", "race/c"];

/// What a client asks for, by turn.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Claim {
    Exclusive,
    Waiting,
    Idempotent,
    Lapsing,
    Shared,
    Semaphore,
}

const TURNS: [Claim; 9] = [
    Claim::Exclusive,
    Claim::Shared,
    Claim::Exclusive,
    Claim::Waiting,
    Claim::Semaphore,
    Claim::Exclusive,
    Claim::Idempotent,
    Claim::Lapsing,
    Claim::Exclusive,
];

impl Claim {
    fn body(self, holder: &str) -> Value {
        let ttl = if self == Claim::Lapsing { 150 } else { 30_000 };
        let mut body = json!({"holder": holder, "ttl_ms": ttl});
        match self {
            Claim::Waiting => body["wait_ms"] = json!(200),
            Claim::Shared => body["mode"] = json!("shared"),
            Claim::Semaphore => body["max_holders"] = json!(2),
            _ => {}
        }
        body
    }

    /// Whether a lease of this claim may overlap one of `other`.
    fn coexists_with(self, other: Claim) -> bool {
        matches!(
            (self, other),
            (Claim::Shared, Claim::Shared) | (Claim::Semaphore, Claim::Semaphore)
        )
    }
}

fn millis(rfc3339: &Value) -> i64 {
    let t = OffsetDateTime::parse(rfc3339.as_str().unwrap(), &Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Every grant answered: its claim and the `acquired_at` it was told
/// (`None` from a second replica: each shows the shared lease clock on
/// its own wall clock, and their readings agree within a few milliseconds).
type Granted = Arc<Mutex<HashMap<i64, (Claim, Option<i64>)>>>;

/// One client's turns until `deadline`: a grant, a moment's hold, its
/// release (none for a lapsing lease); any 5xx fails the test.
async fn client_turns(
    client: reqwest::Client,
    (base, first): (String, bool),
    i: usize,
    deadline: Instant,
    granted: Granted,
) {
    let mut n = 0;
    while Instant::now() < deadline {
        n += 1;
        let key = KEYS[(i + n) % KEYS.len()];
        let claim = TURNS[(i * 7 + n) % TURNS.len()];
        let mut request = client
            .post(format!("{base}/v1/locks/{}/acquire", encode(key)))
            .json(&claim.body(&format!("c{i}")));
        if claim == Claim::Idempotent {
            request = request.header("Idempotency-Key", format!("k{i}-{n}"));
        }
        let answer = request.send().await.unwrap();
        let status = answer.status();
        let lease: Value = answer.json().await.unwrap();
        if status != StatusCode::CREATED {
            assert_eq!(status, StatusCode::CONFLICT, "{claim:?} on {key}: {lease}");
            continue;
        }
        let fencing = lease["fencing_token"].as_i64().unwrap();
        let at = first.then(|| millis(&lease["acquired_at"]));
        granted.lock().unwrap().insert(fencing, (claim, at));
        tokio::time::sleep(Duration::from_millis((n % 3) as u64)).await;
        if claim == Claim::Lapsing {
            continue;
        }
        let released = client
            .post(format!("{base}/v1/locks/{}/release", encode(key)))
            .json(&json!({"token": lease["token"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            released.status(),
            StatusCode::NO_CONTENT,
            "{claim:?} {lease}"
        );
    }
}

/// The events of `prefix`, in revision order.
async fn change_log(client: &reqwest::Client, base: &str) -> Vec<Value> {
    let mut events = vec![];
    let mut since = 0;
    loop {
        let page: Value = client
            .get(format!(
                "{base}/v1/events?prefix=race%2F&since={since}&limit=1000"
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let items = page["items"].as_array().unwrap().clone();
        if items.is_empty() {
            return events;
        }
        since = page["next_revision"].as_i64().unwrap();
        events.extend(items);
    }
}

/// How far apart two replicas' readings of the shared lease clock may be.
const REPLICAS_AGREE_MS: i64 = 50;

/// Replays one key's events: every grant compatible with the holds it
/// overlaps, its fencing token above every one before it, no time going
/// back (by more than `skew`, two replicas' disagreement), and its time the
/// one its client was told.
fn replay(
    key: &str,
    events: &[&Value],
    granted: &HashMap<i64, (Claim, Option<i64>)>,
    skew: i64,
) -> usize {
    let mut holding: HashMap<i64, Claim> = HashMap::new();
    let (mut last_fencing, mut last_at, mut grants) = (0, i64::MIN, 0);
    let mut last = &Value::Null;
    for event in events {
        let at = millis(&event["at"]);
        assert!(
            at + skew >= last_at,
            "{key}: {event} is earlier than the event before it, {last}"
        );
        (last_at, last) = (at, event);
        let fencing = event["fencing_token"].as_i64().unwrap();
        match event["type"].as_str().unwrap() {
            "lock.acquired" => {
                let (claim, answered) = granted[&fencing];
                if let Some(answered) = answered {
                    assert_eq!(
                        answered, at,
                        "{key}: {claim:?} {event} answered another time"
                    );
                }
                assert!(
                    fencing > last_fencing,
                    "{key}: {event} after {last_fencing}"
                );
                assert!(
                    holding.values().all(|held| claim.coexists_with(*held)),
                    "{key}: {claim:?} {event} granted over {holding:?}"
                );
                if claim == Claim::Semaphore {
                    assert!(holding.len() < 2, "{key}: a third holder of two: {event}");
                }
                holding.insert(fencing, claim);
                (last_fencing, grants) = (fencing, grants + 1);
            }
            "lock.released" => {
                assert!(
                    holding.remove(&fencing).is_some(),
                    "{key}: {event} held nothing"
                );
            }
            other => panic!("unexpected event {other}"),
        }
    }
    grants
}

/// 48 clients racing on `KEYS` for 6 s, spread over `replicas`; then the
/// change log replayed.
async fn race(client: &reqwest::Client, replicas: &[&str]) {
    let granted: Granted = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(6);
    let clients = (0..48).map(|i| {
        let base = replicas[i % replicas.len()].to_owned();
        let first = i % replicas.len() == 0;
        let turns = client_turns(client.clone(), (base, first), i, deadline, granted.clone());
        tokio::spawn(turns)
    });
    for done in join_all(clients).await {
        done.unwrap();
    }
    // The lapsing leases are over; their ends are recorded by the reaper.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let events = change_log(client, replicas[0]).await;
    let granted = granted.lock().unwrap().clone();
    let skew = if replicas.len() > 1 {
        REPLICAS_AGREE_MS
    } else {
        0
    };
    let mut grants = 0;
    for key in KEYS {
        let of_key: Vec<&Value> = events.iter().filter(|e| e["key"] == key).collect();
        grants += replay(key, &of_key, &granted, skew);
    }
    assert_eq!(
        grants,
        granted.len(),
        "every grant answered is in the log, once"
    );
    eprintln!("{grants} grants raced on {} keys", KEYS.len());
}

async fn racing_one_statement_grants_and_transactions_keep_one_exclusive_holder() {
    let (_dir, a, b, client) = two_replicas().await;
    race(&client, &[&a.address, &b.address]).await;
}

async fn racing_on_one_replica_every_time_on_a_key_follows_the_one_before() {
    let (_dir, a, _b, client) = two_replicas().await;
    race(&client, &[&a.address]).await;
}

crate::harness::tests! {
    racing_one_statement_grants_and_transactions_keep_one_exclusive_holder(4 threads),
    racing_on_one_replica_every_time_on_a_key_follows_the_one_before(4 threads),
}
