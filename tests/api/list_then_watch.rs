//! List, then watch: a lock listing's `revision` is where the change log
//! continues after it, under writes running all the while: replaying the
//! events after it onto the listing gives exactly the leases live at the
//! end, with nothing missed and nothing seen twice.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::events::page;
use crate::helpers::{TestApp, spawn_app};

async fn held(app: &TestApp) -> (BTreeSet<String>, i64) {
    let listed: Value = app
        .get("/v1/locks?prefix=lw%2F&limit=1000")
        .await
        .json()
        .await
        .unwrap();
    let keys = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["key"].as_str().unwrap().to_owned())
        .collect();
    (keys, listed["revision"].as_i64().unwrap())
}

async fn a_lock_listing_then_its_events_miss_nothing_and_repeat_nothing() {
    let app = spawn_app().await;
    for i in 0..10 {
        app.must_acquire(&format!("lw/base{i}"), "h", 60_000).await;
    }
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (client, base) = (app.client.clone(), app.url("/v1/locks/lw%2F"));
            tokio::spawn(async move {
                for i in 0..30 {
                    let url = format!("{base}w{w}-{i}");
                    let r = client
                        .post(format!("{url}/acquire"))
                        .json(&json!({"holder": "w", "ttl_ms": 60_000}))
                        .send()
                        .await
                        .unwrap();
                    let body: Value = r.json().await.unwrap();
                    if i % 3 != 0 {
                        client
                            .post(format!("{url}/release"))
                            .json(&json!({"token": body["token"]}))
                            .send()
                            .await
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    let (mut keys, revision) = held(&app).await;
    for w in writers {
        w.await.unwrap();
    }
    let (live, end) = held(&app).await;
    let mut since = revision;
    'replay: while since < end {
        let p = page(&app, &format!("?prefix=lw%2F&since={since}&limit=1000")).await;
        for e in p["items"].as_array().unwrap() {
            if e["revision"].as_i64().unwrap() > end {
                break 'replay;
            }
            let key = e["key"].as_str().unwrap().to_owned();
            match e["type"].as_str().unwrap() {
                "lock.acquired" => assert!(keys.insert(key.clone()), "{key} acquired twice"),
                "lock.released" => assert!(keys.remove(&key), "{key} released unseen"),
                other => panic!("unexpected {other}"),
            }
        }
        since = p["next_revision"].as_i64().unwrap();
    }
    assert_eq!(keys, live);
}

crate::harness::tests! {
    a_lock_listing_then_its_events_miss_nothing_and_repeat_nothing(4 threads),
}
