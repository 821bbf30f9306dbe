//! Request latency by matched route, method and status class, and responses by
//! exact status code. The route is the template (`/v1/locks/{key}/acquire`),
//! never the concrete path, so the set of series is bounded by the router,
//! whatever keys clients send. The middleware that feeds it is `api::requests`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

use axum::http::{Method, StatusCode};

use super::histogram::Histogram;

/// Series key: route template, method, status class.
type Series = (String, &'static str, &'static str);

#[derive(Debug, Default)]
pub struct RequestMetrics {
    series: Mutex<BTreeMap<Series, Histogram>>,
    /// Responses by route template, method and exact code.
    responses: Mutex<BTreeMap<Series, u64>>,
}

/// The codes the API answers; any other is `other`, so the series stay few
/// whatever a proxy or a future route sends.
const CODES: [&str; 19] = [
    "200", "201", "204", "400", "401", "403", "404", "405", "408", "409", "413", "415", "422",
    "429", "431", "500", "502", "503", "504",
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
        let key = (route.to_owned(), method, status_class(status));
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series
            .entry(key)
            .or_insert_with(Histogram::latency)
            .observe(seconds);
        drop(series);
        let key = (route.to_owned(), method, code_label(status));
        let mut responses = self.responses.lock().unwrap_or_else(|e| e.into_inner());
        *responses.entry(key).or_default() += 1;
    }

    pub fn render(&self, out: &mut String) {
        const NAME: &str = "leasehold_http_request_duration_seconds";
        out.push_str(&format!(
            "# HELP {NAME} HTTP request latency by route template, method and status class\n\
             # TYPE {NAME} histogram\n"
        ));
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        for ((route, method, class), histogram) in series.iter() {
            let labels = format!(
                "route=\"{}\",method=\"{method}\",status=\"{class}\"",
                escape(route)
            );
            histogram.render(out, NAME, &labels);
        }
        drop(series);
        const RESPONSES: &str = "leasehold_http_responses_total";
        out.push_str(&format!(
            "# HELP {RESPONSES} HTTP responses by route template, method and exact status code\n\
             # TYPE {RESPONSES} counter\n"
        ));
        let responses = self.responses.lock().unwrap_or_else(|e| e.into_inner());
        for ((route, method, code), count) in responses.iter() {
            let _ = writeln!(
                out,
                "{RESPONSES}{{route=\"{}\",method=\"{method}\",code=\"{code}\"}} {count}",
                escape(route)
            );
        }
    }
}

/// A label value as the text format quotes it.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
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
}
