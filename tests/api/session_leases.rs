//! What a session holds (`GET /v1/sessions/{id}/leases`): exactly the
//! leases its end would release (its locks, its reservations not yet
//! confirmed, its memberships), each as its own list shows it, in the
//! snapshot of the revision it answers; at most 1000 of each, saying when a
//! list is cut; an ended session, another token's or a malformed id is
//! answered as the inspect answers it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::send;
use crate::helpers::{TestApp, spawn_app};
use crate::sessions::{claim, close, must_bind, open};
use crate::spec_answers::answered;
use crate::tenants::{A, B, open_session, spawn_tenants};

const TEMPLATE: &str = "/v1/sessions/{id}/leases";

fn path(session: &Value) -> String {
    format!("/v1/sessions/{}/leases", session["id"].as_str().unwrap())
}

/// The session's leases, checked against the spec.
async fn leases(app: &TestApp, session: &Value) -> Value {
    let r = app.get(&path(session)).await;
    assert_eq!(r.status(), StatusCode::OK);
    answered("get", TEMPLATE, r).await
}

async fn put(app: &TestApp, path: &str, body: Value) -> reqwest::Response {
    let r = app.client.put(app.url(path)).json(&body).send().await;
    r.unwrap()
}

async fn created(r: reqwest::Response) -> Value {
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

/// `item` without what is computed at the instant of the answer.
fn at_rest(item: &Value) -> Value {
    let mut item = item.clone();
    item.as_object_mut().unwrap().remove("expires_in_ms");
    item
}

/// The items of the list at `path`.
async fn listed(app: &TestApp, path: &str) -> Vec<Value> {
    let page: Value = app.get(path).await.json().await.unwrap();
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(at_rest)
        .collect()
}

async fn a_session_shows_what_its_end_would_release_as_each_list_shows_it() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    let b = must_bind(&app, "held/b", &s).await;
    must_bind(&app, "held/a", &s).await;
    // The same holder's lock, not bound: not the session's.
    app.must_acquire("held/c", "controller", 60_000).await;
    assert!(
        put(&app, "/v1/pools/nets", json!({"cidr": "10.0.0.0/16"}))
            .await
            .status()
            .is_success()
    );
    let reserve = |subnet: &str| {
        app.post(
            "/v1/pools/nets/reservations",
            json!({"holder": "controller", "subnet": subnet, "session": claim(&s)}),
        )
    };
    let kept = created(reserve("10.0.2.0/24").await).await;
    let confirmed = created(reserve("10.0.1.0/24").await).await;
    let confirm = format!(
        "/v1/pools/nets/reservations/{}/confirm",
        confirmed["id"].as_str().unwrap()
    );
    let r = app
        .post(&confirm, json!({"token": confirmed["token"]}))
        .await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "a confirmed reservation is no longer bound"
    );
    assert!(
        put(&app, "/v1/groups/g", json!({}))
            .await
            .status()
            .is_success()
    );
    created(
        put(
            &app,
            "/v1/groups/g/members/m1",
            json!({"session": claim(&s)}),
        )
        .await,
    )
    .await;
    created(put(&app, "/v1/groups/g/members/m0", json!({"ttl_ms": 60_000})).await).await;

    let bound = leases(&app, &s).await;
    for kind in ["locks", "reservations", "members"] {
        let items = bound[kind].as_array().unwrap();
        assert!(items.iter().all(|i| i.get("token").is_none()), "{bound}");
    }
    let locks: Vec<Value> = bound["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(at_rest)
        .collect();
    let all_locks = listed(&app, "/v1/locks?prefix=held/").await;
    assert_eq!(
        locks,
        all_locks[..2],
        "by key, each as GET /v1/locks shows it"
    );
    assert_eq!(
        (&locks[0]["key"], &locks[1]["key"]),
        (&json!("held/a"), &json!("held/b"))
    );
    let reservations: Vec<Value> = bound["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .map(at_rest)
        .collect();
    let pool = listed(&app, "/v1/pools/nets/reservations").await;
    assert_eq!(pool.len(), 2);
    assert_eq!(reservations, [pool[1].clone()], "the unconfirmed one alone");
    assert_eq!(reservations[0]["id"], kept["id"]);
    let members = bound["members"].as_array().unwrap();
    let group = listed(&app, "/v1/groups/g/members").await;
    let mut member = at_rest(&members[0]);
    assert_eq!(
        member.as_object_mut().unwrap().remove("group"),
        Some(json!("g"))
    );
    assert_eq!(
        (members.len(), &member),
        (1, &group[1]),
        "m1 alone, with its group"
    );
    assert_eq!(bound["truncated"], false);

    // A released lock is no longer the session's; the others stay.
    let r = app
        .post("/v1/locks/held%2Fb/release", json!({"token": b["token"]}))
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let bound = leases(&app, &s).await;
    let keys: Vec<&Value> = bound["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["key"])
        .collect();
    assert_eq!(keys, [&json!("held/a")]);
    assert_eq!(bound["reservations"].as_array().unwrap().len(), 1);
    assert_eq!(bound["members"].as_array().unwrap().len(), 1);
    // The revision is the snapshot's: a listing taken after, with no write
    // between, reflects the same.
    let page: Value = app.get("/v1/locks").await.json().await.unwrap();
    assert_eq!(bound["revision"], page["revision"]);
    assert!(bound["revision"].as_i64().unwrap() > 0);
}

async fn each_list_is_cut_at_a_thousand_and_says_so() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    for set in 0..16 {
        let keys: Vec<String> = (0..64).map(|k| format!("many/{set:02}/{k:02}")).collect();
        let body = json!({"keys": keys, "holder": "controller", "session": claim(&s)});
        created(app.post("/v1/lock-sets/acquire", body).await).await;
    }
    let bound = leases(&app, &s).await;
    let keys: Vec<&str> = bound["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 1_000);
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "in key order");
    assert_eq!(keys[999], "many/15/39", "the first thousand");
    assert_eq!(bound["truncated"], true);
    let shown: Value = app
        .get(&format!("/v1/sessions/{}", s["id"].as_str().unwrap()))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["locks"], 1_024, "the inspect counts them all");
}

