//! The console at `/console`: pages for operators (who holds, who waits,
//! which subnets are taken, who is a member, live from the event stream), written with the project as plain files
//! (`assets/console/`) and compiled into the binary, so neither the build
//! nor the page reaches the network. The page itself needs no token; it
//! signs in with one, as `/docs` does, and shows what that token may read.

use axum::extract::Path;
use axum::http::header;
use axum::response::IntoResponse;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::AppState;
use crate::api::problems::Problem;
use crate::api::problems::kinds;

/// The page's files, by name, with their content type.
const ASSETS: [(&str, &str, &str); 11] = [
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/console.js"),
    ),
    (
        "util.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/util.js"),
    ),
    (
        "locks.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/locks.js"),
    ),
    (
        "sessions.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/sessions.js"),
    ),
    (
        "map.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/map.js"),
    ),
    (
        "pools.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/pools.js"),
    ),
    (
        "groups.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/groups.js"),
    ),
    (
        "limits.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/limits.js"),
    ),
    (
        "events.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/events.js"),
    ),
    (
        "charts.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../assets/console/charts.js"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("../../../assets/console/console.css"),
    ),
];

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(console))
        .routes(routes!(console_asset))
        .routes(routes!(favicon))
}

/// The console: an overview, locks by prefix and each key's holders and
/// queue, pools drawn as maps with their reservations, groups and their
/// members, sessions, rate limits with what each has now and its prefix's
/// denials per second, a tail of the event stream, and the admin's force
/// release, force close and limit deletion, live from the event stream. Served from the binary, no external
/// assets; the page needs no token and signs in with one.
#[utoipa::path(get, path = "/console", operation_id = "getConsole", tag = "operations",
    responses((status = 200, description = "The console page", body = String, content_type = "text/html")))]
pub async fn console() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("../../../assets/console/index.html"),
    )
}

/// A script or style sheet of the console.
#[utoipa::path(get, path = "/console/{file}", operation_id = "getConsoleAsset", tag = "operations",
    params(("file" = String, Path, description = "A file of the page", example = "console.js")),
    responses(
        (status = 200, description = "The file", content(
            (String = "text/javascript"),
            (String = "text/css"),
        )),
        (status = 404, description = "`not-found`: the console has no such file", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn console_asset(Path(file): Path<String>) -> Result<impl IntoResponse, Problem> {
    let (_, content_type, text) = ASSETS
        .iter()
        .find(|(name, _, _)| *name == file)
        .ok_or_else(|| Problem::of(&kinds::NOT_FOUND, format!("the console has no file {file}")))?;
    Ok(([(header::CONTENT_TYPE, *content_type)], *text))
}

/// The icon of the console and of `/docs` (SVG), where browsers look for it.
#[utoipa::path(get, path = "/favicon.ico", operation_id = "getFavicon", tag = "operations",
    responses((status = 200, description = "The icon", body = String, content_type = "image/svg+xml")))]
pub async fn favicon() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        include_str!("../../../assets/console/favicon.svg"),
    )
}
