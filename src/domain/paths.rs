//! The addresses of resources in the v1 API: one spelling, used by the server
//! for `Location` and by the client to call it. Keys and ids travel as one
//! percent-encoded path segment, so a `/` in a key becomes `%2F`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but the unreserved characters of RFC 3986.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `/v1/locks/{key}`.
pub fn lock(key: &str) -> String {
    format!("/v1/locks/{}", utf8_percent_encode(key, PATH_SEGMENT))
}

/// `/v1/locks/{key}/capacity`.
pub fn capacity(key: &str) -> String {
    format!("{}/capacity", lock(key))
}

/// `/v1/pools/{pool}`.
pub fn pool(pool: &str) -> String {
    format!("/v1/pools/{}", utf8_percent_encode(pool, PATH_SEGMENT))
}

/// `/v1/limits/{name}`.
pub fn limit(name: &str) -> String {
    format!("/v1/limits/{}", utf8_percent_encode(name, PATH_SEGMENT))
}

/// `/v1/groups/{group}`.
pub fn group(name: &str) -> String {
    format!("/v1/groups/{}", utf8_percent_encode(name, PATH_SEGMENT))
}

/// `/v1/groups/{group}/members/{member}`.
pub fn member(group_name: &str, member: &str) -> String {
    format!(
        "{}/members/{}",
        group(group_name),
        utf8_percent_encode(member, PATH_SEGMENT)
    )
}

/// `/v1/sessions/{id}`.
pub fn session(id: &str) -> String {
    format!("/v1/sessions/{}", utf8_percent_encode(id, PATH_SEGMENT))
}

/// `/v1/pools/{pool}/reservations/{id}`.
pub fn reservation(pool_name: &str, id: &str) -> String {
    format!(
        "{}/reservations/{}",
        pool(pool_name),
        utf8_percent_encode(id, PATH_SEGMENT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_in_a_key_stays_inside_one_segment() {
        assert_eq!(lock("lb/3f2a é"), "/v1/locks/lb%2F3f2a%20%C3%A9");
        assert_eq!(
            reservation("docker", "r_1"),
            "/v1/pools/docker/reservations/r_1"
        );
    }
}