/// The answer to `path` and to the inspect of the same id, as bodies.
async fn both(app: &TestApp, token: Option<&str>, id: &str) -> [(StatusCode, String); 2] {
    let mut answers = Vec::new();
    for path in [
        format!("/v1/sessions/{id}/leases"),
        format!("/v1/sessions/{id}"),
    ] {
        let r = match token {
            Some(token) => send(app, token, "GET", &path, None).await,
            None => app.get(&path).await,
        };
        answers.push((r.status(), r.text().await.unwrap()));
    }
    answers.try_into().unwrap()
}

async fn an_ended_foreign_or_malformed_session_is_answered_as_the_inspect_does() {
    let app = spawn_app().await;
    let closed = open(&app, 60_000).await;
    assert_eq!(close(&app, &closed).await.status(), StatusCode::NO_CONTENT);
    let expired = open(&app, 200).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    for s in [&closed, &expired] {
        let [leases, inspect] = both(&app, None, s["id"].as_str().unwrap()).await;
        assert_eq!(leases.0, StatusCode::NOT_FOUND);
        assert!(
            leases.1.contains("/problems/session-not-found"),
            "{}",
            leases.1
        );
        assert_eq!(leases, inspect);
    }
    for id in ["nope", "0123456789abcdef0123456789abcdef0"] {
        let [leases, inspect] = both(&app, None, id).await;
        assert_eq!(leases.0, StatusCode::BAD_REQUEST, "{id}: {}", leases.1);
        assert_eq!(leases, inspect);
    }

    let app = spawn_tenants().await;
    let theirs = open_session(&app, A).await;
    let id = theirs["id"].as_str().unwrap();
    let r = send(&app, A, "GET", &format!("/v1/sessions/{id}/leases"), None).await;
    assert_eq!(r.status(), StatusCode::OK, "its opener reads it");
    let [leases, inspect] = both(&app, Some(B), id).await;
    assert_eq!(leases.0, StatusCode::NOT_FOUND);
    assert_eq!(leases, inspect);
}

crate::harness::tests! {
    a_session_shows_what_its_end_would_release_as_each_list_shows_it,
    each_list_is_cut_at_a_thousand_and_says_so,
    an_ended_foreign_or_malformed_session_is_answered_as_the_inspect_does,
}
