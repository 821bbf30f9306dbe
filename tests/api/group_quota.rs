//! Groups inside the quota: the groups a token created count toward its
//! `max_groups` (by default its `max_live_leases`), exactly under a race of
//! creations; a group's metadata is bounded like a lease's; the token that
//! created a group deletes it while it is empty, any other token in scope
//! needs admin.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, READER, entry, send, spawn_secured_with};
use crate::helpers::{TestApp, problem, spawn_app};
use crate::tenants::{A, B_ADMIN, Q, tenants};

const G: &str = "tenant-g-secret";
/// Another token on A's keys.
const A2: &str = "tenant-a2-secret";

async fn spawn() -> TestApp {
    let mut tokens = tenants();
    tokens.push(entry(
        "g",
        G,
        json!({"lock_prefixes": ["g/"], "pools": [], "access": "read-write",
               "max_live_leases": 100, "max_groups": 5}),
    ));
    tokens.push(entry(
        "a2",
        A2,
        json!({"lock_prefixes": ["a/"], "pools": [], "access": "read-write"}),
    ));
    spawn_secured_with(tokens).await
}

async fn put_group(app: &TestApp, token: &str, name: &str, body: Option<Value>) -> StatusCode {
    let path = format!("/v1/groups/{}", crate::helpers::encode(name));
    send(app, token, "PUT", &path, body).await.status()
}

async fn delete_group(app: &TestApp, token: &str, name: &str) -> reqwest::Response {
    let path = format!("/v1/groups/{}", crate::helpers::encode(name));
    send(app, token, "DELETE", &path, None).await
}

