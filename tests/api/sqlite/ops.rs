//! Health, readiness, the served OpenAPI document and the docs page.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{problem, spawn_app};

async fn health_and_readiness_answer() {
    let app = spawn_app().await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), StatusCode::OK);
    let ready: Value = app.get("/readyz").await.json().await.unwrap();
    assert_eq!(ready["status"], "ready");
}

async fn the_served_spec_is_the_generated_one() {
    let app = spawn_app().await;
    let served: Value = app.get("/openapi.json").await.json().await.unwrap();
    assert_eq!(
        served,
        serde_json::to_value(leasehold::api::openapi()).unwrap()
    );
}

async fn the_docs_page_is_swagger_ui_served_whole_from_the_binary() {
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
    let files: Vec<&str> = page
        .split(['"', '\''])
        .filter(|s| s.starts_with("docs/"))
        .collect();
    assert!(files.contains(&"docs/swagger-ui-bundle.js"), "{files:?}");
    assert!(files.contains(&"docs/swagger-ui.css"), "{files:?}");
    // The page holds no script of its own (its Content-Security-Policy allows
    // none inline): a file of this server starts Swagger UI.
    assert!(files.contains(&"docs/docs.js"), "{files:?}");
    let start = app.get("/docs/docs.js").await.text().await.unwrap();
    assert!(
        start.contains("SwaggerUIBundle("),
        "docs.js starts Swagger UI"
    );
    // Each file the page names comes from this server, with its type.
    for file in files {
        let asset = app.get(&format!("/{file}")).await;
        assert_eq!(asset.status(), StatusCode::OK, "{file}");
        let kind = asset.headers()["content-type"].to_str().unwrap().to_owned();
        let expected = match file.rsplit('.').next() {
            Some("js") => "javascript",
            Some("css") => "text/css",
            _ => "image/png",
        };
        assert!(kind.contains(expected), "{file}: {kind}");
        assert!(!asset.bytes().await.unwrap().is_empty(), "{file}");
    }
    for external in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "href=\"//",
        "@import",
    ] {
        assert!(
            !page.contains(external),
            "the page loads nothing from elsewhere ({external})"
        );
    }
}

async fn a_file_the_docs_page_does_not_have_is_404() {
    let app = spawn_app().await;
    for path in [
        "/docs/nope.js",
        "/docs/index.html",
        "/docs/swagger-initializer.js",
    ] {
        problem(app.get(path).await, StatusCode::NOT_FOUND, "not-found").await;
    }
}

/// Makes files immutable (`chattr +i`), which stops writes even by root, and
/// makes them writable again when dropped.
struct Immutable(Vec<std::path::PathBuf>);

impl Immutable {
    fn set(paths: Vec<std::path::PathBuf>) -> Option<Self> {
        // Each path joins the guard once frozen, so a partial failure thaws it.
        let mut frozen = Self(Vec::new());
        for path in paths {
            let status = std::process::Command::new("chattr")
                .arg("+i")
                .arg(&path)
                .status()
                .ok()?;
            if !status.success() {
                return None;
            }
            frozen.0.push(path);
        }
        Some(frozen)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(path)
                .status();
        }
    }
}

async fn readiness_fails_while_the_database_cannot_be_written_and_recovers() {
    let app = spawn_app().await;
    assert_eq!(app.get("/readyz").await.status(), StatusCode::OK);
    let kept = app.must_acquire("ready/before", "node-1", 60_000).await;
    // The database and its write-ahead log; the -shm index stays writable
    // (SQLite maps it into memory).
    let wal = app.db.with_extension("db-wal");
    assert!(wal.exists(), "the database runs in WAL mode");
    let frozen = Immutable::set(vec![app.db.clone(), wal]).expect(
        "this test makes the database immutable with chattr +i, which needs root \
         (CAP_LINUX_IMMUTABLE) on ext4 or xfs; run the tests as root as CI does",
    );
    let body = problem(
        app.get("/readyz").await,
        StatusCode::SERVICE_UNAVAILABLE,
        "storage-unavailable",
    )
    .await;
    assert!(body["detail"].is_string(), "{body}");
    // Writes fail the same way; the process stays alive.
    let write = app.acquire("ready/while-frozen", "node-1", 60_000).await;
    problem(
        write,
        StatusCode::SERVICE_UNAVAILABLE,
        "storage-unavailable",
    )
    .await;
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    // Reads keep working.
    let read: Value = app
        .get("/v1/locks/ready%2Fbefore")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(read["fencing_token"], kept["fencing_token"]);
    assert_eq!(app.get("/v1/locks").await.status(), StatusCode::OK);

    drop(frozen);
    // Write transactions work again at once.
    app.must_acquire("ready/after-thaw", "node-1", 60_000).await;
    let fresh = app
        .must_acquire("ready/while-frozen", "node-1", 60_000)
        .await;
    assert_eq!(fresh["holder"], "node-1");
    // Readiness follows within seconds of the last refused write.
    let thawed = std::time::Instant::now();
    while app.get("/readyz").await.status() != StatusCode::OK {
        assert!(
            thawed.elapsed() < std::time::Duration::from_secs(10),
            "never ready again"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

crate::harness::tests! {
    health_and_readiness_answer,
    the_served_spec_is_the_generated_one,
    the_docs_page_is_swagger_ui_served_whole_from_the_binary,
    a_file_the_docs_page_does_not_have_is_404,
    readiness_fails_while_the_database_cannot_be_written_and_recovers,
}
