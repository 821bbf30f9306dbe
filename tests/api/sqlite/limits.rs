//! Every size and time bound answers a clear 400 naming the field and the
//! bound, and a value right at the bound is accepted.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app_with};

async fn app() -> TestApp {
    spawn_app_with(|c| {
        c.max_ttl = std::time::Duration::from_secs(3_600);
        c.max_wait = std::time::Duration::from_secs(2);
    })
    .await
}

/// Asserts a 400 naming `field` whose detail says `says`.
async fn refused(response: reqwest::Response, field: &str, says: &str) {
    let body = problem(response, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], field, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains(says), "{field}: {detail:?} says {says:?}");
}

fn metadata_of(json_bytes: usize) -> Value {
    // {"pad":"…"} is 10 bytes around the padding.
    json!({"pad": "x".repeat(json_bytes - 10)})
}

async fn lock_fields_are_bounded() {
    let app = app().await;
    let acquire = |body: Value| app.post("/v1/locks/k/acquire", body);
    let base = |extra: Value| {
        let mut body = json!({"holder": "h", "ttl_ms": 1_000});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let cases = [
        (
            json!({"holder": "h".repeat(257)}),
            "holder",
            "257 bytes long; the limit is 256",
        ),
        (json!({"holder": "line\nbreak"}), "holder", "U+000A"),
        (
            json!({"metadata": metadata_of(4_097)}),
            "metadata",
            "4097 bytes as JSON; the limit is 4096",
        ),
        (
            json!({"ttl_ms": 3_600_001}),
            "ttl_ms",
            "between 100 and 3600000",
        ),
        (json!({"ttl_ms": 99}), "ttl_ms", "between 100 and 3600000"),
        (json!({"wait_ms": 2_001}), "wait_ms", "between 0 and 2000"),
        (
            json!({"lock_delay_ms": 3_600_001}),
            "lock_delay_ms",
            "between 0 and 3600000",
        ),
        (json!({"max_holders": 0}), "max_holders", "at least 1"),
    ];
    for (extra, field, says) in cases {
        refused(acquire(base(extra)).await, field, says).await;
    }
    let long_idempotency_key = app
        .client
        .post(app.url("/v1/locks/k/acquire"))
        .header("Idempotency-Key", "i".repeat(257))
        .json(&base(json!({})))
        .send()
        .await
        .unwrap();
    refused(long_idempotency_key, "Idempotency-Key", "the limit is 256").await;

    // Right at every bound is fine.
    let at_bounds = base(json!({
        "holder": "h".repeat(256),
        "metadata": metadata_of(4_096),
        "ttl_ms": 3_600_000,
        "wait_ms": 2_000,
        "lock_delay_ms": 3_600_000,
    }));
    let granted = acquire(at_bounds).await;
    assert_eq!(granted.status(), StatusCode::CREATED);
    let token = granted.json::<Value>().await.unwrap()["token"].clone();
    let renew = app
        .post(
            "/v1/locks/k/renew",
            json!({"token": token, "ttl_ms": 3_600_001}),
        )
        .await;
    refused(renew, "ttl_ms", "between 100 and 3600000").await;
}

async fn pages_are_bounded_on_every_list() {
    let app = app().await;
    let put = app
        .client
        .put(app.url("/v1/pools/p"))
        .json(&json!({"cidr": "10.0.0.0/8"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    for list in ["/v1/locks", "/v1/pools", "/v1/pools/p/reservations"] {
        for bad in ["0", "1001"] {
            let r = app.get(&format!("{list}?limit={bad}")).await;
            refused(
                r,
                "limit",
                &format!("must be between 1 and 1000, got {bad}"),
            )
            .await;
        }
        assert_eq!(
            app.get(&format!("{list}?limit=1000")).await.status(),
            StatusCode::OK,
            "{list}"
        );
    }
    let long_prefix = format!("/v1/locks?prefix={}", "p".repeat(257));
    refused(
        app.get(&long_prefix).await,
        "prefix",
        "keys are at most 256",
    )
    .await;
}

async fn pool_and_reservation_fields_are_bounded() {
    let app = app().await;
    let put = |name: String, body: Value| {
        app.client
            .put(app.url(&format!("/v1/pools/{name}")))
            .json(&body)
            .send()
    };
    let r = put("p".repeat(64), json!({"cidr": "10.0.0.0/8"}))
        .await
        .unwrap();
    refused(r, "pool", "").await;
    let big_labels = json!({"cidr": "10.0.0.0/8", "labels": {"pad": "l".repeat(4_100)}});
    let r = put("p".into(), big_labels).await.unwrap();
    refused(r, "labels", "the limit is 4096").await;
    let r = put("p".repeat(63), json!({"cidr": "10.0.0.0/8"}))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let pool = format!("/v1/pools/{}/reservations", "p".repeat(63));

    let excludes: Vec<String> = (0..257).map(|i| format!("172.16.{i}.0/24")).collect();
    let cases = [
        (
            json!({"holder": "h".repeat(257), "prefix_len": 24}),
            "holder",
            "the limit is 256",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "exclude": excludes}),
            "exclude",
            "lists 257 networks; the limit is 256",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "metadata": metadata_of(4_097)}),
            "metadata",
            "the limit is 4096",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "ttl_ms": 3_600_001}),
            "ttl_ms",
            "between 100 and 3600000",
        ),
    ];
    for (body, field, says) in cases {
        refused(app.post(&pool, body).await, field, says).await;
    }
    let at_bounds = json!({
        "holder": "h".repeat(256),
        "prefix_len": 24,
        "exclude": (0..256).map(|i| format!("172.16.{i}.0/24")).collect::<Vec<_>>(),
        "metadata": metadata_of(4_096),
        "ttl_ms": 3_600_000,
    });
    assert_eq!(
        app.post(&pool, at_bounds).await.status(),
        StatusCode::CREATED
    );
}

async fn oversized_request_heads_are_refused() {
    let app = app().await;
    let huge = app
        .client
        .get(app.url("/v1/locks"))
        .header("x-padding", "a".repeat(512 * 1024))
        .send()
        .await;
    // The server answers 431 and closes, or closes while the head is still
    // arriving; either way the request is not served.
    if let Ok(response) = huge {
        assert_eq!(
            response.status(),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
        );
    }
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
}

crate::harness::tests! {
    lock_fields_are_bounded,
    pages_are_bounded_on_every_list,
    pool_and_reservation_fields_are_bounded,
    oversized_request_heads_are_refused,
}
