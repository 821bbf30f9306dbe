//! Health, readiness, the served OpenAPI document and the docs page.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::spawn_app;

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = spawn_app().await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), StatusCode::OK);
    let ready: Value = app.get("/readyz").await.json().await.unwrap();
    assert_eq!(ready["status"], "ready");
}

#[tokio::test]
async fn the_served_spec_is_the_generated_one() {
    let app = spawn_app().await;
    let served: Value = app.get("/openapi.json").await.json().await.unwrap();
    assert_eq!(
        served,
        serde_json::to_value(leasehold::api::openapi()).unwrap()
    );
}

#[tokio::test]
async fn the_docs_page_is_self_contained_and_names_every_operation() {
    let app = spawn_app().await;
    let response = app.get("/docs").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = response.text().await.unwrap();
    for id in [
        "acquireLock",
        "renewLock",
        "releaseLock",
        "getLock",
        "listLocks",
        "forceReleaseLock",
    ] {
        assert!(page.contains(id), "{id} is on the page");
    }
    for external in ["src=\"http", "href=\"http", "@import", "cdn."] {
        assert!(
            !page.contains(external),
            "the page loads nothing from elsewhere ({external})"
        );
    }
}
