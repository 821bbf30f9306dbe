//! Every JSON request body is an object: an array (read by position into the
//! request's fields) or any other value is refused with 400 naming the body,
//! and changes nothing.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app};

async fn post_raw(app: &TestApp, method: reqwest::Method, path: &str, body: &str) -> Response {
    app.client
        .request(method, app.url(path))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

async fn refused_as_not_an_object(response: Response, path: &str) {
    let body = problem(response, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "body", "{path}: {body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("must be a JSON object"),
        "{path}: {body}"
    );
}

async fn an_array_body_is_refused_on_every_write_and_grants_nothing() {
    let app = spawn_app().await;
    let put = app
        .client
        .put(app.url("/v1/pools/nets"))
        .json(&json!({"cidr": "10.40.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    let lease = app.must_acquire("held", "h", 60_000).await;
    let token = lease["token"].as_str().unwrap();
    let reservation: Value = app
        .post(
            "/v1/pools/nets/reservations",
            json!({"holder": "h", "prefix_len": 24}),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = reservation["id"].as_str().unwrap();
    let rtoken = reservation["token"].as_str().unwrap();

    let post = reqwest::Method::POST;
    // Each array holds every field of its request in order, which serde
    // would otherwise take by position.
    let cases = [
        (
            post.clone(),
            "/v1/locks/free/acquire".to_owned(),
            r#"["h", 60000, null, null, null, null, null]"#.to_owned(),
        ),
        (
            post.clone(),
            "/v1/pools/nets/reservations".to_owned(),
            r#"["h", 24, null, null, null, null]"#.to_owned(),
        ),
        (
            post.clone(),
            "/v1/locks/held/renew".to_owned(),
            format!(r#"["{token}", 120000]"#),
        ),
        (
            post.clone(),
            "/v1/locks/held/release".to_owned(),
            format!(r#"["{token}"]"#),
        ),
        (
            post.clone(),
            format!("/v1/pools/nets/reservations/{id}/renew"),
            format!(r#"["{rtoken}", 120000]"#),
        ),
        (
            post.clone(),
            format!("/v1/pools/nets/reservations/{id}/confirm"),
            format!(r#"["{rtoken}"]"#),
        ),
        (
            reqwest::Method::PUT,
            "/v1/pools/other".to_owned(),
            r#"["10.50.0.0/16", null]"#.to_owned(),
        ),
    ];
    for (method, path, body) in &cases {
        let response = post_raw(&app, method.clone(), path, body).await;
        refused_as_not_an_object(response, path).await;
    }

    // Nothing was granted, renewed, confirmed, released or created.
    assert_eq!(
        app.get("/v1/locks/free").await.status(),
        StatusCode::NOT_FOUND
    );
    let held: Value = app.get("/v1/locks/held").await.json().await.unwrap();
    assert_eq!(held["fencing_token"], lease["fencing_token"]);
    assert_eq!(held["expires_at"], lease["expires_at"]);
    let pool: Value = app.get("/v1/pools/nets").await.json().await.unwrap();
    assert_eq!(pool["reserved_count"], 1, "{pool}");
    let shown: Value = app
        .get(&format!("/v1/pools/nets/reservations/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["state"], "reserved");
    assert_eq!(shown["expires_at"], reservation["expires_at"]);
    assert_eq!(
        app.get("/v1/pools/other").await.status(),
        StatusCode::NOT_FOUND
    );
}

async fn a_body_of_any_other_json_value_is_refused_naming_the_body() {
    let app = spawn_app().await;
    for body in [r#""h""#, "60000", "true", "null", " [ ] "] {
        let response = post_raw(&app, reqwest::Method::POST, "/v1/locks/k/acquire", body).await;
        refused_as_not_an_object(response, body).await;
    }
    // Text that is not JSON at all is still malformed JSON.
    let response = post_raw(&app, reqwest::Method::POST, "/v1/locks/k/acquire", "[1,").await;
    problem(response, StatusCode::BAD_REQUEST, "malformed-json").await;
}

crate::harness::tests! {
    an_array_body_is_refused_on_every_write_and_grants_nothing,
    a_body_of_any_other_json_value_is_refused_naming_the_body,
}
