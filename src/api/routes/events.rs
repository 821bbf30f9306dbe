//! `GET /v1/events`: the change log, as a server-sent event stream for a
//! client that accepts `text/event-stream`, else as one JSON long-poll page
//! (so that a generated SDK, or a fuzzer, is answered and done).

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::EventRefusals;
use crate::api::problems::Problem;
use crate::api::problems::kinds;
use crate::api::problems::storage_problem;
use crate::auth::Need;
use crate::domain::Revision;
use crate::domain::events::{Event, EventFilter, Resource};
use crate::domain::fencing::FencingToken;
use crate::domain::names::{GroupName, PoolName};
use crate::domain::time::Now;
use crate::domain::validate;
use crate::leases::events::Ended;
use crate::leases::{Watch, WatchError};

/// How often an idle stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The page size of a long-poll that names none.
const DEFAULT_LIMIT: u32 = 100;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(watch_events))
}

/// What a watcher asks for. Unknown parameters are refused.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Only lock events of keys that start with this text.
    pub prefix: Option<String>,
    /// Only reservation events of this pool. With none of `prefix`, `pool`
    /// and `group`, every event in the caller's scope.
    pub pool: Option<String>,
    /// Only events of this group and its members.
    pub group: Option<String>,
    /// Every event after this revision (`Last-Event-ID` wins over it); none:
    /// from now on.
    #[param(value_type = Option<i64>, minimum = 0)]
    pub since: Option<Revision>,
    /// JSON page only: at most this many events, 1 to the server's page bound
    /// (default 100).
    #[param(minimum = 1)]
    pub limit: Option<u32>,
    /// JSON page only: wait this long for a first event (default 0), bounded
    /// by the server's longest wait. Only a page at the newest revision
    /// waits: one that reads history answers at once.
    #[param(minimum = 0)]
    pub wait_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    #[serde(rename = "lock.acquired")]
    LockAcquired,
    #[serde(rename = "lock.released")]
    LockReleased,
    #[serde(rename = "reservation.reserved")]
    ReservationReserved,
    #[serde(rename = "reservation.confirmed")]
    ReservationConfirmed,
    #[serde(rename = "reservation.released")]
    ReservationReleased,
    #[serde(rename = "session.opened")]
    SessionOpened,
    #[serde(rename = "session.ended")]
    SessionEnded,
    #[serde(rename = "lock.updated")]
    LockUpdated,
    #[serde(rename = "reservation.updated")]
    ReservationUpdated,
    #[serde(rename = "group.created")]
    GroupCreated,
    #[serde(rename = "group.deleted")]
    GroupDeleted,
    #[serde(rename = "group.member_joined")]
    GroupMemberJoined,
    #[serde(rename = "group.member_updated")]
    GroupMemberUpdated,
    #[serde(rename = "group.member_left")]
    GroupMemberLeft,
    #[serde(rename = "limit.changed")]
    LimitChanged,
    #[serde(rename = "limit.deleted")]
    LimitDeleted,
    #[serde(rename = "capacity.changed")]
    CapacityChanged,
    #[serde(rename = "capacity.deleted")]
    CapacityDeleted,
}

/// Why a lease or a session ended.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    Released,
    Expired,
    ForceReleased,
    SessionClosed,
    SessionExpired,
    Left,
    Removed,
    LifetimeEnded,
}

/// One change: the `data` of an SSE event, an item of a JSON page.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventBody {
    /// Its place in the change log: one counter for the whole store, strictly
    /// increasing; the SSE `id`.
    #[schema(value_type = i64)]
    pub revision: Revision,
    /// The SSE `event`.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// When the change was recorded.
    pub at: String,
    /// The lock key (lock events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub key: Option<String>,
    /// The pool (reservation events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pool: Option<String>,
    /// The reservation id (reservation events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub id: Option<String>,
    /// The reserved subnet (reservation events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub subnet: Option<String>,
    /// The group (group events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub group: Option<String>,
    /// The member (`group.member_*` events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub member: Option<String>,
    /// The rate limit (`limit.*` events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub limit: Option<String>,
    pub holder: String,
    /// The lease's fencing token (lock and reservation events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, value_type = Option<i64>)]
    pub fencing_token: Option<FencingToken>,
    /// The session the lease is bound to, or the session itself (session events).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub session: Option<String>,
    /// Why it ended (`lock.released`, `reservation.released`, `session.ended`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reason: Option<EndReason>,
}

