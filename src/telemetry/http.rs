//! Request latency by matched route, method and status class. The route is the
//! template (`/v1/locks/{key}/acquire`), never the concrete path, so the set of
//! series is bounded by the router, whatever keys clients send. The middleware
//! that feeds it is `api::requests`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::http::{Method, StatusCode};

use super::histogram::Histogram;

/// Series key: route template, method, status class.
type Series = (String, &'static str, &'static str);

#[derive(Debug, Default)]
pub struct RequestMetrics {
    series: Mutex<BTreeMap<Series, Histogram>>,
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
        let key = (route.to_owned(), method_label(method), status_class(status));
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series
            .entry(key)
            .or_insert_with(Histogram::latency)
            .observe(seconds);
    }

    pub fn render(&self, out: &mut String) {
        const NAME: &str = "leasehold_http_request_duration_seconds";
        out.push_str(&format!(
            "# HELP {NAME} HTTP request latency by route template, method and status class\n\
             # TYPE {NAME} histogram\n"
        ));
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        for ((route, method, class), histogram) in series.iter() {
            let route = route.replace('\\', "\\\\").replace('"', "\\\"");
            let labels = format!("route=\"{route}\",method=\"{method}\",status=\"{class}\"");
            histogram.render(out, NAME, &labels);
        }
    }
}
