//! Operations routes: liveness, readiness, metrics, the OpenAPI document.

use std::sync::OnceLock;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{MetricsRefusals, StorageRefusals};
use crate::api::problems::Problem;
use crate::leases::Leases;
use crate::leases::admission::SHED_REASONS;
use crate::store::LiveLeases;
use crate::telemetry::{ProcessStats, Snapshot};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics))
        .routes(routes!(openapi_json))
        .routes(routes!(openapi_30_json))
}

/// The OpenAPI document as JSON text, built once.
fn spec_json() -> &'static str {
    static SPEC: OnceLock<String> = OnceLock::new();
    SPEC.get_or_init(|| {
        serde_json::to_string(&crate::api::openapi()).expect("the document serialises")
    })
}

/// Its 3.0.3 rendering as JSON text, built once.
fn spec_30_json() -> &'static str {
    static SPEC: OnceLock<String> = OnceLock::new();
    SPEC.get_or_init(|| {
        serde_json::to_string(&crate::api::openapi_30()).expect("the document serialises")
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// `ok` or `ready`.
    pub status: String,
}

/// The process answers.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations",
    responses((status = 200, description = "Alive", body = Status)))]
pub async fn healthz() -> Json<Status> {
    Json(Status {
        status: "ok".into(),
    })
}

/// How long a write refused for storage keeps the server not ready, though a
/// small write (such as the probe's own) may still fit on a nearly full disk.
const UNREADY_AFTER_STORAGE_FAILURE: Duration = Duration::from_secs(3);

/// How long readiness waits for the database's answer.
const READY_WITHIN: Duration = Duration::from_millis(900);

/// The database takes a write, no write was refused for storage in the last
/// 3 seconds, and the database file was never found damaged.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready", body = Status),
        StorageRefusals,
    ))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Status>, Problem> {
    let leases = &state.leases;
    // A probe answers within a second, however long the database makes
    // requests wait.
    tokio::time::timeout(READY_WITHIN, leases.store.record_alive(leases.now()))
        .await
        .map_err(|_| Problem::unavailable("the database did not take a write within a second"))?
        .map_err(Problem::unavailable)?;
    let stats = leases.store.stats();
    if stats.damaged() {
        let mut problem = Problem::unavailable("the database file is damaged");
        problem.detail = "the database file is damaged: restore it from a backup \
                          (`leasehold check` lists the problems)"
            .into();
        return Err(problem);
    }
    if stats.storage_failed_within(UNREADY_AFTER_STORAGE_FAILURE) {
        return Err(Problem::unavailable(
            "a write was refused for storage in the last seconds",
        ));
    }
    Ok(Json(Status {
        status: "ready".into(),
    }))
}

/// Prometheus metrics in text format.
///
/// With an auth file, for a metrics token (`"metrics": true`) or an admin
/// of every key only: the series count every tenant's activity.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations",
    responses(
        (status = 200, description = "Prometheus text exposition", body = String, content_type = "text/plain"),
        MetricsRefusals,
    ))]
pub async fn metrics(
    caller: Caller,
    State(state): State<AppState>,
) -> Result<impl IntoResponse, Problem> {
    caller.metrics()?;
    let live = state
        .leases
        .store
        .live_leases(state.leases.now())
        .await
        .map_err(Problem::unavailable)?;
    let text = state.leases.metrics.render(&snapshot(&state.leases, live));
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    ))
}

/// The service's gauges at this moment, for the exposition.
fn snapshot(leases: &Leases, live: LiveLeases) -> Snapshot<'_> {
    let waiters = leases.waiters.stats();
    let admission = &leases.admission;
    Snapshot {
        waiters: waiters.waiters,
        waiter_keys: waiters.keys,
        shed: SHED_REASONS
            .iter()
            .map(|r| (r.as_str(), admission.shed(*r)))
            .collect(),
        watchers: admission.watchers(),
        slow_watchers_ended: leases.events.slow_ended(),
        history_reads: admission.history_reads(),
        history_waiting: admission.history_waiting(),
        history_readers: admission.history_readers(),
        in_flight: admission.in_flight(),
        clients_in_flight: admission.clients_in_flight(),
        live_locks: live.locks,
        live_sessions: live.sessions,
        bound_leases: live.bound,
        live_reservations: live.reservations,
        store: leases.store.stats(),
        wall_offset_ms: leases.clock.wall_offset().as_millis(),
        process: ProcessStats::read(),
        prefixes: &leases.prefixes,
        prefix_waiters: crate::leases::activity::waiters_by_prefix(leases),
    }
}

/// An OpenAPI 3.1 document.
// Only its schema is used: the document is served as `spec_json` renders it.
#[derive(ToSchema)]
#[allow(dead_code)]
struct OpenApiDocument {
    /// The OpenAPI version: `3.1.0` (`3.0.3` from `/openapi-3.0.json`).
    openapi: String,
    info: Map<String, Value>,
    paths: Map<String, Value>,
    #[schema(nullable = false)]
    components: Option<Map<String, Value>>,
}

/// This OpenAPI document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "getOpenApi", tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = OpenApiDocument)))]
pub async fn openapi_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], spec_json())
}

/// This OpenAPI document rendered as 3.0.3.
///
/// For generators that read only 3.0: null types as `nullable`, `const` as
/// one-value enums, the same operations and schemas.
#[utoipa::path(get, path = "/openapi-3.0.json", operation_id = "getOpenApi30", tag = "operations",
    responses((status = 200, description = "The OpenAPI document as 3.0.3", body = OpenApiDocument)))]
pub async fn openapi_30_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], spec_30_json())
}
