//! Lock activity by key prefix (`GET /v1/prefixes`): the same buckets as
//! `/metrics` (a key's first path segment, the first `--prefix-stats`
//! seen, the rest as `other`), with the last minute's counts and wait
//! quantiles, for dashboards and the console. A token sees the buckets
//! whose every key it may read.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::leases::activity::waiters_by_prefix;
use crate::telemetry::prefixes::{Counts, OTHER, PrefixFigures};

/// The slots of the last minute.
const MINUTE_SLOTS: usize = 12;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(prefix_activity))
}

/// What a bucket counted: grants, releases (by the holder, a force release,
/// a session's close), expiries (the lease's or its session's) and acquires
/// refused with 409.
#[derive(Debug, Serialize, ToSchema)]
pub struct CountsBody {
    pub grants: u64,
    pub releases: u64,
    pub expiries: u64,
    pub refusals: u64,
}

/// Takes of rate limits whose names fall in a bucket, since this server
/// started: admitted, and denied with 429 (this server's).
#[derive(Debug, Serialize, ToSchema)]
pub struct LimitTakesBody {
    pub takes: u64,
    pub denials: u64,
}

/// One key prefix: counts since this server started and over the last
/// minute, its waiters on this server now, how long the acquires that
/// waited in the last minute waited (null without any), and the takes of
/// rate limits named under it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PrefixBody {
    pub prefix: String,
    pub total: CountsBody,
    pub last_minute: CountsBody,
    pub limits: LimitTakesBody,
    pub waiters: u64,
    #[schema(required = true)]
    pub wait_p50_ms: Option<f64>,
    #[schema(required = true)]
    pub wait_p99_ms: Option<f64>,
}

/// The prefixes in name order (`other` among them).
#[derive(Debug, Serialize, ToSchema)]
pub struct PrefixesBody {
    pub items: Vec<PrefixBody>,
}

fn counts(c: &Counts) -> CountsBody {
    CountsBody {
        grants: c.grants,
        releases: c.releases,
        expiries: c.expiries,
        refusals: c.refusals,
    }
}

fn body(figures: PrefixFigures, waiters: u64) -> PrefixBody {
    let mut minute = Counts::default();
    for slot in &figures.recent {
        minute.grants += slot.grants;
        minute.releases += slot.releases;
        minute.expiries += slot.expiries;
        minute.refusals += slot.refusals;
        minute.waits.resize(slot.waits.len(), 0);
        for (sum, n) in minute.waits.iter_mut().zip(&slot.waits) {
            *sum += n;
        }
    }
    PrefixBody {
        prefix: figures.prefix,
        total: counts(&figures.totals),
        last_minute: counts(&minute),
        limits: LimitTakesBody {
            takes: figures.limit_takes,
            denials: figures.limit_denials,
        },
        waiters,
        wait_p50_ms: minute.wait_quantile_ms(0.5),
        wait_p99_ms: minute.wait_quantile_ms(0.99),
    }
}

/// Lock activity by key prefix, the buckets of `/metrics`: since the start
/// and over the last minute (in complete five-second slots), with this
/// server's waiters. Grants, releases and expiries come from the change
/// log, so on PostgreSQL every replica counts all of them; refusals and
/// waits are this server's.
#[utoipa::path(
    get, path = "/v1/prefixes", operation_id = "getPrefixActivity", tag = "locks",
    responses((status = 200, description = "Activity by key prefix", body = PrefixesBody))
)]
pub async fn prefix_activity(caller: Caller, State(state): State<AppState>) -> Json<PrefixesBody> {
    let leases = &state.leases;
    let waiters = waiters_by_prefix(leases);
    let visible = |name: &str| caller.sees_prefix_bucket(name, OTHER);
    let items = leases
        .prefixes
        .figures(visible, MINUTE_SLOTS)
        .into_iter()
        .map(|f| {
            let waiting = waiters.iter().find(|(p, _)| *p == f.prefix);
            let n = waiting.map_or(0, |(_, n)| *n);
            body(f, n)
        })
        .collect();
    Json(PrefixesBody { items })
}