/// One long-poll page of the change log.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventPage {
    pub items: Vec<EventBody>,
    /// What to pass as `since` next: past every event this page examined,
    /// which may be past its last item (or ahead with no item at all: a page
    /// examines a bounded number of rows however few the caller may see).
    /// One counter for the whole store: it tells how many changes happened,
    /// never what or whose.
    #[schema(value_type = i64)]
    pub next_revision: Revision,
}

impl EventBody {
    pub(super) fn new(event: &Event, now: Now) -> Self {
        use crate::domain::events::{EventType as T, Reason as R};
        let kind = match event.kind {
            T::LockAcquired => EventKind::LockAcquired,
            T::LockReleased => EventKind::LockReleased,
            T::ReservationReserved => EventKind::ReservationReserved,
            T::ReservationConfirmed => EventKind::ReservationConfirmed,
            T::ReservationReleased => EventKind::ReservationReleased,
            T::SessionOpened => EventKind::SessionOpened,
            T::SessionEnded => EventKind::SessionEnded,
            T::LockUpdated => EventKind::LockUpdated,
            T::ReservationUpdated => EventKind::ReservationUpdated,
            T::GroupCreated => EventKind::GroupCreated,
            T::GroupDeleted => EventKind::GroupDeleted,
            T::GroupMemberJoined => EventKind::GroupMemberJoined,
            T::GroupMemberUpdated => EventKind::GroupMemberUpdated,
            T::GroupMemberLeft => EventKind::GroupMemberLeft,
            T::LimitChanged => EventKind::LimitChanged,
            T::LimitDeleted => EventKind::LimitDeleted,
            T::CapacityChanged => EventKind::CapacityChanged,
            T::CapacityDeleted => EventKind::CapacityDeleted,
        };
        let reason = event.reason.map(|r| match r {
            R::Released => EndReason::Released,
            R::Expired => EndReason::Expired,
            R::ForceReleased => EndReason::ForceReleased,
            R::SessionClosed => EndReason::SessionClosed,
            R::SessionExpired => EndReason::SessionExpired,
            R::Left => EndReason::Left,
            R::Removed => EndReason::Removed,
            R::LifetimeEnded => EndReason::LifetimeEnded,
        });
        let (mut key, mut pool, mut id, mut subnet) = (None, None, None, None);
        let (mut group, mut member, mut limit) = (None, None, None);
        match &event.resource {
            Resource::Lock { key: k } => key = Some(k.clone()),
            Resource::Reservation {
                pool: p,
                id: i,
                subnet: s,
            } => {
                pool = Some(p.clone());
                id = Some(i.clone());
                subnet = Some(s.clone());
            }
            Resource::Session => {}
            Resource::Group { name, member: m } => {
                group = Some(name.clone());
                member = m.clone();
            }
            Resource::Limit { name } => limit = Some(name.clone()),
        }
        Self {
            revision: event.revision,
            kind,
            at: now.show(event.at),
            key,
            pool,
            id,
            subnet,
            group,
            member,
            limit,
            holder: event.holder.clone(),
            fencing_token: event.fencing_token,
            session: event.session.clone(),
            reason,
        }
    }
}

/// A revision given as `since` or `Last-Event-ID`.
fn revision(field: &str, text: &str) -> Result<Revision, Problem> {
    text.trim()
        .parse::<i64>()
        .ok()
        .filter(|r| *r >= 0)
        .map(Revision::new)
        .ok_or_else(|| Problem::invalid(field, "must be a revision: an integer of 0 or more"))
}

