//! Request latency by matched route, method and status class, and responses by
//! exact status code. The route is the template (`/v1/locks/{key}/acquire`),
//! never the concrete path, so the set of series is bounded by the router,
//! whatever keys clients send. The middleware that feeds it is `api::middleware::requests`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::http::{Method, StatusCode};

use super::exposition::{Exposition, Kind};
use super::histogram::Histogram;

/// Series by route template, then by method and status class (or code).
/// Keyed in two steps so that a request finds its series by the borrowed
/// route text; only a route's first request copies it. Walked in order, the
/// two steps give the order of one `(route, method, class)` key.
type ByRoute<T> = BTreeMap<String, BTreeMap<(&'static str, &'static str), T>>;

#[derive(Debug, Default)]
pub struct RequestMetrics {
    /// Latency by route template, method and status class.
    series: Mutex<ByRoute<Histogram>>,
    /// Responses by route template, method and exact code.
    responses: Mutex<ByRoute<u64>>,
}

/// The series of `route` in `map`, made on the route's first request.
fn route_series<'m, T>(
    map: &'m mut ByRoute<T>,
    route: &str,
) -> &'m mut BTreeMap<(&'static str, &'static str), T> {
    if !map.contains_key(route) {
        map.insert(route.to_owned(), BTreeMap::new());
    }
    map.get_mut(route).expect("inserted above")
}

/// The codes the API answers; any other is `other`, so the series stay few
/// whatever a proxy or a future route sends.
const CODES: [&str; 20] = [
    "200", "201", "204", "400", "401", "403", "404", "405", "408", "409", "413", "415", "421",
    "422", "429", "431", "500", "502", "503", "504",
];

fn code_label(status: StatusCode) -> &'static str {
    CODES
        .iter()
        .find(|c| **c == status.as_str())
        .copied()
        .unwrap_or("other")
}

/// `GET`, `POST`, …; anything else is `other`, so a client cannot invent labels.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 7] = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::HEAD,
        Method::PATCH,
        Method::OPTIONS,
    ];
    KNOWN
        .iter()
        .find(|m| *m == method)
        .map_or("other", Method::as_str)
}

fn status_class(status: StatusCode) -> &'static str {
    match status.as_u16() / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

impl RequestMetrics {
    pub fn observe(&self, route: &str, method: &Method, status: StatusCode, seconds: f64) {
        let method = method_label(method);
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        route_series(&mut series, route)
            .entry((method, status_class(status)))
            .or_insert_with(Histogram::latency)
            .observe(seconds);
        drop(series);
        let mut responses = self.responses.lock().unwrap_or_else(|e| e.into_inner());
        *route_series(&mut responses, route)
            .entry((method, code_label(status)))
            .or_default() += 1;
    }

    pub fn render(&self, out: &mut Exposition) {
        const NAME: &str = "leasehold_http_request_duration_seconds";
        let help = "HTTP request latency by route template, method and status class";
        out.family(NAME, Kind::Histogram, help);
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        let rows = series
            .iter()
            .flat_map(|(route, s)| s.iter().map(move |(key, h)| (route, key, h)));
        for (route, (method, class), histogram) in rows {
            let labels = [
                ("route", route.as_str()),
                ("method", method),
                ("status", class),
            ];
            out.histogram(NAME, &labels, histogram);
        }
        drop(series);
        const RESPONSES: &str = "leasehold_http_responses_total";
        let help = "HTTP responses by route template, method and exact status code";
        out.family(RESPONSES, Kind::Counter, help);
        let responses = self.responses.lock().unwrap_or_else(|e| e.into_inner());
        let rows = responses
            .iter()
            .flat_map(|(route, r)| r.iter().map(move |(key, n)| (route, key, n)));
        for (route, (method, code), count) in rows {
            let labels = [
                ("route", route.as_str()),
                ("method", method),
                ("code", code),
            ];
            out.sample(RESPONSES, &labels, count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_the_api_answers_are_exact_and_any_other_is_other() {
        assert_eq!(code_label(StatusCode::CREATED), "201");
        assert_eq!(code_label(StatusCode::TOO_MANY_REQUESTS), "429");
        assert_eq!(code_label(StatusCode::IM_A_TEAPOT), "other");
        assert_eq!(code_label(StatusCode::from_u16(599).unwrap()), "other");
    }

    #[test]
    fn series_render_in_route_method_and_code_order() {
        let metrics = RequestMetrics::default();
        let ok = StatusCode::OK;
        metrics.observe("/v1/locks", &Method::POST, ok, 0.001);
        metrics.observe("/healthz", &Method::GET, StatusCode::NOT_FOUND, 0.001);
        metrics.observe("/v1/locks", &Method::GET, ok, 0.001);
        metrics.observe("/healthz", &Method::GET, ok, 0.001);
        metrics.observe("/v1/locks", &Method::GET, ok, 0.001);
        let mut out = Exposition::default();
        metrics.render(&mut out);
        let out = out.finish();
        let responses: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("leasehold_http_responses_total{"))
            .collect();
        assert_eq!(
            responses,
            [
                r#"leasehold_http_responses_total{route="/healthz",method="GET",code="200"} 1"#,
                r#"leasehold_http_responses_total{route="/healthz",method="GET",code="404"} 1"#,
                r#"leasehold_http_responses_total{route="/v1/locks",method="GET",code="200"} 2"#,
                r#"leasehold_http_responses_total{route="/v1/locks",method="POST",code="200"} 1"#,
            ]
        );
        let counts: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("leasehold_http_request_duration_seconds_count"))
            .collect();
        assert_eq!(counts.len(), 4);
        assert!(counts[0].contains(r#"route="/healthz",method="GET",status="2xx""#));
        assert!(counts[1].contains(r#"route="/healthz",method="GET",status="4xx""#));
        assert!(counts[2].contains(r#"route="/v1/locks",method="GET",status="2xx""#));
        assert!(counts[3].contains(r#"route="/v1/locks",method="POST",status="2xx""#));
    }
}
