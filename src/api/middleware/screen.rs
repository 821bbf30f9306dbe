//! What every routed `/v1` request is held to once its caller is known and
//! before it takes an in-flight slot: its query parameters as the OpenAPI
//! document lists them for its route (an unknown or repeated one is 400
//! naming it, on every route alike), and its token's write rate.

use std::collections::HashMap;
use std::future::Future;
use std::sync::LazyLock;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::response::{IntoResponse, Response};

use super::auth::Caller;
use crate::api::AppState;
use crate::api::problems::Problem;

/// The query parameters of each operation, by route template and method,
/// read from the document the routes are registered in.
static QUERY_PARAMETERS: LazyLock<HashMap<(String, Method), Vec<String>>> = LazyLock::new(|| {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::path::ParameterIn;
    let mut doc = crate::api::openapi();
    let mut known = HashMap::new();
    for (path, item) in doc.paths.paths.iter_mut() {
        for (method, op) in [
            (Method::GET, &item.get),
            (Method::POST, &item.post),
            (Method::PUT, &item.put),
            (Method::DELETE, &item.delete),
        ] {
            let Some(op) = op else { continue };
            let names = op
                .parameters
                .iter()
                .flatten()
                .filter_map(|p| match p {
                    RefOr::T(p) if p.parameter_in == ParameterIn::Query => Some(p.name.clone()),
                    _ => None,
                })
                .collect();
            known.insert((path.clone(), method), names);
        }
    }
    known
});

/// Reads the document once, so that the first request does not pay for it.
pub fn prepare() {
    LazyLock::force(&QUERY_PARAMETERS);
}

/// The query's pairs, decoded as a form (`+` is a space, `%XX` a byte);
/// a name or value whose bytes are not UTF-8 is refused naming the
/// parameter, never read with replacement characters.
fn decode_query(query: &str) -> Result<Vec<(String, String)>, Problem> {
    let decode = |part: &str| {
        let bytes: Vec<u8> =
            percent_encoding::percent_decode_str(&part.replace('+', " ")).collect();
        String::from_utf8(bytes).map_err(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    };
    let not_text = "must be UTF-8 text (percent-encoded), as every query parameter is";
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name =
                decode(name).map_err(|lossy| Problem::invalid(&bounded(&lossy), not_text))?;
            let value = decode(value).map_err(|_| Problem::invalid(&bounded(&name), not_text))?;
            Ok((name, value))
        })
        .collect()
}

/// Refuses a parameter that is not UTF-8 text (on every route), one the
/// route does not take, or one given twice.
fn check_query(route: &str, method: &Method, query: &str) -> Result<(), Problem> {
    let pairs = decode_query(query)?;
    let Some(known) = QUERY_PARAMETERS.get(&(route.to_owned(), method.clone())) else {
        return Ok(());
    };
    let mut seen: Vec<&str> = Vec::with_capacity(pairs.len());
    for (name, _) in &pairs {
        if !known.iter().any(|k| k == name) {
            let takes = if known.is_empty() {
                "this route takes no query parameters".to_owned()
            } else {
                format!("is not a parameter of this route ({})", known.join(", "))
            };
            return Err(Problem::invalid(&bounded(name), takes));
        }
        if seen.contains(&name.as_str()) {
            return Err(Problem::invalid(name, "is given more than once"));
        }
        seen.push(name);
    }
    Ok(())
}

/// A name as a problem may echo it: at most 64 bytes of it.
fn bounded(name: &str) -> String {
    let mut end = name.len().min(64);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// How many writes a request is charged: one for each request that changes
/// something; reads and probes are free.
fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

pub async fn screen<F>(
    state: &AppState,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    if !request.uri().path().starts_with("/v1/") {
        return next(request).await;
    }
    if let Some(query) = request.uri().query()
        && let Some(route) = request.extensions().get::<MatchedPath>()
        && let Err(problem) = check_query(route.as_str(), request.method(), query)
    {
        return problem.into_response();
    }
    if is_write(request.method())
        && let Some(Caller::Token(grant)) = request.extensions().get::<Caller>()
        && let Err(problem) = state.rates.charge(&grant.name, 1)
    {
        return problem.into_response();
    }
    next(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_repeated_parameters_are_refused_by_name() {
        let get = Method::GET;
        assert!(check_query("/v1/locks", &get, "prefix=a%2F&limit=5").is_ok());
        let p = check_query("/v1/locks", &get, "limit=5&limit=6").unwrap_err();
        assert_eq!(p.extensions["field"], "limit");
        let p = check_query("/v1/locks/{key}/fencing/{fencing_token}", &get, "x=1").unwrap_err();
        assert_eq!(p.extensions["field"], "x");
        assert!(p.detail.contains("takes no query"), "{}", p.detail);
        for (query, field) in [("group=b%2F%FF", "group"), ("prefix=b/%C3", "prefix")] {
            let p = check_query("/v1/events", &get, query).unwrap_err();
            assert_eq!(p.extensions["field"], field, "{query}");
        }
        let p = check_query("/v1/locks", &get, "pre%FFfix=a").unwrap_err();
        assert_eq!(p.extensions["field"], "pre\u{FFFD}fix");
        assert!(check_query("/v1/locks", &get, "prefix=%C3%A9t%C3%A9+x&&limit=2").is_ok());
        let long = "n".repeat(5_000);
        let p = check_query("/v1/locks", &get, &format!("{long}=1")).unwrap_err();
        assert_eq!(p.extensions["field"].as_str().unwrap().len(), 64);
    }
}
