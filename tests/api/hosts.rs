//! The `Host` a request names, over raw HTTP (a client library names the
//! host of its URL): a server without an auth file answers loopback names
//! and addresses and the hosts of `--allowed-hosts`, and any other `Host`
//! (a page whose name was rebound to 127.0.0.1) is 421 problem+json naming
//! it, on every route but the probes, counted in `/metrics`. With an auth
//! file the check applies only where `--allowed-hosts` is given.

use reqwest::StatusCode;
use serde_json::Value;

use crate::auth::{ADMIN, spawn_secured_tweaked};
use crate::helpers::{TestApp, gauge, spawn_app, spawn_app_with};
use crate::raw::{Raw, status_of};

/// Sends `head` (a request line and headers, without the blank line) on a
/// fresh connection; the answer's status and its JSON body, if any.
async fn send(app: &TestApp, head: &str) -> (u16, Value) {
    send_with(app, head, "").await
}

/// The same, with a JSON `body`.
async fn send_with(app: &TestApp, head: &str, body: &str) -> (u16, Value) {
    let mut raw = Raw::connect(app).await;
    let length = match body {
        "" => String::new(),
        body => format!(
            "\r\nContent-Type: application/json\r\nContent-Length: {}",
            body.len()
        ),
    };
    raw.send(&format!(
        "{head}{length}\r\nConnection: close\r\n\r\n{body}"
    ))
    .await;
    let (answer, _) = raw
        .read_until_closed(std::time::Duration::from_secs(10))
        .await;
    let (headers, body) = answer.split_once("\r\n\r\n").expect("a whole answer");
    let problem = headers
        .to_ascii_lowercase()
        .contains("content-type: application/problem+json");
    let body = match problem {
        true => serde_json::from_str(body).expect("a JSON problem"),
        false => Value::Null,
    };
    (status_of(&answer), body)
}

/// `GET path` naming `host`.
async fn get_as(app: &TestApp, host: &str, path: &str) -> (u16, Value) {
    send(app, &format!("GET {path} HTTP/1.1\r\nHost: {host}")).await
}

fn assert_misdirected(answer: &(u16, Value), host: &str) {
    let (status, body) = answer;
    assert_eq!(*status, 421, "{body}");
    assert_eq!(body["type"], "/problems/misdirected-request", "{body}");
    assert_eq!(body["status"], 421);
    assert_eq!(body["host"], host, "{body}");
    assert!(body["detail"].as_str().unwrap().contains(host), "{body}");
}

