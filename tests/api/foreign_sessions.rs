//! A session id that belongs to another API token is answered exactly as a
//! missing one, wherever it is named: binding a lock, a lock set, a
//! reservation or a membership to it, leaving by it, inspecting it, listing
//! its leases, renewing, closing and force-closing it. So another tenant
//! cannot tell whether it lives: every answer while it lives is byte for
//! byte the answer once it is closed, and the answer to an id that never
//! existed.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{send, spawn_secured_with};
use crate::helpers::TestApp;
use crate::tenants::{A, B, B_ADMIN, open_session, tenants};

/// One answer, as a client sees it: status, content type, `Retry-After`
/// and the body's text.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    what: &'static str,
    status: StatusCode,
    content_type: String,
    retry_after: Option<String>,
    body: String,
}

async fn answer(what: &'static str, r: reqwest::Response) -> Answer {
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (status, content_type, retry_after) =
        (r.status(), header("content-type"), header("retry-after"));
    Answer {
        what,
        status,
        content_type: content_type.unwrap_or_default(),
        retry_after,
        body: r.text().await.unwrap(),
    }
}

/// Every request of `token` that names the session `id` (with `secret`,
/// its token or a guess), in one order.
async fn every_answer(app: &TestApp, token: &str, id: &str, secret: &str) -> Vec<Answer> {
    let claim = json!({"id": id, "token": secret});
    let path = format!("/v1/sessions/{id}");
    let secret = json!({ "token": secret });
    let requests: [(&'static str, &str, String, Option<Value>); 10] = [
        (
            "bind a lock",
            "POST",
            "/v1/locks/b%2Fx/acquire".into(),
            Some(json!({"holder": "b", "session": claim})),
        ),
        (
            "bind a lock set",
            "POST",
            "/v1/lock-sets/acquire".into(),
            Some(json!({"keys": ["b/1", "b/2"], "holder": "b", "session": claim})),
        ),
        (
            "bind a reservation",
            "POST",
            "/v1/pools/pb/reservations".into(),
            Some(json!({"holder": "b", "prefix_len": 24, "session": claim})),
        ),
        (
            "bind a member",
            "PUT",
            "/v1/groups/b%2Fg/members/m".into(),
            Some(json!({"session": claim})),
        ),
        (
            "leave by it",
            "POST",
            "/v1/groups/b%2Fg/members/m/leave".into(),
            Some(json!({"session": claim})),
        ),
        ("inspect", "GET", path.clone(), None),
        ("list its leases", "GET", format!("{path}/leases"), None),
        (
            "renew",
            "POST",
            format!("{path}/renew"),
            Some(secret.clone()),
        ),
        ("close", "POST", format!("{path}/close"), Some(secret)),
        ("force close", "DELETE", path, None),
    ];
    let mut answers = Vec::new();
    for (what, method, path, body) in requests {
        answers.push(answer(what, send(app, token, method, &path, body).await).await);
    }
    answers
}

async fn spawn() -> TestApp {
    let app = spawn_secured_with(tenants()).await;
    let r = send(
        &app,
        B,
        "PUT",
        "/v1/pools/pb",
        Some(json!({"cidr": "10.0.0.0/16"})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = send(&app, B, "PUT", "/v1/groups/b%2Fg", None).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    app
}

async fn another_tenants_live_session_is_answered_as_a_closed_one() {
    let app = spawn().await;
    let s = open_session(&app, A).await;
    let (id, secret) = (s["id"].as_str().unwrap(), s["token"].as_str().unwrap());
    let wrong = "0123456789abcdef0123456789abcdef";
    // B, and B's admin (who covers B's tokens, not A's), with the session's
    // own token and with a guess, while it lives.
    let mut live = Vec::new();
    for token in [B, B_ADMIN] {
        for sent in [secret, wrong] {
            live.push(every_answer(&app, token, id, sent).await);
        }
    }
    // None of it touched the session: nothing is bound, it is A's and open.
    let shown: Value = send(&app, A, "GET", &format!("/v1/sessions/{id}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&shown["locks"], &shown["reservations"], &shown["members"]),
        (&json!(0), &json!(0), &json!(0)),
        "{shown}"
    );
    let r = send(
        &app,
        A,
        "POST",
        &format!("/v1/sessions/{id}/close"),
        Some(json!({"token": secret})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let mut closed = Vec::new();
    for token in [B, B_ADMIN] {
        for sent in [secret, wrong] {
            closed.push(every_answer(&app, token, id, sent).await);
        }
    }
    assert_eq!(live, closed);
    // The answers themselves: a bind is `session-lost` naming the id, a
    // renew or close `lease-lost`, an inspect or force close
    // `session-not-found` (B may not force-close at all: it is no admin).
    let kinds: Vec<(&str, u16, String)> = closed[2]
        .iter()
        .map(|a| {
            let body: Value = serde_json::from_str(&a.body).unwrap();
            (
                a.what,
                a.status.as_u16(),
                body["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("bind a lock", 409, "session-lost"),
        ("bind a lock set", 409, "session-lost"),
        ("bind a reservation", 409, "session-lost"),
        ("bind a member", 409, "session-lost"),
        ("leave by it", 409, "lease-lost"),
        ("inspect", 404, "session-not-found"),
        ("list its leases", 404, "session-not-found"),
        ("renew", 409, "lease-lost"),
        ("close", 409, "lease-lost"),
        ("force close", 404, "session-not-found"),
    ];
    let expected: Vec<(&str, u16, String)> = expected
        .iter()
        .map(|(w, s, t)| (*w, *s, format!("/problems/{t}")))
        .collect();
    assert_eq!(kinds, expected);
    let bind: Value = serde_json::from_str(&closed[0][0].body).unwrap();
    assert_eq!(bind["field"], "session.id");
}

async fn a_session_that_never_existed_is_answered_as_a_live_foreign_one() {
    let app = spawn().await;
    let s = open_session(&app, A).await;
    let (id, secret) = (s["id"].as_str().unwrap(), s["token"].as_str().unwrap());
    // An id of the same shape that no session has.
    let other: String = id
        .chars()
        .map(|c| if c == '0' { '1' } else { '0' })
        .collect();
    let foreign = every_answer(&app, B, id, secret).await;
    let missing = every_answer(&app, B, &other, secret).await;
    let missing: Vec<Answer> = missing
        .into_iter()
        .map(|a| Answer {
            body: a.body.replace(&other, id),
            ..a
        })
        .collect();
    assert_eq!(foreign, missing);
}

crate::harness::tests! {
    another_tenants_live_session_is_answered_as_a_closed_one,
    a_session_that_never_existed_is_answered_as_a_live_foreign_one,
}
