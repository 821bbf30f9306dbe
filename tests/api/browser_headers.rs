//! What the server tells a browser about its answers: the pages (`/console`,
//! `/docs`, their files and the icon) run only the server's own files, no
//! inline script or style, and may not be framed or leak a referrer; no
//! answer is sniffed; `/v1` answers, event streams included, are never
//! stored. The pages in a browser, failing on any violation, are
//! `.ci/console_browser.mjs` and `.ci/docs_browser.mjs`.

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use crate::helpers::spawn_app;

fn header<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {headers:?}"))
        .to_str()
        .unwrap()
}

async fn pages_run_only_their_own_files_and_may_not_be_framed() {
    let app = spawn_app().await;
    for path in [
        "/console",
        "/console/console.js",
        "/console/console.css",
        "/docs",
        "/docs/docs.js",
        "/docs/swagger-ui-bundle.js",
        "/favicon.ico",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let headers = r.headers();
        let policy = header(headers, "content-security-policy");
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
        ] {
            assert!(policy.contains(directive), "{path}: {policy}");
        }
        assert!(!policy.contains("unsafe"), "{path}: {policy}");
        assert_eq!(header(headers, "x-content-type-options"), "nosniff");
        assert_eq!(header(headers, "referrer-policy"), "no-referrer");
    }
}

async fn the_pages_hold_no_inline_script_or_style_and_link_the_icon() {
    let app = spawn_app().await;
    for page in ["/console", "/docs"] {
        let html = app.get(page).await.text().await.unwrap();
        for tag in html.split("<script").skip(1) {
            let open = tag.split('>').next().unwrap();
            assert!(
                open.contains("src="),
                "{page}: an inline script: <script{open}>"
            );
        }
        assert!(!html.contains("<style"), "{page}");
        assert!(!html.contains(" style="), "{page}");
        assert!(html.contains("href=\"favicon.ico\""), "{page}");
    }
}

async fn the_icon_is_an_image() {
    let app = spawn_app().await;
    let r = app.get("/favicon.ico").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    assert!(r.text().await.unwrap().starts_with("<svg"));
}

async fn api_answers_are_never_stored() {
    let app = spawn_app().await;
    let acquire = app.acquire("cached/k", "h", 60_000).await;
    assert_eq!(acquire.status(), StatusCode::CREATED);
    let answers = [
        acquire,
        app.get("/v1/status").await,
        app.get("/v1/locks/cached%2Fk").await,
        app.get("/v1/locks/cached%2Fnone").await,
        app.get("/v1/events?wait_ms=0").await,
        app.client
            .get(app.url("/v1/events"))
            .header("Accept", "text/event-stream")
            .send()
            .await
            .unwrap(),
        app.get("/metrics").await,
    ];
    for r in answers {
        let what = r.url().path().to_owned();
        assert_eq!(header(r.headers(), "cache-control"), "no-store", "{what}");
        assert_eq!(header(r.headers(), "x-content-type-options"), "nosniff");
    }
}

crate::harness::tests! {
    pages_run_only_their_own_files_and_may_not_be_framed,
    the_pages_hold_no_inline_script_or_style_and_link_the_icon,
    the_icon_is_an_image,
    api_answers_are_never_stored,
}
