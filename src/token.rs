//! Secret tokens of leases (rule 3 in ARCHITECTURE.md): 128 random bits. They
//! live below both `store` and `leases`, which each draw them (a grant's
//! token, a replica's name), so neither imports the other. A session's token
//! is kept only as its digest; one opened with an `Idempotency-Key` is
//! derived from that key, so a retry can be answered the same token.

use sha2::{Digest, Sha256};

use crate::domain::names::LeaseToken;

/// A lease's secret token, drawn for its grant: 128 random bits.
pub fn new_token() -> LeaseToken {
    LeaseToken::new(new_id())
}

/// 128 random bits, as 32 hex digits: an id no one can guess (a session's
/// id, a replica's name, an `Idempotency-Key`), and a token's text.
pub fn new_id() -> String {
    hex::encode(rand::random::<u128>().to_be_bytes())
}

/// What the store keeps of a secret: the SHA-256 of its text, 64 hex digits.
pub fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The token of a session opened with an `Idempotency-Key`: 128 bits of the
/// SHA-256 of what only its opener knows (the key it sent, and the digest of
/// its API token when there is one) with the session's id. The store keeps
/// the key's and the token's digests, neither of which gives it back.
pub fn derive(idempotency_key: &str, caller_secret: Option<&[u8]>, session_id: &str) -> LeaseToken {
    let mut h = Sha256::new();
    h.update(b"leasehold session token\0");
    for part in [
        idempotency_key.as_bytes(),
        caller_secret.unwrap_or_default(),
        session_id.as_bytes(),
    ] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    LeaseToken::new(hex::encode(&h.finalize()[..16]))
}

#[cfg(test)]
mod tests {
    use super::{derive, digest, new_token};

    #[test]
    fn a_derived_token_looks_drawn_and_depends_on_every_part() {
        let t = derive("k", Some(b"s"), "id");
        assert_eq!(t.as_str().len(), 32);
        assert!(t.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(t, derive("k", Some(b"s"), "id"));
        assert_ne!(t, derive("k2", Some(b"s"), "id"));
        assert_ne!(t, derive("k", Some(b"s2"), "id"));
        assert_ne!(t, derive("k", None, "id"));
        assert_ne!(t, derive("k", Some(b"s"), "id2"));
    }

    #[test]
    fn a_digest_is_64_hex_digits_and_not_the_secret() {
        let d = digest("9f86d081884c7d659a2feaa0c55ad015");
        assert_eq!(d.len(), 64);
        assert_ne!(d, digest("9f86d081884c7d659a2feaa0c55ad016"));
    }

    #[test]
    fn a_token_is_32_hex_digits_and_never_repeats() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
