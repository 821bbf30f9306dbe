//! The console's files as the server serves them: the page, its script and
//! style sheet with their types, the modules the script imports, every file
//! referenced from this server alone; any other name is a 404 problem. (The
//! page in a browser is `.ci/console_browser.mjs`.)

use reqwest::StatusCode;

use crate::helpers::{problem, spawn_app};

async fn the_console_and_its_files_come_from_the_server_itself() {
    let app = spawn_app().await;
    let page = app.get("/console").await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let html = page.text().await.unwrap();
    for (file, kind) in [
        ("console.js", "text/javascript; charset=utf-8"),
        ("console.css", "text/css; charset=utf-8"),
    ] {
        assert!(html.contains(&format!("\"console/{file}\"")), "{file}");
        let r = app.get(&format!("/console/{file}")).await;
        assert_eq!(r.status(), StatusCode::OK, "{file}");
        assert_eq!(r.headers()["content-type"], kind, "{file}");
    }
    // Every module the script imports, and theirs, is served as a script;
    // no address of another origin in the page or any of its files.
    let mut texts = vec![html];
    let mut modules = vec!["console.js".to_string()];
    let mut seen = 0;
    while seen < modules.len() {
        let r = app.get(&format!("/console/{}", modules[seen])).await;
        assert_eq!(r.status(), StatusCode::OK, "{}", modules[seen]);
        assert_eq!(
            r.headers()["content-type"],
            "text/javascript; charset=utf-8"
        );
        let script = r.text().await.unwrap();
        for import in script.split("from \"./").skip(1) {
            let name = import.split('"').next().unwrap().to_string();
            if !modules.contains(&name) {
                modules.push(name);
            }
        }
        texts.push(script);
        seen += 1;
    }
    assert!(
        modules.len() > 1,
        "the script imports its pages: {modules:?}"
    );
    for text in &texts {
        assert!(!text.contains("http://") && !text.contains("https://"));
    }
    let r = app.get("/console/other.js").await;
    let body = problem(r, StatusCode::NOT_FOUND, "not-found").await;
    assert!(
        body["detail"].as_str().unwrap().contains("other.js"),
        "{body}"
    );
}

crate::harness::tests! {
    the_console_and_its_files_come_from_the_server_itself,
}
