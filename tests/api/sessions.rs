//! Sessions over real HTTP: open, keep alive, close, inspect, force close;
//! locks bound to a session live exactly as long as it, end together with
//! it (a grant right after sees every key free, waiters are woken), and a
//! session that expires frees its keys without the reaper.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, encode, problem, spawn_app, spawn_app_with};

/// Opens a session of `ttl_ms`; the answer with its id and token.
pub async fn open(app: &TestApp, ttl_ms: i64) -> Value {
    let r = app
        .post(
            "/v1/sessions",
            json!({"holder": "controller", "ttl_ms": ttl_ms}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        location,
        format!("/v1/sessions/{}", body["id"].as_str().unwrap())
    );
    body
}

/// The claim on `session` an acquire or reserve sends.
pub fn claim(session: &Value) -> Value {
    json!({"id": session["id"], "token": session["token"]})
}

/// Acquires `key` bound to `session`.
pub async fn bind(app: &TestApp, key: &str, session: &Value) -> reqwest::Response {
    app.post(
        &format!("/v1/locks/{}/acquire", encode(key)),
        json!({"holder": "controller", "session": claim(session)}),
    )
    .await
}

pub async fn must_bind(app: &TestApp, key: &str, session: &Value) -> Value {
    let r = bind(app, key, session).await;
    assert_eq!(r.status(), StatusCode::CREATED, "bind {key}");
    r.json().await.unwrap()
}

pub async fn close(app: &TestApp, session: &Value) -> reqwest::Response {
    let path = format!("/v1/sessions/{}/close", session["id"].as_str().unwrap());
    app.post(&path, json!({"token": session["token"]})).await
}

pub async fn show(app: &TestApp, session: &Value) -> reqwest::Response {
    app.get(&format!("/v1/sessions/{}", session["id"].as_str().unwrap()))
        .await
}

async fn a_session_opens_renews_shows_and_closes() {
    let app = spawn_app().await;
    let s = open(&app, 30_000).await;
    assert_eq!(s["id"].as_str().unwrap().len(), 32);
    assert_eq!(s["token"].as_str().unwrap().len(), 32);
    assert_eq!(s["holder"], "controller");
    assert_eq!(s["ttl_ms"], 30_000);
    assert!(s["expires_in_ms"].as_i64().unwrap() <= 30_000);

    let shown: Value = show(&app, &s).await.json().await.unwrap();
    assert_eq!(shown["id"], s["id"]);
    assert_eq!(shown["locks"], 0);
    assert_eq!(shown["reservations"], 0);
    assert!(
        shown.get("token").is_none(),
        "inspect never shows the token"
    );

    let id = s["id"].as_str().unwrap();
    let renewed = app
        .post(
            &format!("/v1/sessions/{id}/renew"),
            json!({"token": s["token"], "ttl_ms": 90_000}),
        )
        .await;
    assert_eq!(renewed.status(), StatusCode::OK);
    let renewed: Value = renewed.json().await.unwrap();
    assert_eq!(renewed["ttl_ms"], 90_000);
    assert!(renewed["expires_in_ms"].as_i64().unwrap() > 30_000);
    assert!(renewed.get("token").is_none());

    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    let gone = problem(
        show(&app, &s).await,
        StatusCode::NOT_FOUND,
        "session-not-found",
    )
    .await;
    assert_eq!(gone["id"], s["id"]);
    problem(close(&app, &s).await, StatusCode::CONFLICT, "lease-lost").await;
    let renew = app
        .post(
            &format!("/v1/sessions/{id}/renew"),
            json!({"token": s["token"]}),
        )
        .await;
    problem(renew, StatusCode::CONFLICT, "lease-lost").await;
}

async fn session_refusals_are_problems_naming_the_field() {
    let app = spawn_app().await;
    let short = app
        .post("/v1/sessions", json!({"holder": "h", "ttl_ms": 5}))
        .await;
    let body = problem(short, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "ttl_ms");
    let nameless = app
        .post("/v1/sessions", json!({"holder": "", "ttl_ms": 1_000}))
        .await;
    let body = problem(nameless, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "holder");

    let s = open(&app, 30_000).await;
    let id = s["id"].as_str().unwrap();
    let wrong = app
        .post(
            &format!("/v1/sessions/{id}/renew"),
            json!({"token": "0123456789abcdef0123456789abcdef"}),
        )
        .await;
    problem(wrong, StatusCode::CONFLICT, "lease-lost").await;
    let wrong = app
        .post(
            &format!("/v1/sessions/{id}/close"),
            json!({"token": "nope"}),
        )
        .await;
    problem(wrong, StatusCode::CONFLICT, "lease-lost").await;
    let unknown = format!("/v1/sessions/{}", "0123456789abcdef0123456789abcdef");
    problem(
        app.get(&unknown).await,
        StatusCode::NOT_FOUND,
        "session-not-found",
    )
    .await;
    problem(
        app.delete(&unknown).await,
        StatusCode::NOT_FOUND,
        "session-not-found",
    )
    .await;
    // An id that is no session id is refused as such, and never echoed.
    let long = "x".repeat(5_000);
    for id in ["not-an-id", long.as_str()] {
        let token = json!({"token": s["token"]});
        for response in [
            app.get(&format!("/v1/sessions/{id}")).await,
            app.delete(&format!("/v1/sessions/{id}")).await,
            app.post(&format!("/v1/sessions/{id}/renew"), token.clone())
                .await,
            app.post(&format!("/v1/sessions/{id}/close"), token).await,
        ] {
            let body = problem(response, StatusCode::BAD_REQUEST, "invalid-request").await;
            assert_eq!(body["field"], "id");
            assert!(!body.to_string().contains(id), "{body}");
        }
    }
    assert_eq!(show(&app, &s).await.status(), StatusCode::OK, "still open");
}

async fn bad_claims_on_a_session_bind_nothing_and_name_the_field() {
    let app = spawn_app().await;
    let s = open(&app, 30_000).await;
    let acquire = |body: Value| app.post("/v1/locks/claimed/acquire", body);

    let both = acquire(json!({"holder": "h", "ttl_ms": 1_000, "session": claim(&s)})).await;
    let body = problem(both, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "session");
    let neither = acquire(json!({"holder": "h"})).await;
    let body = problem(neither, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "ttl_ms");
    let malformed =
        acquire(json!({"holder": "h", "session": {"id": "x", "token": s["token"]}})).await;
    let body = problem(malformed, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "session.id");

    let unknown = json!({"id": "0123456789abcdef0123456789abcdef", "token": s["token"]});
    let r = acquire(json!({"holder": "h", "session": unknown})).await;
    let body = problem(r, StatusCode::CONFLICT, "session-lost").await;
    assert_eq!(body["field"], "session.id");
    let wrong = json!({"id": s["id"], "token": "0123456789abcdef0123456789abcdef"});
    let r = acquire(json!({"holder": "h", "session": wrong})).await;
    let body = problem(r, StatusCode::CONFLICT, "session-lost").await;
    assert_eq!(body["field"], "session.token");

    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    let closed = acquire(json!({"holder": "h", "session": claim(&s)})).await;
    problem(closed, StatusCode::CONFLICT, "session-lost").await;
    problem(
        app.get("/v1/locks/claimed").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
}

async fn bound_locks_show_their_session_and_a_close_frees_every_key_at_once() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    let keys = ["svc/a", "svc/b", "svc/c"];
    let mut fencing = Vec::new();
    for key in keys {
        let lease = must_bind(&app, key, &s).await;
        assert_eq!(lease["session"], s["id"]);
        assert_ne!(lease["token"], s["token"], "its own lease token");
        assert!(lease["expires_in_ms"].as_i64().unwrap() <= 60_000);
        fencing.push(lease["fencing_token"].as_i64().unwrap());
        let shown: Value = app
            .get(&format!("/v1/locks/{}", encode(key)))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(shown["session"], s["id"]);
        // Held: a grant with a TTL of its own is refused.
        problem(
            app.acquire(key, "other", 1_000).await,
            StatusCode::CONFLICT,
            "lock-held",
        )
        .await;
    }
    assert!(fencing.windows(2).all(|w| w[0] < w[1]));
    let shown: Value = show(&app, &s).await.json().await.unwrap();
    assert_eq!(shown["locks"], 3);

    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    for key in keys {
        app.must_acquire(key, "next", 1_000).await;
    }
}

async fn releasing_one_bound_lease_keeps_the_others() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    let a = must_bind(&app, "pair/a", &s).await;
    must_bind(&app, "pair/b", &s).await;
    let token = a["token"].as_str().unwrap();
    // Renewing a bound lease changes nothing: it lives by its session.
    let renewed = app.renew("pair/a", token).await;
    assert_eq!(renewed.status(), StatusCode::OK);
    assert_eq!(
        app.release("pair/a", token).await.status(),
        StatusCode::NO_CONTENT
    );
    app.assert_lease_lost("pair/a", token).await;
    assert_eq!(app.get("/v1/locks/pair%2Fb").await.status(), StatusCode::OK);
    let shown: Value = show(&app, &s).await.json().await.unwrap();
    assert_eq!(shown["locks"], 1);
}

