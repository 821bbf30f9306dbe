//! What a token may touch, over real HTTP: 403 outside its key prefixes or
//! pools, for a read-only token's writes and a non-admin's admin operations;
//! listings that show only what it may see, page by page.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, QUOTA, READER, acquire_as, send, spawn_secured};
use crate::helpers::{TestApp, encode, problem};

async fn forbidden(response: reqwest::Response, needle: &str) -> Value {
    let body = problem(response, StatusCode::FORBIDDEN, "forbidden").await;
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains(needle), "{detail:?} should say {needle:?}");
    body
}

async fn a_key_outside_the_tokens_prefixes_is_403_for_every_operation() {
    let app = spawn_secured().await;
    let held: Value = acquire_as(&app, ADMIN, "db/primary")
        .await
        .json()
        .await
        .unwrap();
    let token = held["token"].as_str().unwrap();
    let body = forbidden(acquire_as(&app, CI, "db/primary").await, "db/primary").await;
    assert!(
        body["detail"].as_str().unwrap().contains("ci/, shared/"),
        "{body}"
    );
    assert_eq!(body["token"], "ci");
    let path = format!("/v1/locks/{}", encode("db/primary"));
    // Holding the lease's own token does not help: the API token decides.
    let release = send(
        &app,
        CI,
        "POST",
        &format!("{path}/release"),
        Some(json!({"token": token})),
    )
    .await;
    forbidden(release, "db/primary").await;
    let renew = send(
        &app,
        CI,
        "POST",
        &format!("{path}/renew"),
        Some(json!({"token": token})),
    )
    .await;
    forbidden(renew, "db/primary").await;
    forbidden(send(&app, CI, "GET", &path, None).await, "db/primary").await;
    // The lease is untouched.
    assert_eq!(
        send(&app, ADMIN, "GET", &path, None).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        acquire_as(&app, CI, "shared/build").await.status(),
        StatusCode::CREATED
    );
}