/// The query, each parameter checked and named when it is wrong.
fn parse_query(pairs: Vec<(String, String)>) -> Result<EventsQuery, Problem> {
    let mut query = EventsQuery::default();
    for (name, value) in pairs {
        let number = |what: &str| Problem::invalid(&name, format!("must be {what}"));
        match name.as_str() {
            "prefix" => {
                validate::key_prefix(&value)?;
                query.prefix = Some(value);
            }
            "pool" => query.pool = Some(PoolName::parse(value)?.into_string()),
            "group" => query.group = Some(GroupName::parse(value)?.into_string()),
            "since" => query.since = Some(revision("since", &value)?),
            "limit" => {
                let limit = value.parse::<u32>().ok().filter(|n| *n >= 1);
                query.limit = Some(limit.ok_or_else(|| number("an integer of 1 or more"))?);
            }
            "wait_ms" => {
                let wait = value.parse::<i64>().ok().filter(|n| *n >= 0);
                query.wait_ms = Some(wait.ok_or_else(|| number("an integer of 0 or more"))?);
            }
            _ => {
                return Err(Problem::invalid(
                    &name,
                    "is not a parameter of this route (prefix, pool, group, since, limit, wait_ms)",
                ));
            }
        }
    }
    Ok(query)
}

fn watch_problem(error: WatchError) -> Problem {
    match error {
        WatchError::Compacted { oldest } => Problem::of(
            &kinds::HISTORY_COMPACTED,
            format!(
                "the events before revision {oldest} are pruned; resume from a fresh list of \
                 what you watch"
            ),
        )
        .with("oldest_revision", oldest.get()),
        // The newest revision counts every tenant's changes: not told.
        WatchError::Future { since } => Problem::invalid(
            "since",
            format!("revision {since} is past the newest revision"),
        ),
        WatchError::Overloaded(reason) => Problem::overloaded(reason),
        WatchError::Store(e) => storage_problem(e),
    }
}

fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("text/event-stream"))
}

