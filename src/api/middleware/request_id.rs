//! `x-request-id`: the caller's own, when it is a sane one, or one made here;
//! recorded in the request's log span and echoed on every answer, problems
//! included, so a client's report and the server's log name the same request.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Response};
use tower::{Layer, Service};

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longer ids are replaced: the id lands in every log line of the request.
pub const MAX_LEN: usize = 128;

/// Printable ASCII, 1 to `MAX_LEN` bytes; anything else could forge or
/// break log lines, so it is replaced rather than echoed.
fn acceptable(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_LEN
        && bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ')
}

fn generated() -> HeaderValue {
    let mut id = [0u8; 32];
    hex::encode_to_slice(rand::random::<u128>().to_be_bytes(), &mut id)
        .expect("32 hex digits fill the buffer");
    HeaderValue::from_bytes(&id).expect("hex is a valid header value")
}

/// The id `TagRequest` gave the request, for its log span.
pub fn of(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|id| id.to_str().ok())
}

/// Runs around the request span (see `stack`), which takes the id
/// from the request, so the id is on every line the request logs.
#[derive(Debug, Clone, Copy, Default)]
pub struct TagRequestLayer;

impl<S> Layer<S> for TagRequestLayer {
    type Service = TagRequest<S>;

    fn layer(&self, inner: S) -> TagRequest<S> {
        TagRequest { inner }
    }
}

/// Gives the request its id and echoes it on the answer.
#[derive(Debug, Clone)]
pub struct TagRequest<S> {
    inner: S,
}

impl<S, B> Service<Request> for TagRequest<S>
where
    S: Service<Request, Response = Response<B>>,
    S::Future: Unpin,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = Tagged<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let id = match request.headers().get(&REQUEST_ID) {
            Some(given) if acceptable(given) => given.clone(),
            _ => generated(),
        };
        request.headers_mut().insert(REQUEST_ID, id.clone());
        Tagged {
            response: self.inner.call(request),
            id: Some(id),
        }
    }
}

/// The answer of a tagged request, which gets the request's id.
pub struct Tagged<F> {
    response: F,
    id: Option<HeaderValue>,
}

impl<F, B, E> Future for Tagged<F>
where
    F: Future<Output = Result<Response<B>, E>> + Unpin,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut response = ready!(Pin::new(&mut self.response).poll(cx))?;
        if let Some(id) = self.id.take() {
            response.headers_mut().insert(REQUEST_ID, id);
        }
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_printable_ascii_is_kept() {
        let ok = |s: &str| acceptable(&HeaderValue::from_str(s).unwrap());
        assert!(ok("abc-123 x"));
        assert!(ok(&"a".repeat(MAX_LEN)));
        assert!(!ok(&"a".repeat(MAX_LEN + 1)));
        assert!(!ok(""));
        assert!(!acceptable(
            &HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap()
        ));
        assert!(!acceptable(&HeaderValue::from_bytes(b"a\tb").unwrap()));
    }
}
