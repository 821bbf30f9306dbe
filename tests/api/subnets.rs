//! Subnet pools and reservations over real HTTP.

use std::collections::HashSet;
use std::time::Duration;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    ServerProcess, TestApp, problem, spawn_app, spawn_app_with, wait_until_ready,
};

async fn put_pool(app: &TestApp, name: &str, body: Value) -> reqwest::Response {
    app.client
        .put(app.url(&format!("/v1/pools/{name}")))
        .json(&body)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn must_pool(app: &TestApp, name: &str, cidr: &str) {
    let r = put_pool(app, name, json!({"cidr": cidr})).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
}

async fn reserve(app: &TestApp, pool: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/v1/pools/{pool}/reservations"), body)
        .await
}

pub(crate) async fn must_reserve(app: &TestApp, pool: &str, body: Value) -> Value {
    let r = reserve(app, pool, body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

fn path(r: &Value, action: &str) -> String {
    format!(
        "/v1/pools/{}/reservations/{}/{action}",
        r["pool"].as_str().unwrap(),
        r["id"].as_str().unwrap()
    )
}

async fn get_json(app: &TestApp, path: &str) -> Value {
    let r = app.get(path).await;
    assert_eq!(r.status(), StatusCode::OK, "GET {path}");
    r.json().await.unwrap()
}

async fn reserve_then_confirm_makes_an_allocation_without_expiry() {
    let app = spawn_app().await;
    must_pool(&app, "docker", "192.168.0.0/16").await;
    let r = must_reserve(
        &app,
        "docker",
        json!({"holder": "node-7", "prefix_len": 24, "metadata": {"net": "a"}}),
    )
    .await;
    assert_eq!(r["subnet"], "192.168.0.0/24");
    assert_eq!(r["prefix_len"], 24);
    assert_eq!(r["state"], "reserved");
    let left = r["expires_in_ms"].as_i64().unwrap();
    assert!(
        (59_000..=60_000).contains(&left),
        "the default TTL is 60 s, {left}"
    );
    assert!(r["id"].as_str().unwrap().starts_with("r_"));
    assert_eq!(r["token"].as_str().unwrap().len(), 32);
    let next = must_reserve(
        &app,
        "docker",
        json!({"holder": "node-8", "prefix_len": 24}),
    )
    .await;
    assert_eq!(
        next["subnet"], "192.168.1.0/24",
        "one size is handed out in address order"
    );

    let confirmed = app
        .post(&path(&r, "confirm"), json!({"token": r["token"]}))
        .await;
    assert_eq!(confirmed.status(), StatusCode::OK);
    let confirmed: Value = confirmed.json().await.unwrap();
    assert_eq!(confirmed["state"], "allocated");
    assert_eq!(confirmed["expires_at"], Value::Null);
    assert_eq!(confirmed["expires_in_ms"], Value::Null);
    assert_eq!(confirmed["fencing_token"], r["fencing_token"]);
    assert_eq!(confirmed["metadata"], json!({"net": "a"}));
    let again = app
        .post(&path(&r, "confirm"), json!({"token": r["token"]}))
        .await;
    assert_eq!(
        again.status(),
        StatusCode::OK,
        "confirming twice is idempotent"
    );
    let renewed = app
        .post(&path(&r, "renew"), json!({"token": r["token"]}))
        .await;
    assert_eq!(
        renewed.status(),
        StatusCode::OK,
        "renewing an allocation changes nothing"
    );
    assert_eq!(
        renewed.json::<Value>().await.unwrap()["expires_at"],
        Value::Null
    );
    let stranger = app
        .post(&path(&r, "confirm"), json!({"token": "0".repeat(32)}))
        .await;
    problem(stranger, StatusCode::CONFLICT, "lease-lost").await;

    let pool = get_json(&app, "/v1/pools/docker").await;
    assert_eq!(pool["reserved_count"], 1);
    assert_eq!(pool["allocated_count"], 1);
    assert_eq!(pool["total_addresses"], "65536");
    assert_eq!(pool["free_addresses"], "65024");
    assert_eq!(pool["largest_free"], "192.168.128.0/17");
}

async fn renew_extends_and_release_frees_the_subnet() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/24").await;
    let r = must_reserve(
        &app,
        "p",
        json!({"holder": "h", "prefix_len": 26, "ttl_ms": 1000}),
    )
    .await;
    let renewed = app
        .post(
            &path(&r, "renew"),
            json!({"token": r["token"], "ttl_ms": 30_000}),
        )
        .await;
    assert_eq!(renewed.status(), StatusCode::OK);
    let renewed: Value = renewed.json().await.unwrap();
    assert!((29_000..=30_000).contains(&renewed["expires_in_ms"].as_i64().unwrap()));
    assert_eq!(renewed["fencing_token"], r["fencing_token"]);
    assert!(renewed.get("token").is_none());
    let bad_ttl = app
        .post(
            &path(&r, "renew"),
            json!({"token": r["token"], "ttl_ms": 5}),
        )
        .await;
    problem(bad_ttl, StatusCode::BAD_REQUEST, "invalid-request").await;

    let released = app
        .post(&path(&r, "release"), json!({"token": r["token"]}))
        .await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    for action in ["release", "renew", "confirm"] {
        let again = app
            .post(&path(&r, action), json!({"token": r["token"]}))
            .await;
        problem(again, StatusCode::CONFLICT, "lease-lost").await;
    }
    let pool = get_json(&app, "/v1/pools/p").await;
    assert_eq!(pool["free_addresses"], "256");
    assert_eq!(
        pool["largest_free"], "10.0.0.0/24",
        "freed blocks merge back"
    );
    let again = must_reserve(&app, "p", json!({"holder": "h", "prefix_len": 26})).await;
    assert_eq!(again["subnet"], "10.0.0.0/26");

    let gone = app
        .delete(&format!(
            "/v1/pools/p/reservations/{}",
            again["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(gone.status(), StatusCode::NO_CONTENT);
    let twice = app
        .delete(&format!(
            "/v1/pools/p/reservations/{}",
            again["id"].as_str().unwrap()
        ))
        .await;
    problem(twice, StatusCode::NOT_FOUND, "reservation-not-found").await;
}

async fn bad_requests_are_refused_naming_the_field() {
    let app = spawn_app().await;
    let bad_name = put_pool(&app, "Bad_Name", json!({"cidr": "10.0.0.0/8"})).await;
    assert_eq!(
        problem(bad_name, StatusCode::BAD_REQUEST, "invalid-request").await["field"],
        "pool"
    );
    let host_bits = put_pool(&app, "p", json!({"cidr": "10.1.0.0/8"})).await;
    let body = problem(host_bits, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(
        (body["field"].as_str(), body["hint"].as_str()),
        (Some("cidr"), Some("10.0.0.0/8"))
    );
    let unknown = put_pool(&app, "p", json!({"cidr": "10.0.0.0/8", "size": 3})).await;
    problem(unknown, StatusCode::BAD_REQUEST, "invalid-request").await;
    must_pool(&app, "p", "192.168.0.0/16").await;

    let cases = [
        (json!({"holder": "h"}), "prefix_len"),
        (
            json!({"holder": "h", "prefix_len": 24, "subnet": "192.168.1.0/24"}),
            "subnet",
        ),
        (json!({"holder": "h", "prefix_len": 8}), "prefix_len"),
        (json!({"holder": "h", "prefix_len": 33}), "prefix_len"),
        (json!({"holder": "h", "subnet": "2001:db8::/64"}), "subnet"),
        (json!({"holder": "h", "subnet": "10.0.0.0/24"}), "subnet"),
        (
            json!({"holder": "h", "prefix_len": 24, "exclude": ["10.0.0.0/8", "nope"]}),
            "exclude[1]",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "ttl_ms": 50}),
            "ttl_ms",
        ),
        (json!({"holder": "", "prefix_len": 24}), "holder"),
    ];
    for (body, field) in cases {
        let r = reserve(&app, "p", body.clone()).await;
        let p = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(p["field"], field, "{body}");
    }
    let r = reserve(
        &app,
        "p",
        json!({"holder": "h", "subnet": "192.168.1.5/24"}),
    )
    .await;
    let p = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(p["hint"], "192.168.1.0/24");
}

async fn an_unknown_pool_or_reservation_is_not_found_on_every_route() {
    let app = spawn_app().await;
    let r_path = "/v1/pools/nope/reservations/r_0000000000000001";
    problem(
        app.get("/v1/pools/nope").await,
        StatusCode::NOT_FOUND,
        "pool-not-found",
    )
    .await;
    problem(
        app.delete("/v1/pools/nope").await,
        StatusCode::NOT_FOUND,
        "pool-not-found",
    )
    .await;
    let r = reserve(&app, "nope", json!({"holder": "h", "prefix_len": 24})).await;
    problem(r, StatusCode::NOT_FOUND, "pool-not-found").await;
    problem(
        app.get("/v1/pools/nope/reservations").await,
        StatusCode::NOT_FOUND,
        "pool-not-found",
    )
    .await;
    problem(
        app.get(r_path).await,
        StatusCode::NOT_FOUND,
        "pool-not-found",
    )
    .await;
    problem(
        app.delete(r_path).await,
        StatusCode::NOT_FOUND,
        "pool-not-found",
    )
    .await;
    for action in ["renew", "confirm", "release"] {
        let r = app
            .post(&format!("{r_path}/{action}"), json!({"token": "t"}))
            .await;
        problem(r, StatusCode::NOT_FOUND, "pool-not-found").await;
    }
    must_pool(&app, "p", "10.0.0.0/8").await;
    for id in ["r_0000000000000001", "garbage"] {
        let r = app.get(&format!("/v1/pools/p/reservations/{id}")).await;
        problem(r, StatusCode::NOT_FOUND, "reservation-not-found").await;
    }
}

async fn an_exhausted_pool_says_what_is_left_and_when_to_retry() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/23").await;
    let first = must_reserve(
        &app,
        "p",
        json!({"holder": "h", "prefix_len": 24, "ttl_ms": 5000}),
    )
    .await;
    must_reserve(&app, "p", json!({"holder": "h", "prefix_len": 25})).await;
    let r = reserve(&app, "p", json!({"holder": "h", "prefix_len": 24})).await;
    assert_eq!(r.headers()["retry-after"], "5");
    let p = problem(r, StatusCode::CONFLICT, "pool-exhausted").await;
    assert_eq!(p["largest_free"], "10.0.1.128/25");
    let excluded = reserve(
        &app,
        "p",
        json!({"holder": "h", "prefix_len": 26, "exclude": ["10.0.1.128/26"]}),
    )
    .await;
    assert_eq!(excluded.status(), StatusCode::CREATED);
    let got: Value = excluded.json().await.unwrap();
    assert_eq!(
        got["subnet"], "10.0.1.192/26",
        "excluded networks are never granted"
    );

    let taken = reserve(&app, "p", json!({"holder": "h", "subnet": "10.0.0.128/25"})).await;
    assert_eq!(taken.headers()["retry-after"], "5");
    let p = problem(taken, StatusCode::CONFLICT, "subnet-unavailable").await;
    assert_eq!(p["conflicts"].as_array().unwrap().len(), 1);
    let c = &p["conflicts"][0];
    assert_eq!(
        (c["id"].clone(), c["subnet"].clone()),
        (first["id"].clone(), json!("10.0.0.0/24"))
    );
    assert_eq!(
        (c["holder"].as_str(), c["state"].as_str()),
        (Some("h"), Some("reserved"))
    );
    assert!(c["expires_at"].is_string());
    let wide = reserve(&app, "p", json!({"holder": "h", "subnet": "10.0.0.0/23"})).await;
    let p = problem(wide, StatusCode::CONFLICT, "subnet-unavailable").await;
    assert_eq!(p["conflicts"].as_array().unwrap().len(), 3);
}

async fn a_named_free_subnet_is_granted_and_an_idempotent_retry_replays_it() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let send = |holder: &'static str| {
        app.client
            .post(app.url("/v1/pools/p/reservations"))
            .header("Idempotency-Key", "net-create-1")
            .json(&json!({"holder": holder, "subnet": "10.0.42.0/24"}))
            .send()
    };
    let first = send("h").await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["subnet"], "10.0.42.0/24");
    let replay = send("h").await.unwrap();
    assert_eq!(replay.status(), StatusCode::OK);
    let replay: Value = replay.json().await.unwrap();
    assert_eq!(
        (replay["id"].clone(), replay["token"].clone()),
        (first["id"].clone(), first["token"].clone())
    );
    problem(
        send("other").await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    let next = must_reserve(&app, "p", json!({"holder": "h", "prefix_len": 24})).await;
    assert_eq!(
        next["subnet"], "10.0.43.0/24",
        "best fit: the smallest free block left by the split"
    );
}

async fn sixty_four_reserve_a_24(
    client: &reqwest::Client,
    address: &str,
) -> Vec<(StatusCode, Value)> {
    let requests = (0..64).map(|i| async move {
        let r = client
            .post(format!("{address}/v1/pools/p/reservations"))
            .json(&json!({"holder": format!("worker-{i}"), "prefix_len": 24, "ttl_ms": 600_000}))
            .send()
            .await
            .unwrap();
        (r.status(), r.json::<Value>().await.unwrap())
    });
    join_all(requests).await
}

pub(crate) fn exactly_sixteen_disjoint(answers: &[(StatusCode, Value)]) -> HashSet<String> {
    let granted: HashSet<String> = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .map(|(_, b)| b["subnet"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(granted.len(), 16, "distinct /24s of a /20");
    assert_eq!(
        answers
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .count(),
        16
    );
    for (status, body) in answers.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
        assert_eq!(*status, StatusCode::CONFLICT);
        assert_eq!(body["type"], "/problems/pool-exhausted");
    }
    granted
}

async fn sixty_four_concurrent_reserves_in_a_20_grant_exactly_sixteen() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.20.0.0/20").await;
    let answers = sixty_four_reserve_a_24(&app.client, &app.address).await;
    let granted = exactly_sixteen_disjoint(&answers);
    let expected: HashSet<String> = (0..16).map(|i| format!("10.20.{i}.0/24")).collect();
    assert_eq!(granted, expected);
}

async fn grants_survive_a_kill_and_restart_of_the_real_binary() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    let r = client
        .put(format!("{}/v1/pools/p", server.address))
        .json(&json!({"cidr": "10.20.0.0/20"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let granted =
        exactly_sixteen_disjoint(&sixty_four_reserve_a_24(&client, &server.address).await);
    server.kill();

    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    let list: Value = client
        .get(format!(
            "{}/v1/pools/p/reservations?limit=100",
            server.address
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let after: HashSet<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subnet"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(after, granted);
    let r = client
        .post(format!("{}/v1/pools/p/reservations", server.address))
        .json(&json!({"holder": "late", "prefix_len": 24}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
}

async fn an_expired_subnet_is_granted_again_before_the_reaper_runs() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3600)).await;
    must_pool(&app, "p", "10.0.0.0/24").await;
    let old = must_reserve(
        &app,
        "p",
        json!({"holder": "a", "prefix_len": 24, "ttl_ms": 100}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let pool = get_json(&app, "/v1/pools/p").await;
    assert_eq!(
        (
            pool["reserved_count"].clone(),
            pool["free_addresses"].clone()
        ),
        (json!(0), json!("256"))
    );
    let new = must_reserve(&app, "p", json!({"holder": "b", "prefix_len": 24})).await;
    assert_eq!(new["subnet"], old["subnet"]);
    assert!(new["fencing_token"].as_i64() > old["fencing_token"].as_i64());
    let late = app
        .post(&path(&old, "confirm"), json!({"token": old["token"]}))
        .await;
    problem(late, StatusCode::CONFLICT, "lease-lost").await;
}

async fn confirming_after_expiry_is_lease_lost_and_the_reaper_frees_the_block() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3600)).await;
    must_pool(&app, "p", "10.0.0.0/24").await;
    let r = must_reserve(
        &app,
        "p",
        json!({"holder": "a", "prefix_len": 25, "ttl_ms": 100}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    problem(
        app.post(&path(&r, "confirm"), json!({"token": r["token"]}))
            .await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
    // The server's own first pass, at its start, may be the one that meets
    // it on a busy machine: the metric counts either.
    leasehold::reaper::reap_once(&app.leases, 10).await.unwrap();
    let pool = get_json(&app, "/v1/pools/p").await;
    assert_eq!(pool["largest_free"], "10.0.0.0/24");
    let metrics = app.scrape().await.text().await.unwrap();
    assert!(metrics.contains("leasehold_reaped_reservations_total 1"));
    assert!(metrics.contains("leasehold_reservation_grants_total 1"));
}

async fn a_64_comes_out_of_an_ipv6_32_with_exact_counts() {
    let app = spawn_app().await;
    must_pool(&app, "v6", "2001:db8::/32").await;
    let r = must_reserve(
        &app,
        "v6",
        json!({"holder": "h", "prefix_len": 64, "exclude": ["10.0.0.0/8"]}),
    )
    .await;
    assert_eq!(r["subnet"], "2001:db8::/64");
    let v4 = reserve(&app, "v6", json!({"holder": "h", "subnet": "10.0.0.0/24"})).await;
    problem(v4, StatusCode::BAD_REQUEST, "invalid-request").await;
    let pool = get_json(&app, "/v1/pools/v6").await;
    assert_eq!(pool["family"], "ipv6");
    assert_eq!(pool["total_addresses"], "79228162514264337593543950336");
    assert_eq!(pool["free_addresses"], "79228162495817593519834398720");
    assert_eq!(pool["largest_free"], "2001:db8:8000::/33");
    must_pool(&app, "all", "::/0").await;
    let all = get_json(&app, "/v1/pools/all").await;
    assert_eq!(
        all["free_addresses"],
        "340282366920938463463374607431768211456"
    );
}

async fn pools_conflict_when_redefined_and_cannot_be_deleted_in_use() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let same = put_pool(&app, "p", json!({"cidr": "10.0.0.0/16", "labels": {}})).await;
    assert_eq!(same.status(), StatusCode::OK);
    let other = put_pool(&app, "p", json!({"cidr": "10.0.0.0/8"})).await;
    let p = problem(other, StatusCode::CONFLICT, "pool-conflict").await;
    assert_eq!(
        (p["differs"].clone(), p["cidr"].clone()),
        (json!(["cidr"]), json!("10.0.0.0/16"))
    );
    let labels = put_pool(
        &app,
        "p",
        json!({"cidr": "10.0.0.0/16", "labels": {"env": "prod"}}),
    )
    .await;
    assert_eq!(
        problem(labels, StatusCode::CONFLICT, "pool-conflict").await["differs"],
        json!(["labels"])
    );
    must_pool(&app, "q", "10.0.0.0/16").await;

    let r = must_reserve(&app, "p", json!({"holder": "h", "prefix_len": 24})).await;
    let in_q = must_reserve(
        &app,
        "q",
        json!({"holder": "h", "prefix_len": 24, "ttl_ms": 100}),
    )
    .await;
    assert_eq!(
        in_q["subnet"], r["subnet"],
        "pools are independent namespaces"
    );
    let busy = app.delete("/v1/pools/p").await;
    assert!(busy.headers().contains_key("retry-after"));
    assert_eq!(
        problem(busy, StatusCode::CONFLICT, "pool-in-use").await["reserved_count"],
        1
    );
    app.post(&path(&r, "release"), json!({"token": r["token"]}))
        .await;
    assert_eq!(
        app.delete("/v1/pools/p").await.status(),
        StatusCode::NO_CONTENT
    );
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(
        app.delete("/v1/pools/q").await.status(),
        StatusCode::NO_CONTENT,
        "expired ones do not count"
    );
    let list = get_json(&app, "/v1/pools").await;
    assert_eq!(list["items"], json!([]));
    assert_eq!(list["next_cursor"], json!(null));
    assert!(list["revision"].as_i64().is_some(), "{list}");
}

async fn lists_page_through_pools_and_reservations_without_tokens() {
    let app = spawn_app().await;
    for name in ["a", "b", "c"] {
        must_pool(&app, name, "10.0.0.0/16").await;
    }
    let page = get_json(&app, "/v1/pools?limit=2").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    let next = page["next_cursor"].as_str().unwrap();
    let rest = get_json(&app, &format!("/v1/pools?limit=2&cursor={next}")).await;
    assert_eq!(
        (
            rest["items"][0]["name"].clone(),
            rest["next_cursor"].clone()
        ),
        (json!("c"), Value::Null)
    );

    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(
            must_reserve(&app, "a", json!({"holder": "h", "prefix_len": 24})).await["id"].clone(),
        );
    }
    let first = get_json(&app, "/v1/pools/a/reservations?limit=2").await;
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = get_json(
        &app,
        &format!("/v1/pools/a/reservations?limit=2&cursor={cursor}"),
    )
    .await;
    let listed: Vec<Value> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["items"].as_array().unwrap())
        .cloned()
        .collect();
    assert_eq!(
        listed.iter().map(|r| r["id"].clone()).collect::<Vec<_>>(),
        ids
    );
    assert!(listed.iter().all(|r| r.get("token").is_none()));
    let one = get_json(
        &app,
        &format!("/v1/pools/a/reservations/{}", ids[0].as_str().unwrap()),
    )
    .await;
    assert!(one.get("token").is_none());
    assert_eq!(one["subnet"], "10.0.0.0/24");
    let bad = app.get("/v1/pools/a/reservations?cursor=zz").await;
    problem(bad, StatusCode::BAD_REQUEST, "invalid-request").await;
}

async fn fencing_tokens_are_shared_with_locks_and_strictly_increase() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let mut seen = Vec::new();
    for i in 0..3 {
        seen.push(must_reserve(&app, "p", json!({"holder": "h", "prefix_len": 24})).await["fencing_token"].as_i64().unwrap());
        seen.push(
            app.must_acquire(&format!("k{i}"), "h", 10_000).await["fencing_token"]
                .as_i64()
                .unwrap(),
        );
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
}

crate::harness::tests! {
    reserve_then_confirm_makes_an_allocation_without_expiry,
    renew_extends_and_release_frees_the_subnet,
    bad_requests_are_refused_naming_the_field,
    an_unknown_pool_or_reservation_is_not_found_on_every_route,
    an_exhausted_pool_says_what_is_left_and_when_to_retry,
    a_named_free_subnet_is_granted_and_an_idempotent_retry_replays_it,
    sixty_four_concurrent_reserves_in_a_20_grant_exactly_sixteen,
    grants_survive_a_kill_and_restart_of_the_real_binary,
    an_expired_subnet_is_granted_again_before_the_reaper_runs,
    confirming_after_expiry_is_lease_lost_and_the_reaper_frees_the_block,
    a_64_comes_out_of_an_ipv6_32_with_exact_counts,
    pools_conflict_when_redefined_and_cannot_be_deleted_in_use,
    lists_page_through_pools_and_reservations_without_tokens,
    fencing_tokens_are_shared_with_locks_and_strictly_increase,
}
