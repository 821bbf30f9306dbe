//! A session carries only leases its own API token could hold: an admin
//! over every key may bind to any session, but a lock, a lock set, a
//! reservation or a membership that the session's token could not hold is
//! refused 403 `session-out-of-scope` naming the session, and nothing is
//! bound. A scoped admin's force close ends nothing outside its scope: a
//! session holding such a lease (bound while its token's scope was wider)
//! is refused the same way, whole.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::auth::{ADMIN, entry, send};
use crate::helpers::{TestApp, problem, spawn_app_in};
use crate::sessions::claim;
use crate::spec_answers::answered;
use crate::tenants::{A, B, open_session, spawn_tenants};

/// A's pool and group, and B's, each made by its own tenant.
async fn spawn() -> TestApp {
    let app = spawn_tenants().await;
    for (token, pool, group) in [(A, "pa", "a%2Fg"), (B, "pb", "b%2Fg")] {
        let cidr = json!({"cidr": "10.0.0.0/16"});
        let r = send(&app, token, "PUT", &format!("/v1/pools/{pool}"), Some(cidr)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let r = send(&app, token, "PUT", &format!("/v1/groups/{group}"), None).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    app
}

/// Each way of binding to session `s`, on A's resources or on B's (`of`:
/// `a` or `b`): its method, path, the spec's path template and body.
fn binds(of: &str, s: &Value) -> Vec<(&'static str, String, &'static str, Value)> {
    let session = claim(s);
    vec![
        (
            "POST",
            format!("/v1/locks/{of}%2Fsecret-of-{of}/acquire"),
            "/v1/locks/{key}/acquire",
            json!({"holder": "admin", "session": session}),
        ),
        (
            "POST",
            "/v1/lock-sets/acquire".into(),
            "/v1/lock-sets/acquire",
            json!({"keys": [format!("{of}/1"), format!("{of}/2")], "holder": "admin",
                   "session": session}),
        ),
        (
            "POST",
            format!("/v1/pools/p{of}/reservations"),
            "/v1/pools/{pool}/reservations",
            json!({"holder": "admin", "prefix_len": 24, "session": session}),
        ),
        (
            "PUT",
            format!("/v1/groups/{of}%2Fg/members/m"),
            "/v1/groups/{group}/members/{member}",
            json!({"session": session}),
        ),
    ]
}

async fn bound_to(app: &TestApp, token: &str, s: &Value) -> Value {
    let path = format!("/v1/sessions/{}/leases", s["id"].as_str().unwrap());
    let r = send(app, token, "GET", &path, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

async fn an_admin_cannot_give_a_session_what_its_token_could_not_hold() {
    let app = spawn().await;
    let s = open_session(&app, A).await;
    for (method, path, template, body) in binds("b", &s) {
        let r = send(&app, ADMIN, method, &path, Some(body)).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}");
        let body = answered(&method.to_lowercase(), template, r).await;
        assert_eq!(body["type"], "/problems/session-out-of-scope", "{path}");
        assert_eq!((&body["session"], &body["owner"]), (&s["id"], &json!("a")));
    }
    // A lock set is refused whole when one key is outside.
    let mixed = json!({"keys": ["a/1", "b/1"], "holder": "admin", "session": claim(&s)});
    let r = send(&app, ADMIN, "POST", "/v1/lock-sets/acquire", Some(mixed)).await;
    problem(r, StatusCode::FORBIDDEN, "session-out-of-scope").await;
    // Nothing was bound: the session holds nothing, B's key is free.
    let held = bound_to(&app, A, &s).await;
    for kind in ["locks", "reservations", "members"] {
        assert_eq!(held[kind], json!([]), "{kind}: {held}");
    }
    for key in ["b%2Fsecret-of-b", "a%2F1"] {
        let r = send(&app, ADMIN, "GET", &format!("/v1/locks/{key}"), None).await;
        problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
    }
    // What A's token could hold, the admin binds to A's session.
    for (method, path, _, body) in binds("a", &s) {
        let r = send(&app, ADMIN, method, &path, Some(body)).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{path}");
    }
    let held = bound_to(&app, A, &s).await;
    let keys: Vec<&Value> = held["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["key"])
        .collect();
    assert_eq!(
        keys,
        [&json!("a/1"), &json!("a/2"), &json!("a/secret-of-a")]
    );
    assert_eq!(held["reservations"][0]["pool"], "pa");
    assert_eq!(held["members"][0]["group"], "a/g");
}

async fn a_tenant_binds_to_its_own_session_within_its_scope_as_before() {
    let app = spawn().await;
    let s = open_session(&app, B).await;
    for (method, path, _, body) in binds("b", &s) {
        let r = send(&app, B, method, &path, Some(body)).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{path}");
    }
    let held = bound_to(&app, B, &s).await;
    assert_eq!(held["locks"].as_array().unwrap().len(), 3);
}

const WIDE: &str = "wide-secret";
const SCOPED_ADMIN: &str = "scoped-admin-secret";

/// A server on the database in `dir` whose auth file gives `wide` the
/// key prefixes `wide_prefixes`, beside an admin over `b/` and `pb` and
/// one over everything.
async fn serve(dir: Arc<TempDir>, wide_prefixes: Value) -> TestApp {
    let rw = |prefixes: Value| json!({"lock_prefixes": prefixes, "pools": ["pb"], "access": "read-write"});
    let mut scoped = rw(json!(["b/"]));
    scoped["admin"] = json!(true);
    let tokens = [
        entry("wide", WIDE, rw(wide_prefixes)),
        entry("scoped-admin", SCOPED_ADMIN, scoped),
        entry(
            "admin",
            ADMIN,
            json!({"lock_prefixes": [""], "pools": ["*"], "access": "read-write", "admin": true}),
        ),
    ];
    let auth = dir.path().join("auth.json");
    std::fs::write(&auth, json!({ "tokens": tokens }).to_string()).unwrap();
    spawn_app_in(dir, |c| c.auth_file = Some(auth)).await
}

async fn bind(app: &TestApp, key: &str, s: &Value) {
    let path = format!("/v1/locks/{}/acquire", crate::helpers::encode(key));
    let body = json!({"holder": "wide", "session": claim(s)});
    let r = send(app, WIDE, "POST", &path, Some(body)).await;
    assert_eq!(r.status(), StatusCode::CREATED, "{key}");
}

async fn a_scoped_admin_force_closes_no_session_holding_a_lease_outside_its_scope() {
    let dir = Arc::new(TempDir::new().unwrap());
    // While `wide` holds a/ and b/, its session carries a lease of each.
    let app = serve(dir.clone(), json!(["a/", "b/"])).await;
    let s = open_session(&app, WIDE).await;
    let only_b = open_session(&app, WIDE).await;
    bind(&app, "a/x", &s).await;
    bind(&app, "b/y", &s).await;
    bind(&app, "b/z", &only_b).await;
    // Then its scope narrows to b/, which the scoped admin covers: it sees
    // wide's sessions, but ends only those whose leases all lie in b/.
    let dir = app.stop().await;
    let app = serve(dir, json!(["b/"])).await;
    let path = |s: &Value| format!("/v1/sessions/{}", s["id"].as_str().unwrap());
    let r = send(&app, SCOPED_ADMIN, "DELETE", &path(&only_b), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = send(&app, SCOPED_ADMIN, "DELETE", &path(&s), None).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body = answered("delete", "/v1/sessions/{id}", r).await;
    assert_eq!(body["type"], "/problems/session-out-of-scope");
    assert_eq!(
        (&body["session"], &body["owner"]),
        (&s["id"], &json!("wide"))
    );
    assert!(
        !body.to_string().contains("a/x"),
        "the key is not named: {body}"
    );
    // Nothing ended: the session lives with both its leases.
    let r = send(&app, SCOPED_ADMIN, "GET", &path(&s), None).await;
    let shown: Value = r.json().await.unwrap();
    assert_eq!(shown["locks"], 2, "{shown}");
    for key in ["a%2Fx", "b%2Fy"] {
        let r = send(&app, ADMIN, "GET", &format!("/v1/locks/{key}"), None).await;
        assert_eq!(r.status(), StatusCode::OK, "{key}");
    }
    // The admin over everything ends it, and both its leases.
    let r = send(&app, ADMIN, "DELETE", &path(&s), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = send(&app, ADMIN, "GET", "/v1/locks/a%2Fx", None).await;
    problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
}

crate::harness::tests! {
    an_admin_cannot_give_a_session_what_its_token_could_not_hold,
    a_tenant_binds_to_its_own_session_within_its_scope_as_before,
    a_scoped_admin_force_closes_no_session_holding_a_lease_outside_its_scope,
}