/// Watch the change log.
///
/// Answers `text/event-stream` (SSE) when the request accepts it: each
/// change is an event whose `id` is its revision, `event` its type and
/// `data` the JSON below; a comment every 15 s keeps it open. Reconnect with
/// `Last-Event-ID` (or `?since=`) to get every event after it, in order. A
/// client too slow for its buffer has its stream ended; it resumes the same
/// way. Any other request is answered one JSON page (`since`, `limit`,
/// `wait_ms`). Events outside the caller's token scope are never sent.
///
/// A page of history examines at most the server's `--event-scan-rows`
/// events, however few of them the caller may see, and answers at once
/// what it found with a `next_revision` past what it examined (even with
/// `wait_ms`, even empty); a page waits only at the newest revision.
/// Reads of history take turns: a page, or a stream catching up, waits its
/// turn for each page, fairly among one client's readers and across
/// clients. Only a saturated server refuses a new one (503 `overloaded`,
/// `reason` `history_reads`, or `client_history_reads` past one client's
/// share of the readers).
#[utoipa::path(
    get, path = "/v1/events", operation_id = "watchEvents", tag = "events",
    params(
        EventsQuery,
        ("Last-Event-ID" = Option<String>, Header,
            description = "The last revision seen: resume after it (wins over `since`)"),
    ),
    responses(
        (status = 200, description = "The events after `since`, as a stream or a page",
            content(
                (EventPage = "application/json"),
                (EventBody = "text/event-stream"),
            )),
        EventRefusals,
    )
)]
pub async fn watch_events(
    caller: Caller,
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, Problem> {
    let pairs = query
        .map(|Query(pairs)| pairs)
        .map_err(|e| Problem::invalid("query", e.body_text()))?;
    let query = parse_query(pairs)?;
    let mut since = query.since;
    if let Some(last) = headers.get("last-event-id") {
        let text = last
            .to_str()
            .map_err(|_| Problem::invalid("Last-Event-ID", "must be a revision"))?;
        since = Some(revision("Last-Event-ID", text)?);
    }
    if let Some(prefix) = &query.prefix
        && let Caller::Token(grant) = &caller
        && grant.visible_prefixes(prefix).is_empty()
    {
        caller.lock(prefix, Need::Read)?;
    }
    if let Some(pool) = &query.pool {
        caller.pool(pool, Need::Read)?;
    }
    if let Some(group) = &query.group {
        caller.group(group, Need::Read)?;
    }
    let stream = wants_stream(&headers);
    let limits = state.leases.limits;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if limit > limits.max_page {
        return Err(Problem::invalid(
            "limit",
            format!("must be at most {}", limits.max_page),
        ));
    }
    let wait_ms = query.wait_ms.unwrap_or(0);
    if wait_ms > limits.max_wait_ms.as_millis() {
        return Err(Problem::invalid(
            "wait_ms",
            format!("must be at most {}", limits.max_wait_ms),
        ));
    }
    let slot = state
        .leases
        .admission
        .watch()
        .map_err(Problem::overloaded)?;
    let filter = EventFilter {
        prefix: query.prefix,
        pool: query.pool,
        group: query.group,
    };
    let selection = caller.selection(&filter);
    let leases = &state.leases;
    let watch = leases
        .events
        .watch(since, filter, selection, slot, &leases.admission)
        .await
        .map_err(watch_problem)?;
    if stream {
        return Ok(sse(state, watch).into_response());
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms as u64);
    Ok(Json(page(&state, watch, limit as usize, deadline).await).into_response())
}

/// One page: what one bounded read of history finds (answered at once,
/// with a `next_revision` past what it examined, unless it reached the
/// newest revision without a match), or else the first events that come
/// before `deadline`.
async fn page(
    state: &AppState,
    mut watch: Watch,
    limit: usize,
    deadline: tokio::time::Instant,
) -> EventPage {
    let mut items = Vec::new();
    if watch.in_history() {
        let found = watch.history(limit).await.unwrap_or_default();
        items.extend(
            found
                .iter()
                .map(|e| EventBody::new(e, state.leases.moment())),
        );
        if watch.in_history() || items.len() >= limit {
            return EventPage {
                items,
                next_revision: watch.last(),
            };
        }
    }
    let mut stopping = state.leases.stopping();
    while items.len() < limit {
        // Once something is found, only what is there already joins it.
        let until = if items.is_empty() {
            deadline
        } else {
            tokio::time::Instant::now()
        };
        let next = tokio::select! {
            next = watch.next(Some(until)) => next,
            _ = stopping.wait_for(|s| *s) => break,
        };
        match next {
            Ok(Some(event)) => items.push(EventBody::new(&event, state.leases.moment())),
            Ok(None) | Err(_) => break,
        }
    }
    EventPage {
        items,
        next_revision: watch.last(),
    }
}

fn sse(
    state: AppState,
    watch: Watch,
) -> Sse<impl futures::Stream<Item = Result<SseEvent, Infallible>>> {
    let stopping = state.leases.stopping();
    let stream = futures::stream::unfold(
        (watch, stopping, state),
        |(mut watch, mut stopping, state)| async move {
            let next = tokio::select! {
                next = watch.next(None) => next,
                _ = stopping.wait_for(|s| *s) => return None,
            };
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) | Err(Ended::Closed) => return None,
                Err(Ended::TooSlow) => {
                    tracing::info!(
                        events.last = watch.last().get(),
                        "event stream ended: the client read too slowly"
                    );
                    return None;
                }
            };
            let body = EventBody::new(&event, state.leases.moment());
            let data = serde_json::to_string(&body).unwrap_or_default();
            let sse = SseEvent::default()
                .id(event.revision.to_string())
                .event(event.kind.as_str())
                .data(data);
            Some((Ok(sse), (watch, stopping, state)))
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}
