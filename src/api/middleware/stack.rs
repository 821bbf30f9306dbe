//! The middleware every route runs under, as one layer.
//!
//! From the outside in: the request id (`request_id`), the request's log span
//! (tower-http's `TraceLayer`), CORS when it is on (`cors`), then `Guard`,
//! which counts and logs the request (`requests`), holds it to the hosts the
//! server answers (`hosts`), names its caller (`auth`),
//! holds it to its route's query parameters and its token's write rate
//! (`screen`), gives it an in-flight slot or sheds it (`load`), reads its body within the
//! deadline (`load`) and hands it to the route; its answer gets the headers
//! its kind takes (`headers`).
//!
//! The layer is added once (`Router::layer`), and every step below the span
//! runs in one future: each `Router::layer` wraps each route, so a request
//! clones the stack of boxed services under its route, and each
//! `axum::middleware::from_fn` layer clones what is under it again and boxes
//! its future and its `Next`; with five of them, that bookkeeping cost about
//! a fifth of the work of a lock acquire.

use std::convert::Infallible;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};
use tower::{Layer, Service, ServiceBuilder, ServiceExt};
use tower_http::trace::TraceLayer;

use super::cors::{Cors, CorsGateLayer};
use super::headers::Answer;
use super::request_id::{self, TagRequestLayer};
use super::{auth, hosts, load, requests, screen};
use crate::api::problems::{Problem, kinds};
use crate::api::{AppState, MAX_BODY_BYTES};

/// `router` with the middleware around each of its routes and fallbacks.
pub fn wrap(router: Router<AppState>, state: AppState, cors: Option<Cors>) -> Router<AppState> {
    router.layer(
        ServiceBuilder::new()
            .layer(TagRequestLayer)
            .layer(
                TraceLayer::new_for_http()
                    .make_span_with(request_span)
                    // `track_requests` logs each request once, in this span,
                    // at the level its outcome deserves; a 5xx is not an
                    // error of the server by itself (a shed flood answers 503
                    // by design), and real failures log where they happen.
                    .on_response(())
                    .on_failure(()),
            )
            // Outside the token check, the load bounds and the request
            // count: a preflight carries no token and is answered here.
            .layer(CorsGateLayer::new(cors))
            .layer(GuardLayer { state })
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES)),
    )
}

fn request_span(request: &Request) -> tracing::Span {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str);
    // Set by `TagRequest` around this layer; given here, not recorded later,
    // spares re-writing the span's fields.
    tracing::info_span!(
        "request",
        http.method = %request.method(),
        http.route = route,
        auth.token = tracing::field::Empty,
        request.id = request_id::of(request),
    )
}

#[derive(Clone)]
struct GuardLayer {
    state: AppState,
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            state: self.state.clone(),
            inner,
        }
    }
}

/// Counts, checks the host of, authenticates, admits and reads a request,
/// in that order, in one future: a request that several steps would refuse is answered by the
/// outermost of them, and every answer is counted and logged.
#[derive(Clone)]
struct Guard<S> {
    state: AppState,
    inner: S,
}

impl<S> Service<Request> for Guard<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The route is readied when the request reaches it (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let state = self.state.clone();
        let inner = self.inner.clone();
        Box::pin(async move {
            let route = |request| async move {
                match AssertUnwindSafe(inner.oneshot(request))
                    .catch_unwind()
                    .await
                {
                    Ok(Ok(response)) => response,
                    Ok(Err(never)) => match never {},
                    Err(panic) => panicked(panic.as_ref()),
                }
            };
            let read = |request| load::read_body_in_time(&state, request, route);
            let admit = |request| load::shed_load(&state, request, read);
            let screen = |request| screen::screen(&state, request, admit);
            let identify = |request| auth::authenticate(&state, request, screen);
            let host = |request| hosts::check_host(&state, request, identify);
            let answer = Answer::of(request.uri().path());
            Ok(answer.head(requests::track_requests(&state, request, host).await))
        })
    }
}

/// The answer to a route that panicked: a 500 problem, counted and logged
/// as every answer is, where the connection would otherwise be cut with
/// no answer at all.
fn panicked(panic: &(dyn Any + Send)) -> Response {
    let said = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("");
    tracing::error!(panic = %said, "a route panicked");
    Problem::of(&kinds::INTERNAL, "the server failed; it logged why").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_route_that_panics_answers_a_500_problem() {
        let answer = panicked(&"an index out of bounds");
        assert_eq!(answer.status(), 500);
        let body = axum::body::to_bytes(answer.into_body(), 4096)
            .await
            .unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["type"], "/problems/internal");
    }
}