async fn a_foreign_host_is_refused_on_every_route_naming_it() {
    let app = spawn_app().await;
    for path in [
        "/v1/status",
        "/v1/locks",
        "/v1/locks/k",
        "/console",
        "/console/console.js",
        "/docs",
        "/openapi.json",
        "/metrics",
        "/favicon.ico",
        "/no/such/route",
    ] {
        let answer = get_as(&app, "rebound.example:8474", path).await;
        assert_misdirected(&answer, "rebound.example:8474");
    }
    // A write, and a force release, are refused before they are done.
    let acquire = "POST /v1/locks/k/acquire HTTP/1.1\r\nHost: rebound.example";
    let answer = send_with(&app, acquire, r#"{"holder": "h", "ttl_ms": 1000}"#).await;
    assert_misdirected(&answer, "rebound.example");
    assert_eq!(app.get("/v1/locks/k").await.status(), StatusCode::NOT_FOUND);
    let lease = app.must_acquire("k", "owner", 60_000).await;
    let force = "DELETE /v1/locks/k HTTP/1.1\r\nHost: rebound.example";
    assert_misdirected(&send(&app, force).await, "rebound.example");
    let held = app.get("/v1/locks/k").await.json::<Value>().await.unwrap();
    assert_eq!(held["fencing_token"], lease["fencing_token"]);
}

async fn loopback_names_and_addresses_are_answered_in_every_form() {
    let app = spawn_app().await;
    for host in [
        "localhost",
        "localhost:8474",
        "LOCALHOST",
        "localhost.",
        "127.0.0.1",
        "127.0.0.1:1",
        "127.9.8.7:8474",
        "[::1]",
        "[::1]:8474",
    ] {
        let (status, body) = get_as(&app, host, "/v1/status").await;
        assert_eq!(status, 200, "{host}: {body}");
    }
}

async fn names_that_only_look_local_are_refused() {
    let app = spawn_app().await;
    for host in [
        "127.0.0.1.rebound.example",
        "localhost.rebound.example",
        "rebound.example",
        "10.0.0.5:8474",
        "[fd00::5]:8474",
    ] {
        assert_misdirected(&get_as(&app, host, "/v1/status").await, host);
    }
}

async fn a_request_that_names_no_host_is_refused() {
    let app = spawn_app().await;
    let (status, body) = send(&app, "GET /v1/status HTTP/1.0").await;
    assert_eq!(status, 421, "{body}");
    assert_eq!(body["type"], "/problems/misdirected-request");
    assert!(body["host"].is_null(), "{body}");
}

async fn an_absolute_request_line_names_the_host_over_the_header() {
    let app = spawn_app().await;
    let head = "GET http://rebound.example/v1/status HTTP/1.1\r\nHost: localhost";
    assert_misdirected(&send(&app, head).await, "rebound.example");
    let head = "GET http://localhost:8474/v1/status HTTP/1.1\r\nHost: localhost";
    assert_eq!(send(&app, head).await.0, 200);
}

async fn probes_answer_any_host() {
    let app = spawn_app().await;
    for path in ["/healthz", "/readyz"] {
        let (status, _) = get_as(&app, "10.1.2.3:8474", path).await;
        assert_eq!(status, 200, "{path}");
    }
}

async fn hosts_named_with_allowed_hosts_are_answered_whatever_their_case_and_port() {
    let app = spawn_app_with(|c| c.allowed_hosts = vec!["Leasehold.Internal".into()]).await;
    for host in [
        "leasehold.internal",
        "LEASEHOLD.internal:8474",
        "localhost:1",
    ] {
        let (status, body) = get_as(&app, host, "/v1/status").await;
        assert_eq!(status, 200, "{host}: {body}");
    }
    let other = "other.internal";
    assert_misdirected(&get_as(&app, other, "/v1/status").await, other);
}

async fn a_wildcard_answers_any_host() {
    let app = spawn_app_with(|c| c.allowed_hosts = vec!["*".into()]).await;
    let (status, body) = get_as(&app, "rebound.example", "/v1/status").await;
    assert_eq!(status, 200, "{body}");
}

async fn with_an_auth_file_any_host_meets_the_token_check() {
    let app = spawn_secured_tweaked(Vec::new(), |_| {}).await;
    let (status, body) = get_as(&app, "leasehold.example", "/v1/status").await;
    assert_eq!(status, 401, "{body}");
    let head = format!(
        "GET /v1/status HTTP/1.1\r\nHost: leasehold.example\r\nAuthorization: Bearer {ADMIN}"
    );
    assert_eq!(send(&app, &head).await.0, 200);
}

async fn with_an_auth_file_and_allowed_hosts_another_host_is_refused_before_the_token() {
    let app = spawn_secured_tweaked(Vec::new(), |c| {
        c.allowed_hosts = vec!["leasehold.example".into()];
    })
    .await;
    let head = |host: &str| {
        format!("GET /v1/status HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {ADMIN}")
    };
    assert_eq!(send(&app, &head("leasehold.example")).await.0, 200);
    assert_eq!(send(&app, &head("127.0.0.1:9")).await.0, 200);
    assert_misdirected(
        &send(&app, &head("rebound.example")).await,
        "rebound.example",
    );
    let anonymous = get_as(&app, "rebound.example", "/v1/status").await;
    assert_misdirected(&anonymous, "rebound.example");
}

async fn refused_hosts_are_counted_and_answered_by_route() {
    let app = spawn_app().await;
    for _ in 0..2 {
        get_as(&app, "rebound.example", "/v1/status").await;
    }
    get_as(&app, "rebound.example", "/console").await;
    assert_eq!(gauge(&app, "leasehold_misdirected_requests_total").await, 3);
    let by_route =
        "leasehold_http_responses_total{route=\"/v1/status\",method=\"GET\",code=\"421\"}";
    assert_eq!(gauge(&app, by_route).await, 2);
    let r = app.get("/v1/status").await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "the test's own client names 127.0.0.1"
    );
}

crate::harness::tests! {
    a_foreign_host_is_refused_on_every_route_naming_it,
    loopback_names_and_addresses_are_answered_in_every_form,
    names_that_only_look_local_are_refused,
    a_request_that_names_no_host_is_refused,
    an_absolute_request_line_names_the_host_over_the_header,
    probes_answer_any_host,
    hosts_named_with_allowed_hosts_are_answered_whatever_their_case_and_port,
    a_wildcard_answers_any_host,
    with_an_auth_file_any_host_meets_the_token_check,
    with_an_auth_file_and_allowed_hosts_another_host_is_refused_before_the_token,
    refused_hosts_are_counted_and_answered_by_route,
}