async fn a_pool_outside_the_tokens_pools_is_403() {
    let app = spawn_secured().await;
    let cidr = |c: &str| Some(json!({"cidr": c}));
    let put = send(&app, CI, "PUT", "/v1/pools/prod-nets", cidr("10.0.0.0/16")).await;
    forbidden(put, "prod-nets").await;
    let put = send(
        &app,
        ADMIN,
        "PUT",
        "/v1/pools/prod-nets",
        cidr("10.0.0.0/16"),
    )
    .await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let reserve = json!({"holder": "h", "prefix_len": 24});
    let r = send(
        &app,
        CI,
        "POST",
        "/v1/pools/prod-nets/reservations",
        Some(reserve.clone()),
    )
    .await;
    forbidden(r, "its pools are ci-nets").await;
    forbidden(
        send(&app, CI, "GET", "/v1/pools/prod-nets", None).await,
        "prod-nets",
    )
    .await;
    let list = send(&app, CI, "GET", "/v1/pools/prod-nets/reservations", None).await;
    forbidden(list, "prod-nets").await;
    let put = send(&app, CI, "PUT", "/v1/pools/ci-nets", cidr("10.1.0.0/16")).await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let r = send(
        &app,
        CI,
        "POST",
        "/v1/pools/ci-nets/reservations",
        Some(reserve),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn a_read_only_token_reads_and_lists_but_every_write_is_403() {
    let app = spawn_secured().await;
    let held: Value = acquire_as(&app, CI, "ci/job").await.json().await.unwrap();
    let path = format!("/v1/locks/{}", encode("ci/job"));
    assert_eq!(
        send(&app, READER, "GET", &path, None).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        send(&app, READER, "GET", "/v1/locks", None).await.status(),
        StatusCode::OK
    );
    forbidden(acquire_as(&app, READER, "ci/other").await, "read-only").await;
    let release = json!({"token": held["token"]});
    let r = send(
        &app,
        READER,
        "POST",
        &format!("{path}/release"),
        Some(release),
    )
    .await;
    forbidden(r, "read-only").await;
    let put = send(
        &app,
        READER,
        "PUT",
        "/v1/pools/ci-nets",
        Some(json!({"cidr": "10.1.0.0/16"})),
    )
    .await;
    forbidden(put, "read-only").await;
}

async fn only_an_admin_token_force_releases_and_deletes_pools() {
    let app = spawn_secured().await;
    assert_eq!(
        acquire_as(&app, CI, "ci/job").await.status(),
        StatusCode::CREATED
    );
    let put = send(
        &app,
        CI,
        "PUT",
        "/v1/pools/ci-nets",
        Some(json!({"cidr": "10.1.0.0/16"})),
    )
    .await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let r: Value = send(
        &app,
        CI,
        "POST",
        "/v1/pools/ci-nets/reservations",
        Some(json!({"holder": "h", "prefix_len": 24})),
    )
    .await
    .json()
    .await
    .unwrap();
    let lock = format!("/v1/locks/{}", encode("ci/job"));
    let reservation = format!(
        "/v1/pools/ci-nets/reservations/{}",
        r["id"].as_str().unwrap()
    );
    for path in [&lock, &reservation, &"/v1/pools/ci-nets".to_owned()] {
        forbidden(
            send(&app, CI, "DELETE", path, None).await,
            "not an admin token",
        )
        .await;
        forbidden(
            send(&app, READER, "DELETE", path, None).await,
            "not an admin token",
        )
        .await;
    }
    for path in [&lock, &reservation, &"/v1/pools/ci-nets".to_owned()] {
        let response = send(&app, ADMIN, "DELETE", path, None).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT, "{path}");
    }
}

/// Every item of every page, following `next_cursor`, `limit` at a time.
async fn all_pages(app: &TestApp, token: &str, path: &str, field: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut url = format!("{path}{sep}limit=2");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page: Value = send(app, token, "GET", &url, None)
            .await
            .json()
            .await
            .unwrap();
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(items.iter().map(|i| i[field].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return seen,
        }
    }
}

async fn listings_show_only_what_the_token_may_see_page_by_page() {
    let app = spawn_secured().await;
    let keys = [
        "a/1", "ci/1", "ci/2", "ci/3", "ci/4", "ci/5", "cj/1", "db/1", "shared/1", "shared/2",
        "z/1",
    ];
    for key in keys {
        assert_eq!(
            acquire_as(&app, ADMIN, key).await.status(),
            StatusCode::CREATED
        );
    }
    let visible = all_pages(&app, CI, "/v1/locks", "key").await;
    assert_eq!(
        visible,
        [
            "ci/1", "ci/2", "ci/3", "ci/4", "ci/5", "shared/1", "shared/2"
        ]
    );
    assert_eq!(
        all_pages(&app, CI, "/v1/locks?prefix=ci%2F3", "key").await,
        ["ci/3"]
    );
    assert!(all_pages(&app, CI, "/v1/locks?prefix=c", "key").await.len() == 5);
    assert!(
        all_pages(&app, CI, "/v1/locks?prefix=db", "key")
            .await
            .is_empty()
    );
    assert_eq!(all_pages(&app, ADMIN, "/v1/locks", "key").await, keys);

    for (pool, cidr) in [
        ("a-nets", "10.0.0.0/16"),
        ("ci-nets", "10.1.0.0/16"),
        ("z-nets", "10.2.0.0/16"),
    ] {
        let put = send(
            &app,
            ADMIN,
            "PUT",
            &format!("/v1/pools/{pool}"),
            Some(json!({"cidr": cidr})),
        )
        .await;
        assert_eq!(put.status(), StatusCode::CREATED);
    }
    assert_eq!(all_pages(&app, CI, "/v1/pools", "name").await, ["ci-nets"]);
    assert!(all_pages(&app, QUOTA, "/v1/pools", "name").await.is_empty());
    assert_eq!(
        all_pages(&app, READER, "/v1/pools", "name").await,
        ["a-nets", "ci-nets", "z-nets"]
    );
}

crate::harness::tests! {
    a_key_outside_the_tokens_prefixes_is_403_for_every_operation,
    a_pool_outside_the_tokens_pools_is_403,
    a_read_only_token_reads_and_lists_but_every_write_is_403,
    only_an_admin_token_force_releases_and_deletes_pools,
    listings_show_only_what_the_token_may_see_page_by_page,
}
