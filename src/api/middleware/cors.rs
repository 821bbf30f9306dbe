//! CORS for the web pages an operator names (`--cors-origin`), off by default.
//!
//! Only a request whose `Origin` is listed goes through tower-http's CORS
//! layer: it answers that origin's preflights itself, before a token is asked
//! for or the request is counted, and adds the CORS headers to its real
//! requests. Every other request passes untouched, so another origin gets no
//! CORS header at all (the layer alone would still answer its preflights and
//! list the allowed methods).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::extract::Request;
use axum::http::Method;
use axum::http::header::{self, HeaderName, HeaderValue};
use axum::response::Response;
use tower::util::Oneshot;
use tower::{Layer, Service, ServiceExt};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The origins allowed to call the server from a browser, and the layer that
/// answers them.
#[derive(Clone)]
pub struct Cors {
    origins: Arc<[HeaderValue]>,
    layer: CorsLayer,
}

impl Cors {
    /// Reads `--cors-origin` values; `None` when there are none (CORS off).
    /// A refusal is one line naming the flag, its variable and the value.
    pub fn parse(origins: &[String]) -> Result<Option<Self>, String> {
        if origins.is_empty() {
            return Ok(None);
        }
        let origins: Vec<HeaderValue> = origins
            .iter()
            .map(|text| {
                parse_origin(text).map_err(|why| {
                    format!("--cors-origin (LEASEHOLD_CORS_ORIGINS) is {text:?}: {why}")
                })
            })
            .collect::<Result<_, _>>()?;
        let layer = CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins.clone()))
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("idempotency-key"),
            ])
            .expose_headers([
                header::LOCATION,
                header::RETRY_AFTER,
                HeaderName::from_static("x-request-id"),
            ]);
        Ok(Some(Self {
            origins: origins.into(),
            layer,
        }))
    }
}

/// `http(s)://host[:port]`, as a browser sends it in `Origin` (lowercase).
fn parse_origin(text: &str) -> Result<HeaderValue, String> {
    let text = text.trim();
    if text == "*" {
        return Err(
            "a wildcard would let every web page a browser opens call this server \
                    (without an auth file, release any lease); name each origin, \
                    as https://app.example.com"
                .into(),
        );
    }
    let origin = text.to_ascii_lowercase();
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or("an origin is http(s)://host[:port]")?;
    if let Some(at) = authority.find(['/', '?', '#']) {
        let bare = &text[..text.len() - authority.len() + at];
        return Err(format!("an origin has no path: {bare}"));
    }
    let parsed: axum::http::uri::Authority = authority
        .parse()
        .map_err(|_| "an origin is http(s)://host[:port]".to_owned())?;
    if authority.contains('@') || parsed.host().is_empty() {
        return Err("an origin is http(s)://host[:port], without user or password".into());
    }
    // The text after the last ':' outside brackets is the port.
    let port = authority
        .rsplit_once(':')
        .filter(|(_, port)| !port.contains(']'))
        .map(|(_, port)| port);
    if port.is_some_and(|port| port.parse::<u16>().is_err()) {
        return Err("its port must be a number from 0 to 65535".into());
    }
    HeaderValue::from_str(&origin).map_err(|_| "an origin is http(s)://host[:port]".into())
}

/// Hands a listed origin's request to the CORS layer; lets the others
/// through as they are, saying (when CORS is on) that the answer varied by
/// origin.
#[derive(Clone)]
pub struct CorsGateLayer {
    cors: Option<Cors>,
}

impl CorsGateLayer {
    /// `None`: CORS is off and every request passes untouched.
    pub fn new(cors: Option<Cors>) -> Self {
        Self { cors }
    }
}

impl<S> Layer<S> for CorsGateLayer {
    type Service = CorsGate<S>;

    fn layer(&self, inner: S) -> CorsGate<S> {
        CorsGate {
            cors: self.cors.clone(),
            inner,
        }
    }
}

#[derive(Clone)]
pub struct CorsGate<S> {
    cors: Option<Cors>,
    inner: S,
}

impl<S> Service<Request> for CorsGate<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Gated<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let Some(cors) = &self.cors else {
            return Gated::Untouched(self.inner.call(request));
        };
        let listed = request
            .headers()
            .get(header::ORIGIN)
            .is_some_and(|origin| cors.origins.contains(origin));
        if listed {
            let inner = self.inner.clone();
            return Gated::Listed(Box::pin(cors.layer.layer(inner).oneshot(request)));
        }
        Gated::Varied(self.inner.call(request))
    }
}

/// The answer of a request through `CorsGate`.
pub enum Gated<S: Service<Request, Response = Response>> {
    /// CORS is off.
    Untouched(S::Future),
    /// CORS is on; the request's origin is not listed.
    Varied(S::Future),
    /// The CORS layer answers (rare: kept off the stack of every request).
    Listed(Pin<Box<Oneshot<tower_http::cors::Cors<S>, Request>>>),
}

impl<S> Future for Gated<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Gated::Untouched(response) => Pin::new(response).poll(cx),
            Gated::Varied(response) => {
                let mut response = ready!(Pin::new(response).poll(cx))?;
                response
                    .headers_mut()
                    .append(header::VARY, HeaderValue::from_static("origin"));
                Poll::Ready(Ok(response))
            }
            Gated::Listed(response) => response.as_mut().poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port() {
        for good in [
            "https://app.example.com",
            "http://localhost:3000",
            "http://[::1]:8080",
            "HTTPS://App.Example.com",
        ] {
            assert!(parse_origin(good).is_ok(), "{good}");
        }
        assert_eq!(
            parse_origin("HTTPS://App.Example.com").unwrap(),
            "https://app.example.com"
        );
        for bad in [
            "*",
            "",
            "app.example.com",
            "ftp://app.example.com",
            "https://",
            "https://app.example.com/",
            "https://app.example.com/ui",
            "https://user@app.example.com",
            "https://app.example.com:",
            "https://app.example.com:99999",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
        assert!(
            parse_origin("https://app.example.com/ui")
                .unwrap_err()
                .contains("https://app.example.com")
        );
    }
}
