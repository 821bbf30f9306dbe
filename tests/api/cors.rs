//! CORS, off by default: only the origins named by `--cors-origin` get CORS
//! headers, and their preflights are answered without a token.

use reqwest::{Method, Response, StatusCode};

use crate::auth::{ADMIN, spawn_secured_tweaked};
use crate::helpers::{TestApp, gauge, problem, spawn_app, spawn_app_with, wait_for_gauge};
use crate::raw::Raw;
use crate::refusals::refused_at_start as refused;

const PAGE: &str = "https://app.example.com";
const OTHER: &str = "https://evil.example.net";

fn allow_page(config: &mut leasehold::config::ServeConfig) {
    config.cors_origins = vec![PAGE.into(), "http://localhost:3000".into()];
}

async fn preflight(app: &TestApp, origin: &str) -> Response {
    app.client
        .request(Method::OPTIONS, app.url("/v1/locks/web/acquire"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,idempotency-key",
        )
        .send()
        .await
        .unwrap()
}

async fn get_from(app: &TestApp, origin: &str) -> Response {
    app.client
        .get(app.url("/v1/locks"))
        .header("origin", origin)
        .send()
        .await
        .unwrap()
}

fn header(response: &Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_ascii_lowercase())
}

fn has_no_cors_header(response: &Response) -> bool {
    !response
        .headers()
        .keys()
        .any(|name| name.as_str().starts_with("access-control-"))
}

fn assert_preflight_allowed(response: &Response) {
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(
        header(response, "access-control-allow-origin").as_deref(),
        Some(PAGE)
    );
    let methods = header(response, "access-control-allow-methods").unwrap();
    for method in ["get", "post", "put", "delete"] {
        assert!(methods.contains(method), "{method} missing from {methods}");
    }
    let headers = header(response, "access-control-allow-headers").unwrap();
    for name in ["authorization", "content-type", "idempotency-key"] {
        assert!(headers.contains(name), "{name} missing from {headers}");
    }
}

async fn a_listed_origin_gets_cors_headers_on_a_request_and_its_preflight() {
    let app = spawn_app_with(allow_page).await;
    let response = get_from(&app, PAGE).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        header(&response, "access-control-allow-origin").as_deref(),
        Some(PAGE)
    );
    let exposed = header(&response, "access-control-expose-headers").unwrap();
    for name in ["location", "retry-after", "x-request-id"] {
        assert!(exposed.contains(name), "{name} missing from {exposed}");
    }
    assert_preflight_allowed(&preflight(&app, PAGE).await);
}

async fn a_preflight_needs_no_token_on_a_server_with_an_auth_file() {
    let app = spawn_secured_tweaked(Vec::new(), allow_page).await;
    let response = preflight(&app, PAGE).await;
    assert_ne!(response.status(), StatusCode::UNAUTHORIZED);
    assert_preflight_allowed(&response);
    // The real request still needs its token, and gets the headers with it.
    let response = get_from(&app, PAGE).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let response = app
        .client
        .get(app.url("/v1/locks"))
        .header("origin", PAGE)
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        header(&response, "access-control-allow-origin").as_deref(),
        Some(PAGE)
    );
}

async fn another_origin_gets_no_cors_header() {
    let app = spawn_app_with(allow_page).await;
    let response = get_from(&app, OTHER).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(has_no_cors_header(&response), "{:?}", response.headers());
    let response = preflight(&app, OTHER).await;
    assert!(has_no_cors_header(&response), "{:?}", response.headers());
}

async fn without_the_flag_no_response_has_cors_headers() {
    let app = spawn_app().await;
    let response = get_from(&app, PAGE).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(has_no_cors_header(&response), "{:?}", response.headers());
    let response = preflight(&app, PAGE).await;
    assert!(has_no_cors_header(&response), "{:?}", response.headers());
}

async fn a_preflight_is_answered_on_a_saturated_server_and_not_counted() {
    let app = spawn_app_with(|c| {
        allow_page(c);
        c.max_in_flight = 1;
        c.max_in_flight_per_client = Some(1);
    })
    .await;
    // A client that sends half a body and stalls holds the only slot.
    let body = r#"{"holder": "slow", "ttl_ms": 60000}"#;
    let _stalled = Raw::stalled_post(&app, "/v1/locks/slow/acquire", body.len(), &body[..10]).await;
    wait_for_gauge(&app, "leasehold_requests_in_flight", 1).await;

    assert_preflight_allowed(&preflight(&app, PAGE).await);
    // The page can read why its real request was refused.
    let refused = get_from(&app, PAGE).await;
    assert_eq!(
        header(&refused, "access-control-allow-origin").as_deref(),
        Some(PAGE)
    );
    problem(refused, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    let shed = "leasehold_requests_shed_total{reason=\"in_flight\"}";
    assert_eq!(gauge(&app, shed).await, 1, "only the real request is shed");
    let metrics = app.scrape().await.text().await.unwrap();
    assert!(
        !metrics.contains("method=\"OPTIONS\""),
        "a preflight is not a request served: {metrics}"
    );
}

async fn a_wildcard_or_an_origin_with_a_path_is_refused_at_start() {
    let named = ["--cors-origin", "LEASEHOLD_CORS_ORIGINS"];
    let words = [named.as_slice(), &["\"*\"", "wildcard"]].concat();
    refused(&["--cors-origin", PAGE, "--cors-origin", "*"], &[], &words).await;
    refused(&[], &[("LEASEHOLD_CORS_ORIGINS", "*")], &words).await;
    let words = [named.as_slice(), &["no path", PAGE]].concat();
    let with_path = format!("{PAGE}/ui");
    refused(&["--cors-origin", &with_path], &[], &words).await;
    let env = format!("http://localhost:3000,{with_path}");
    refused(&[], &[("LEASEHOLD_CORS_ORIGINS", &env)], &words).await;
}

crate::harness::tests! {
    a_listed_origin_gets_cors_headers_on_a_request_and_its_preflight,
    a_preflight_needs_no_token_on_a_server_with_an_auth_file,
    another_origin_gets_no_cors_header,
    without_the_flag_no_response_has_cors_headers,
    a_preflight_is_answered_on_a_saturated_server_and_not_counted,
    a_wildcard_or_an_origin_with_a_path_is_refused_at_start,
}
