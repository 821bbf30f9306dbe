//! Groups and their members over real HTTP: every route, status and problem
//! type; joins racing for one member id and deletes racing joins; members
//! ending with their session or at their TTL, announced; list, then watch.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::events::page;
use crate::helpers::{TestApp, problem, spawn_app, spawn_app_with};
use crate::sessions::{close, open};

async fn put(app: &TestApp, path: &str, body: Option<Value>) -> Response {
    let request = app.client.put(app.url(path));
    let request = match body {
        Some(b) => request.json(&b),
        None => request,
    };
    request.send().await.expect("request sent")
}

async fn create(app: &TestApp, group: &str) {
    let r = put(app, &format!("/v1/groups/{group}"), None).await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn join(app: &TestApp, group: &str, member: &str, body: Value) -> Response {
    put(
        app,
        &format!("/v1/groups/{group}/members/{member}"),
        Some(body),
    )
    .await
}

async fn must_join(app: &TestApp, group: &str, member: &str, ttl_ms: i64) -> Value {
    let r = join(
        app,
        group,
        member,
        json!({"ttl_ms": ttl_ms, "capabilities": {"n": 1}}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

/// The revision a listing of the group's members reflects.
async fn revision(app: &TestApp, group: &str) -> i64 {
    let listed: Value = app
        .get(&format!("/v1/groups/{group}/members"))
        .await
        .json()
        .await
        .unwrap();
    listed["revision"].as_i64().unwrap()
}

fn session_ref(s: &Value) -> Value {
    json!({"id": s["id"], "token": s["token"]})
}

/// The events of `group` after `since`, waiting until there are `count`.
async fn group_events(app: &TestApp, group: &str, since: i64, count: usize) -> Vec<Value> {
    let mut events = Vec::new();
    let mut since = since;
    for _ in 0..20 {
        if events.len() >= count {
            break;
        }
        let query = format!("?group={group}&since={since}&wait_ms=500&limit=1000");
        let p = page(app, &query).await;
        since = p["next_revision"].as_i64().unwrap();
        events.extend(p["items"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(events.len(), count, "{events:#?}");
    events
}

fn kinds(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

async fn a_group_is_created_once_inspected_and_listed() {
    let app = spawn_app().await;
    let r = put(
        &app,
        "/v1/groups/team%2Fa",
        Some(json!({"metadata": {"k": "v"}})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(r.headers()["location"], "/v1/groups/team%2Fa");
    let again = put(&app, "/v1/groups/team%2Fa", None).await;
    assert_eq!(again.status(), StatusCode::OK);
    let body: Value = again.json().await.unwrap();
    assert_eq!(body["metadata"], json!({"k": "v"}));
    let shown: Value = app.get("/v1/groups/team%2Fa").await.json().await.unwrap();
    assert_eq!(shown["name"], "team/a");
    assert_eq!(shown["members"], 0);
    assert!(shown["created_at"].as_str().is_some());
    create(&app, "team%2Fb").await;
    create(&app, "other").await;
    let listed: Value = app
        .get("/v1/groups?prefix=team%2F&limit=1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["items"][0]["name"], "team/a");
    assert!(listed["revision"].as_i64().unwrap() >= 3);
    let cursor = listed["next_cursor"].as_str().unwrap();
    let next: Value = app
        .get(&format!(
            "/v1/groups?prefix=team%2F&limit=1&cursor={cursor}"
        ))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(next["items"][0]["name"], "team/b");
    assert_eq!(next["next_cursor"], Value::Null);
    problem(
        app.get("/v1/groups/missing").await,
        StatusCode::NOT_FOUND,
        "group-not-found",
    )
    .await;
    let created = page(&app, "?group=team%2Fa&since=0").await;
    assert_eq!(created["items"][0]["type"], "group.created");
    assert_eq!(created["items"].as_array().unwrap().len(), 1);
}

async fn a_member_joins_updates_renews_and_leaves() {
    let app = spawn_app().await;
    create(&app, "g").await;
    let start = revision(&app, "g").await;
    let joined = must_join(&app, "g", "n1", 30_000).await;
    let token = joined["token"].as_str().unwrap();
    assert_eq!(joined["capabilities"], json!({"n": 1}));
    // Another holder (no token, or another) cannot take the id.
    for body in [
        json!({"ttl_ms": 1_000}),
        json!({"ttl_ms": 1_000, "token": "0".repeat(32)}),
    ] {
        problem(
            join(&app, "g", "n1", body).await,
            StatusCode::CONFLICT,
            "member-exists",
        )
        .await;
    }
    // The same holder replaces its capabilities: 200.
    let again = join(
        &app,
        "g",
        "n1",
        json!({"ttl_ms": 30_000, "token": token, "capabilities": [2]}),
    )
    .await;
    assert_eq!(again.status(), StatusCode::OK);
    let shown: Value = app
        .get("/v1/groups/g/members/n1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["capabilities"], json!([2]));
    assert!(shown.get("token").is_none());
    // A plain renew is no event; one with capabilities is one update.
    let renew = |body: Value| app.post("/v1/groups/g/members/n1/renew", body);
    assert_eq!(
        renew(json!({"token": token})).await.status(),
        StatusCode::OK
    );
    let r = renew(json!({"token": token, "ttl_ms": 20_000, "capabilities": "x"})).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["capabilities"], "x");
    problem(
        renew(json!({"token": "0".repeat(32)})).await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
    let listed: Value = app.get("/v1/groups/g/members").await.json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed["items"][0]["member"], "n1");
    let leave = |body: Value| app.post("/v1/groups/g/members/n1/leave", body);
    assert_eq!(
        leave(json!({"token": token})).await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        leave(json!({"token": token})).await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
    problem(
        app.get("/v1/groups/g/members/n1").await,
        StatusCode::NOT_FOUND,
        "member-not-found",
    )
    .await;
    let events = group_events(&app, "g", start, 4).await;
    let expected = [
        ("group.member_joined", ""),
        ("group.member_updated", ""),
        ("group.member_updated", ""),
        ("group.member_left", "left"),
    ]
    .map(|(t, r)| (t.to_owned(), r.to_owned()));
    assert_eq!(kinds(&events), expected);
    assert_eq!(events[0]["member"], "n1");
}

async fn joining_a_missing_group_is_404_and_bad_input_names_the_field() {
    let app = spawn_app_with(|c| c.max_capabilities_bytes = 64).await;
    problem(
        join(&app, "nope", "m", json!({"ttl_ms": 1_000})).await,
        StatusCode::NOT_FOUND,
        "group-not-found",
    )
    .await;
    create(&app, "g").await;
    let cases = [
        (
            json!({"ttl_ms": 1_000, "capabilities": "x".repeat(100)}),
            "capabilities",
        ),
        (json!({"capabilities": 1}), "ttl_ms"),
        (json!({"ttl_ms": 5}), "ttl_ms"),
        (json!({"ttl_ms": 1_000, "nonsense": 1}), "nonsense"),
    ];
    for (body, field) in cases {
        let p = problem(
            join(&app, "g", "m", body.clone()).await,
            StatusCode::BAD_REQUEST,
            "invalid-request",
        )
        .await;
        assert_eq!(p["field"], field, "{body}: {p}");
        if field == "capabilities" {
            assert!(p["detail"].as_str().unwrap().contains("64"), "{p}");
        }
    }
    let long = "k".repeat(300);
    let p = problem(
        join(&app, "g", &long, json!({"ttl_ms": 1_000})).await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(p["field"], "member");
    let p = problem(
        put(&app, &format!("/v1/groups/{long}"), None).await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(p["field"], "group");
    // Nothing was half-written.
    let listed: Value = app.get("/v1/groups/g/members").await.json().await.unwrap();
    assert_eq!(listed["items"], json!([]));
}

async fn members_end_with_their_session_closed_or_expired() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    create(&app, "g").await;
    let start = revision(&app, "g").await;
    let closed = open(&app, 60_000).await;
    let r = join(
        &app,
        "g",
        "a",
        json!({"session": session_ref(&closed), "capabilities": 1}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.unwrap();
    assert!(body.get("token").is_none(), "{body}");
    assert_eq!(body["session"], closed["id"]);
    // The same session joining again replaces its capabilities.
    let r = join(
        &app,
        "g",
        "a",
        json!({"session": session_ref(&closed), "capabilities": 2}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    // Inspecting the session counts its memberships with its other leases.
    let shown: Value = app
        .get(&format!("/v1/sessions/{}", closed["id"].as_str().unwrap()))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["members"], 1, "{shown}");
    assert_eq!(shown["locks"], 0, "{shown}");
    let other = open(&app, 60_000).await;
    problem(
        join(&app, "g", "a", json!({"session": session_ref(&other)})).await,
        StatusCode::CONFLICT,
        "member-exists",
    )
    .await;
    let lost = json!({"session": {"id": closed["id"], "token": "0".repeat(32)}});
    problem(
        join(&app, "g", "b", lost).await,
        StatusCode::CONFLICT,
        "session-lost",
    )
    .await;
    // A member of `other` leaves by its session; a wrong one is lease-lost.
    let r = join(&app, "g", "d", json!({"session": session_ref(&other)})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let leave = |body: Value| app.post("/v1/groups/g/members/d/leave", body);
    let wrong = json!({"session": session_ref(&closed)});
    problem(leave(wrong).await, StatusCode::CONFLICT, "lease-lost").await;
    let right = json!({"session": session_ref(&other)});
    assert_eq!(leave(right).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(close(&app, &closed).await.status(), StatusCode::NO_CONTENT);
    let lapsing = open(&app, 300).await;
    let r = join(&app, "g", "c", json!({"session": session_ref(&lapsing)})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Absent at once, before the reaper has run.
    problem(
        app.get("/v1/groups/g/members/c").await,
        StatusCode::NOT_FOUND,
        "member-not-found",
    )
    .await;
    leasehold::reaper::reap_once(&app.leases, 100)
        .await
        .unwrap();
    let events = group_events(&app, "g", start, 7).await;
    let left: Vec<_> = kinds(&events)
        .into_iter()
        .filter(|(t, _)| t == "group.member_left")
        .collect();
    assert_eq!(
        left,
        [
            ("group.member_left".to_owned(), "left".to_owned()),
            ("group.member_left".to_owned(), "session_closed".to_owned()),
            ("group.member_left".to_owned(), "session_expired".to_owned()),
        ]
    );
}

async fn a_member_expires_at_its_ttl_announced_by_the_reaper() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    create(&app, "g").await;
    let start = revision(&app, "g").await;
    must_join(&app, "g", "short", 150).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    let listed: Value = app.get("/v1/groups/g/members").await.json().await.unwrap();
    assert_eq!(listed["items"], json!([]));
    let report = leasehold::reaper::reap_once(&app.leases, 100)
        .await
        .unwrap();
    assert_eq!(report.members_removed, 1);
    let events = group_events(&app, "g", start, 2).await;
    assert_eq!(events[1]["type"], "group.member_left");
    assert_eq!(events[1]["reason"], "expired");
    // The id is free again.
    must_join(&app, "g", "short", 1_000).await;
}

async fn a_group_with_members_is_not_deleted_until_they_are_removed() {
    let app = spawn_app().await;
    create(&app, "g").await;
    must_join(&app, "g", "m", 30_000).await;
    let p = problem(
        app.delete("/v1/groups/g").await,
        StatusCode::CONFLICT,
        "group-not-empty",
    )
    .await;
    assert_eq!(p["members"], 1);
    assert_eq!(
        app.delete("/v1/groups/g/members/m").await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        app.delete("/v1/groups/g/members/m").await,
        StatusCode::NOT_FOUND,
        "member-not-found",
    )
    .await;
    assert_eq!(
        app.delete("/v1/groups/g").await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        app.delete("/v1/groups/g").await,
        StatusCode::NOT_FOUND,
        "group-not-found",
    )
    .await;
    problem(
        app.get("/v1/groups/g/members").await,
        StatusCode::NOT_FOUND,
        "group-not-found",
    )
    .await;
    let events = group_events(&app, "g", 0, 4).await;
    let seen = kinds(&events);
    assert_eq!(seen[2], ("group.member_left".into(), "removed".into()));
    assert_eq!(seen[3].0, "group.deleted");
}

async fn racing_joins_of_one_member_id_admit_exactly_one() {
    let app = spawn_app().await;
    create(&app, "race").await;
    for round in 0..5 {
        let tasks: Vec<_> = (0..12)
            .map(|_| {
                let (client, url) = (
                    app.client.clone(),
                    app.url(&format!("/v1/groups/race/members/m{round}")),
                );
                tokio::spawn(async move {
                    client
                        .put(url)
                        .json(&json!({"ttl_ms": 30_000}))
                        .send()
                        .await
                        .unwrap()
                        .status()
                })
            })
            .collect();
        let mut created = 0;
        for t in tasks {
            match t.await.unwrap() {
                StatusCode::CREATED => created += 1,
                StatusCode::CONFLICT => {}
                other => panic!("a racing join answered {other}"),
            }
        }
        assert_eq!(created, 1, "round {round}");
    }
}

async fn deletes_racing_joins_never_leave_a_member_in_a_deleted_group() {
    let app = spawn_app().await;
    for round in 0..8 {
        let group = format!("dr{round}");
        create(&app, &group).await;
        let joins: Vec<_> = (0..6)
            .map(|i| {
                let (client, url) = (
                    app.client.clone(),
                    app.url(&format!("/v1/groups/{group}/members/m{i}")),
                );
                tokio::spawn(async move {
                    client
                        .put(url)
                        .json(&json!({"ttl_ms": 30_000}))
                        .send()
                        .await
                        .unwrap()
                        .status()
                })
            })
            .collect();
        let deleted = app.delete(&format!("/v1/groups/{group}")).await.status();
        let mut joined = 0;
        for j in joins {
            match j.await.unwrap() {
                StatusCode::CREATED => joined += 1,
                StatusCode::NOT_FOUND => {}
                other => panic!("a join answered {other}"),
            }
        }
        let shown = app.get(&format!("/v1/groups/{group}")).await;
        match deleted {
            StatusCode::NO_CONTENT => {
                assert_eq!(shown.status(), StatusCode::NOT_FOUND);
                // Whatever joined before the delete was refused it.
                assert_eq!(joined, 0, "round {round}");
                let r = join(&app, &group, "late", json!({"ttl_ms": 1_000})).await;
                problem(r, StatusCode::NOT_FOUND, "group-not-found").await;
            }
            StatusCode::CONFLICT => {
                let body: Value = shown.json().await.unwrap();
                assert!(body["members"].as_u64().unwrap() >= 1, "round {round}");
            }
            other => panic!("the delete answered {other}"),
        }
    }
}

async fn a_token_touches_groups_within_its_prefixes_only() {
    use crate::auth::{ADMIN, CI, send, spawn_secured};
    let app = spawn_secured().await;
    assert_eq!(
        send(&app, ADMIN, "PUT", "/v1/groups/db", None)
            .await
            .status(),
        StatusCode::CREATED
    );
    assert_eq!(
        send(&app, CI, "PUT", "/v1/groups/ci%2Fw", None)
            .await
            .status(),
        StatusCode::CREATED
    );
    for (method, path, body) in [
        ("PUT", "/v1/groups/db", None),
        ("GET", "/v1/groups/db", None),
        (
            "PUT",
            "/v1/groups/db/members/m",
            Some(json!({"ttl_ms": 1_000})),
        ),
        ("GET", "/v1/groups/db/members", None),
    ] {
        let r = send(&app, CI, method, path, body).await;
        problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    }
    let listed: Value = send(&app, CI, "GET", "/v1/groups", None)
        .await
        .json()
        .await
        .unwrap();
    let names: Vec<_> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].clone())
        .collect();
    assert_eq!(names, [json!("ci/w")]);
    // Deleting another token's group needs an admin; its creator may
    // (`group_quota.rs`).
    assert_eq!(
        send(&app, ADMIN, "PUT", "/v1/groups/ci%2Fadmins", None)
            .await
            .status(),
        StatusCode::CREATED
    );
    problem(
        send(&app, CI, "DELETE", "/v1/groups/ci%2Fadmins", None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
}

/// Lists a group's members, then watches from the page's revision while
/// writers keep joining and leaving: replaying the events onto the listing
/// gives exactly the members live at the end, with nothing missed or twice.
async fn list_then_watch_misses_nothing_and_sees_nothing_twice() {
    let app = spawn_app().await;
    create(&app, "lw").await;
    for i in 0..20 {
        must_join(&app, "lw", &format!("m{i:02}"), 60_000).await;
    }
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (client, base) = (app.client.clone(), app.url("/v1/groups/lw/members"));
            tokio::spawn(async move {
                for i in 0..25 {
                    let url = format!("{base}/w{w}-{i}");
                    let r = client
                        .put(&url)
                        .json(&json!({"ttl_ms": 60_000}))
                        .send()
                        .await
                        .unwrap();
                    let body: Value = r.json().await.unwrap();
                    if i % 2 == 0 {
                        let leave = format!("{url}/leave");
                        client
                            .post(leave)
                            .json(&json!({"token": body["token"]}))
                            .send()
                            .await
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(30)).await;
    let listed: Value = app
        .get("/v1/groups/lw/members?limit=1000")
        .await
        .json()
        .await
        .unwrap();
    let revision = listed["revision"].as_i64().unwrap();
    let mut members: BTreeSet<String> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["member"].as_str().unwrap().to_owned())
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let end: Value = app
        .get("/v1/groups/lw/members?limit=1000")
        .await
        .json()
        .await
        .unwrap();
    let end_revision = end["revision"].as_i64().unwrap();
    let mut since = revision;
    while since < end_revision {
        let p = page(&app, &format!("?group=lw&since={since}&limit=1000")).await;
        for e in p["items"].as_array().unwrap() {
            let m = e["member"].as_str().unwrap().to_owned();
            match e["type"].as_str().unwrap() {
                "group.member_joined" => assert!(members.insert(m.clone()), "{m} joined twice"),
                "group.member_left" => assert!(members.remove(&m), "{m} left unseen"),
                other => panic!("unexpected {other}"),
            }
            if e["revision"].as_i64().unwrap() >= end_revision {
                break;
            }
        }
        since = p["next_revision"].as_i64().unwrap();
    }
    let live: BTreeSet<String> = end["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["member"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(members, live);
}

/// A renew that carries metadata replaces it in its own transaction and is
/// one `*.updated` event; a plain renew is none.
async fn a_renew_with_metadata_is_announced_as_one_update() {
    let app = spawn_app().await;
    let held = app.must_acquire("meta", "h", 30_000).await;
    let token = held["token"].as_str().unwrap();
    let r = put(&app, "/v1/pools/p", Some(json!({"cidr": "10.0.0.0/16"}))).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let reserved: Value = app
        .post(
            "/v1/pools/p/reservations",
            json!({"holder": "h", "prefix_len": 24, "ttl_ms": 30_000}),
        )
        .await
        .json()
        .await
        .unwrap();
    let listed: Value = app.get("/v1/locks").await.json().await.unwrap();
    let start = listed["revision"].as_i64().unwrap();
    assert_eq!(app.renew("meta", token).await.status(), StatusCode::OK);
    let r = app
        .post(
            "/v1/locks/meta/renew",
            json!({"token": token, "metadata": {"v": 2}}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["metadata"], json!({"v": 2}));
    let shown: Value = app.get("/v1/locks/meta").await.json().await.unwrap();
    assert_eq!(shown["metadata"], json!({"v": 2}));
    let path = format!(
        "/v1/pools/p/reservations/{}/renew",
        reserved["id"].as_str().unwrap()
    );
    let r = app
        .post(
            &path,
            json!({"token": reserved["token"], "metadata": {"r": 1}}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["metadata"], json!({"r": 1}));
    // A lost token changes nothing.
    let lost = json!({"token": "0".repeat(32), "metadata": {"v": 3}});
    problem(
        app.post("/v1/locks/meta/renew", lost).await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
    let p = page(&app, &format!("?since={start}&wait_ms=1000")).await;
    let types: Vec<_> = p["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].clone())
        .collect();
    assert_eq!(types, [json!("lock.updated"), json!("reservation.updated")]);
    assert_eq!(p["items"][0]["key"], "meta");
}

crate::harness::tests! {
    a_renew_with_metadata_is_announced_as_one_update,
    a_group_is_created_once_inspected_and_listed,
    a_member_joins_updates_renews_and_leaves,
    joining_a_missing_group_is_404_and_bad_input_names_the_field,
    members_end_with_their_session_closed_or_expired,
    a_member_expires_at_its_ttl_announced_by_the_reaper,
    a_group_with_members_is_not_deleted_until_they_are_removed,
    racing_joins_of_one_member_id_admit_exactly_one(4 threads),
    deletes_racing_joins_never_leave_a_member_in_a_deleted_group(4 threads),
    a_token_touches_groups_within_its_prefixes_only,
    list_then_watch_misses_nothing_and_sees_nothing_twice(4 threads),
}
