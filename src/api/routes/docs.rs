//! The API reference at `/docs`: Swagger UI, its files compiled into the
//! binary (the `utoipa-swagger-ui` crate takes them from a vendored crate at
//! build time, so neither the build nor the page reaches the network). The
//! page reads `/openapi.json` and sends "try it out" requests to the server
//! that served it, with the bearer token entered under "Authorize".

use std::sync::{Arc, LazyLock};

use axum::extract::Path;
use axum::http::header;
use axum::response::IntoResponse;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::Config;

use crate::api::AppState;
use crate::api::problems::Problem;
use crate::api::problems::kinds;

/// The Swagger UI files the page loads; any other name is 404.
const ASSETS: [&str; 2] = ["swagger-ui.css", "swagger-ui-bundle.js"];

/// The page's own files: its start and its rules, files rather than inline
/// (the page's Content-Security-Policy runs no inline script or style).
const OWN: [(&str, &str, &str); 2] = [
    (
        "docs.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/docs.js"),
    ),
    (
        "docs.css",
        "text/css; charset=utf-8",
        include_str!("../../../assets/docs.css"),
    ),
];

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(docs))
        .routes(routes!(docs_asset))
}

/// The API reference: every operation with its parameters, schemas, bounds
/// and problems, and "try it out" against this server. Served from the
/// binary, no external assets; needs no token, as `/openapi.json`.
#[utoipa::path(get, path = "/docs", operation_id = "getDocs", tag = "operations",
    responses((status = 200, description = "The API reference page (Swagger UI)", body = String, content_type = "text/html")))]
pub async fn docs() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("../../../assets/docs.html"),
    )
}

/// A script or style sheet of the `/docs` page.
#[utoipa::path(get, path = "/docs/{file}", operation_id = "getDocsAsset", tag = "operations",
    params(("file" = String, Path, description = "A file of the page", example = "swagger-ui-bundle.js")),
    responses(
        (status = 200, description = "The file", content(
            (String = "text/javascript"),
            (String = "text/css"),
        )),
        (status = 404, description = "`not-found`: the page has no such file", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn docs_asset(Path(file): Path<String>) -> Result<impl IntoResponse, Problem> {
    // `serve` only formats its configuration into Swagger UI's own start-up
    // script, which the page replaces with its own.
    static CONFIG: LazyLock<Arc<Config<'static>>> =
        LazyLock::new(|| Arc::new(Config::from("openapi.json")));
    let missing = || {
        Problem::of(
            &kinds::NOT_FOUND,
            format!("the docs page has no file {file}"),
        )
    };
    if let Some((_, content_type, text)) = OWN.iter().find(|(name, _, _)| *name == file) {
        let content_type = (*content_type).to_owned();
        return Ok((
            [(header::CONTENT_TYPE, content_type)],
            text.as_bytes().to_vec(),
        ));
    }
    if !ASSETS.contains(&file.as_str()) {
        return Err(missing());
    }
    let asset = utoipa_swagger_ui::serve(&file, CONFIG.clone())
        .map_err(Problem::internal)?
        .ok_or_else(missing)?;
    Ok((
        [(header::CONTENT_TYPE, asset.content_type)],
        asset.bytes.into_owned(),
    ))
}