async fn racing_creations_pass_the_quota_of_groups_exactly() {
    let app = Arc::new(spawn().await);
    let mut racers = Vec::new();
    for i in 0..24 {
        let app = app.clone();
        racers.push(tokio::spawn(async move {
            let path = format!("/v1/groups/g%2F{i}");
            send(&app, G, "PUT", &path, None).await
        }));
    }
    let mut created = 0;
    for racer in racers {
        let r = racer.await.unwrap();
        if r.status() == StatusCode::CREATED {
            created += 1;
            continue;
        }
        let body = problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
        assert_eq!(body["quota"], "groups", "{body}");
        assert_eq!((&body["limit"], &body["current"]), (&json!(5), &json!(5)));
        assert!(body.get("needed").is_none(), "{body}");
    }
    assert_eq!(created, 5, "exactly the quota of groups was created");
    let listed: Value = send(&app, G, "GET", "/v1/groups", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 5);
    // At the limit a group that exists is still answered (it creates
    // nothing), and deleting one of its own makes room for another.
    let name = listed["items"][0]["name"].as_str().unwrap();
    assert_eq!(put_group(&app, G, name, None).await, StatusCode::OK);
    assert_eq!(
        put_group(&app, G, "g/new", None).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    let r = delete_group(&app, G, name).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(put_group(&app, G, "g/new", None).await, StatusCode::CREATED);
    // Groups count apart from leases: its locks are granted as before.
    let r = send(
        &app,
        G,
        "POST",
        "/v1/locks/g%2Flock/acquire",
        Some(json!({"holder": "h", "ttl_ms": 60_000})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn the_quota_of_groups_defaults_to_max_live_leases() {
    let app = spawn().await;
    // Q may hold 3 live leases, and so have created 3 groups.
    for i in 0..3 {
        assert_eq!(
            put_group(&app, Q, &format!("q/{i}"), None).await,
            StatusCode::CREATED
        );
    }
    let r = send(&app, Q, "PUT", "/v1/groups/q%2F3", None).await;
    let body = problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    assert_eq!(
        (&body["quota"], &body["limit"], &body["current"]),
        (&json!("groups"), &json!(3), &json!(3))
    );
    // A token without a quota creates as many as it likes.
    for i in 0..5 {
        let name = format!("a/{i}");
        assert_eq!(put_group(&app, A, &name, None).await, StatusCode::CREATED);
    }
    // Every quota answers the same way, naming itself.
    for i in 0..3 {
        let key = format!("/v1/locks/q%2Fk{i}/acquire");
        let ttl = json!({"holder": "h", "ttl_ms": 60_000});
        send(&app, Q, "POST", &key, Some(ttl)).await;
    }
    let ttl = json!({"holder": "h", "ttl_ms": 60_000});
    let r = send(&app, Q, "POST", "/v1/locks/q%2Fk3/acquire", Some(ttl)).await;
    let body = problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    assert_eq!(body["quota"], "leases");
}

async fn a_groups_metadata_is_bounded_like_a_leases() {
    let app = spawn().await;
    let big = json!({"blob": "x".repeat(4_100)});
    let r = send(
        &app,
        A,
        "PUT",
        "/v1/groups/a%2Fbig",
        Some(json!({ "metadata": big })),
    )
    .await;
    let group = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    let r = send(
        &app,
        A,
        "POST",
        "/v1/locks/a%2Fbig/acquire",
        Some(json!({"holder": "h", "ttl_ms": 1_000, "metadata": big})),
    )
    .await;
    let lease = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(group["field"], "metadata");
    assert_eq!(group["detail"], lease["detail"]);
    let r = send(&app, A, "GET", "/v1/groups/a%2Fbig", None).await;
    problem(r, StatusCode::NOT_FOUND, "group-not-found").await;
    // Just within the bound, it is kept.
    let fits = json!({"blob": "x".repeat(4_000)});
    let body = Some(json!({ "metadata": fits }));
    assert_eq!(
        put_group(&app, A, "a/fits", body).await,
        StatusCode::CREATED
    );
}

async fn the_creator_deletes_its_empty_group_and_others_need_admin() {
    let app = spawn().await;
    for name in ["a/mine", "a/busy"] {
        assert_eq!(put_group(&app, A, name, None).await, StatusCode::CREATED);
    }
    // Another writer on the same keys, and a reader, may not.
    for token in [A2, READER] {
        let body = problem(
            delete_group(&app, token, "a/mine").await,
            StatusCode::FORBIDDEN,
            "forbidden",
        )
        .await;
        assert_eq!(body["group"], "a/mine", "{body}");
    }
    // An admin out of scope is refused as before it looks.
    let r = delete_group(&app, B_ADMIN, "a/mine").await;
    problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    // A group that does not exist is not found, to every writer in scope.
    for token in [A, A2] {
        let r = delete_group(&app, token, "a/none").await;
        problem(r, StatusCode::NOT_FOUND, "group-not-found").await;
    }
    // The creator deletes its own group while it is empty.
    let join = json!({"ttl_ms": 60_000});
    let r = send(&app, A, "PUT", "/v1/groups/a%2Fbusy/members/m", Some(join)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = delete_group(&app, A, "a/busy").await;
    problem(r, StatusCode::CONFLICT, "group-not-empty").await;
    let r = delete_group(&app, A, "a/mine").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // An admin in scope deletes anyone's empty group.
    assert_eq!(
        put_group(&app, A2, "a/theirs", None).await,
        StatusCode::CREATED
    );
    let r = delete_group(&app, ADMIN, "a/theirs").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

async fn without_an_auth_file_anyone_deletes_an_empty_group() {
    let app = spawn_app().await;
    let r = app
        .client
        .put(app.url("/v1/groups/g"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(
        app.delete("/v1/groups/g").await.status(),
        StatusCode::NO_CONTENT
    );
}

crate::harness::tests! {
    racing_creations_pass_the_quota_of_groups_exactly (4 threads),
    the_quota_of_groups_defaults_to_max_live_leases,
    a_groups_metadata_is_bounded_like_a_leases,
    the_creator_deletes_its_empty_group_and_others_need_admin,
    without_an_auth_file_anyone_deletes_an_empty_group,
}