async fn one_keep_alive_keeps_every_bound_lease_alive() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    for count in [1, 50] {
        let s = open(&app, 60_000).await;
        let keys: Vec<String> = (0..count).map(|i| format!("many{count}/{i}")).collect();
        for key in &keys {
            must_bind(&app, key, &s).await;
        }
        let path = format!("/v1/sessions/{}/renew", s["id"].as_str().unwrap());
        let renew = |ttl_ms: i64| app.post(&path, json!({"token": s["token"], "ttl_ms": ttl_ms}));
        // From here on the session lives 600 ms at a time, kept alive by
        // one request every 250 ms, for twice its TTL.
        assert_eq!(renew(600).await.status(), StatusCode::OK);
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            assert_eq!(renew(600).await.status(), StatusCode::OK);
        }
        // Every lease is still there, living by the session: read in one
        // request, right after a renewal, so a slow machine cannot let the
        // session lapse between reads.
        assert_eq!(renew(600).await.status(), StatusCode::OK);
        let prefix = encode(&format!("many{count}/"));
        let listed = app
            .get(&format!("/v1/locks?prefix={prefix}&limit=100"))
            .await;
        assert_eq!(listed.status(), StatusCode::OK);
        let listed: Value = listed.json().await.unwrap();
        let items = listed["items"].as_array().unwrap();
        let mut listed_keys: Vec<&str> = items.iter().map(|l| l["key"].as_str().unwrap()).collect();
        listed_keys.sort_unstable();
        let mut wanted: Vec<&str> = keys.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        assert_eq!(listed_keys, wanted);
        for lease in items {
            assert!(lease["expires_in_ms"].as_i64().unwrap() <= 600, "{lease}");
        }
        let shown: Value = show(&app, &s).await.json().await.unwrap();
        assert_eq!(shown["locks"], count);
        assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    }
}

