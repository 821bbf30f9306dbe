//! The headers that tell a browser how to treat an answer: the pages
//! (`/console`, `/docs`, their files and the icon) load only this server's
//! scripts and styles, never inline ones, and may not be framed; an answer
//! is never sniffed into another type; a `/v1` answer (tenant data) and
//! `/metrics` are never stored by a cache.

use axum::http::HeaderValue;
use axum::http::header::{self, HeaderMap};
use axum::response::Response;

/// What the pages may load: their own files, `data:` images (Swagger UI's
/// style sheet draws its icons so), requests to this server; no inline
/// script or style, no plugin, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Which headers an answer takes, by the path of its request.
#[derive(Clone, Copy)]
pub enum Answer {
    /// A page, its files or the icon.
    Page,
    /// A `/v1` answer or the metrics.
    Data,
    /// The probes and the OpenAPI documents.
    Other,
}

impl Answer {
    pub fn of(path: &str) -> Self {
        let under = |root: &str| {
            path.strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if under("/console") || under("/docs") || path == "/favicon.ico" {
            Self::Page
        } else if path.starts_with("/v1/") || path == "/metrics" {
            Self::Data
        } else {
            Self::Other
        }
    }

    /// `response` with the headers of its kind (in place of any a route set:
    /// an event stream's `no-cache` becomes `no-store`).
    pub fn head(self, mut response: Response) -> Response {
        let headers = response.headers_mut();
        set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
        match self {
            Self::Page => {
                set(
                    headers,
                    header::CONTENT_SECURITY_POLICY,
                    CONTENT_SECURITY_POLICY,
                );
                set(headers, header::REFERRER_POLICY, "no-referrer");
            }
            Self::Data => set(headers, header::CACHE_CONTROL, "no-store"),
            Self::Other => {}
        }
        response
    }
}

fn set(headers: &mut HeaderMap, name: header::HeaderName, value: &'static str) {
    headers.insert(name, HeaderValue::from_static(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_data_are_told_apart_by_path() {
        for page in [
            "/console",
            "/console/console.js",
            "/docs",
            "/docs/docs.js",
            "/favicon.ico",
        ] {
            assert!(matches!(Answer::of(page), Answer::Page), "{page}");
        }
        for data in ["/v1/locks", "/v1/events", "/metrics"] {
            assert!(matches!(Answer::of(data), Answer::Data), "{data}");
        }
        for other in ["/healthz", "/openapi.json", "/consoles", "/docsx"] {
            assert!(matches!(Answer::of(other), Answer::Other), "{other}");
        }
    }
}
