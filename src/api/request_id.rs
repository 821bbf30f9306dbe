//! `x-request-id`: the caller's own, when it is a sane one, or one made here;
//! recorded in the request's log span and echoed on every answer, problems
//! included, so a client's report and the server's log name the same request.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

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
    let id = hex::encode(rand::random::<u128>().to_be_bytes());
    HeaderValue::from_str(&id).expect("hex is a valid header value")
}

/// The id `tag_request` gave the request, for its log span.
pub fn of(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|id| id.to_str().ok())
}

/// Runs around the request span (see `api::router`), which takes the id
/// from the request, so the id is on every line the request logs.
pub async fn tag_request(mut request: Request, next: Next) -> Response {
    let id = match request.headers().get(&REQUEST_ID) {
        Some(given) if acceptable(given) => given.clone(),
        _ => generated(),
    };
    request.headers_mut().insert(REQUEST_ID, id.clone());
    let mut response = next.run(request).await;
    response.headers_mut().insert(REQUEST_ID, id);
    response
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