async fn opening_with_an_idempotency_key_replays_the_live_session() {
    let app = spawn_app().await;
    let send = |holder: &str| {
        app.client
            .post(app.url("/v1/sessions"))
            .header("Idempotency-Key", "open-1")
            .json(&json!({"holder": holder, "ttl_ms": 30_000}))
            .send()
    };
    let first = send("controller").await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    let again = send("controller").await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["token"], first["token"]);
    let other = send("someone-else").await.unwrap();
    problem(
        other,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    // The token given again is the session's: it keeps it alive.
    let renew = format!("/v1/sessions/{}/renew", first["id"].as_str().unwrap());
    let r = app
        .client
        .post(app.url(&renew))
        .json(&json!({"token": again["token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

async fn a_session_token_and_idempotency_key_are_kept_only_as_digests() {
    let app = spawn_app().await;
    let mut tokens = Vec::new();
    for key in [Some("open-digest"), None] {
        let mut request = app.client.post(app.url("/v1/sessions"));
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        let r = request
            .json(&json!({"holder": "h", "ttl_ms": 30_000}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
        let s: Value = r.json().await.unwrap();
        tokens.push((
            s["id"].as_str().unwrap().to_owned(),
            s["token"].as_str().unwrap().to_owned(),
        ));
    }
    for (id, token) in &tokens {
        let query = format!("SELECT token FROM sessions WHERE id = '{id}'");
        let stored = crate::backend::texts(&app.db, &query).await;
        let digest = leasehold::token::digest(token);
        assert_eq!(stored, vec![digest.clone()], "the database holds a digest");
        // Whoever reads the database cannot use what it holds.
        let r = app
            .client
            .post(app.url(&format!("/v1/sessions/{id}/renew")))
            .json(&json!({"token": digest}))
            .send()
            .await
            .unwrap();
        problem(r, StatusCode::CONFLICT, "lease-lost").await;
    }
    let keys = crate::backend::texts(
        &app.db,
        "SELECT idempotency_key FROM sessions WHERE idempotency_key IS NOT NULL",
    )
    .await;
    assert_eq!(keys, vec![leasehold::token::digest("open-digest")]);
}

async fn a_session_holds_at_most_its_cap_of_leases() {
    let app = spawn_app_with(|c| c.max_session_leases = 2).await;
    let s = open(&app, 60_000).await;
    must_bind(&app, "cap/1", &s).await;
    must_bind(&app, "cap/2", &s).await;
    let body = problem(
        bind(&app, "cap/3", &s).await,
        StatusCode::CONFLICT,
        "session-full",
    )
    .await;
    assert_eq!(body["limit"], 2);
    problem(
        app.get("/v1/locks/cap%2F3").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
}

crate::harness::tests! {
    a_session_opens_renews_shows_and_closes,
    session_refusals_are_problems_naming_the_field,
    bad_claims_on_a_session_bind_nothing_and_name_the_field,
    bound_locks_show_their_session_and_a_close_frees_every_key_at_once,
    releasing_one_bound_lease_keeps_the_others,
    one_keep_alive_keeps_every_bound_lease_alive,
    opening_with_an_idempotency_key_replays_the_live_session,
    a_session_token_and_idempotency_key_are_kept_only_as_digests,
    a_session_holds_at_most_its_cap_of_leases,
}
