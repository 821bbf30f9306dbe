//! Secret tokens of leases (rule 3 in ARCHITECTURE.md): 128 random bits. They
//! live below both `store` and `leases`, which each draw them (a grant's
//! token, a replica's name), so neither imports the other.

/// 128 random bits, as 32 hex digits.
pub fn new_token() -> String {
    hex::encode(rand::random::<u128>().to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::new_token;

    #[test]
    fn a_token_is_32_hex_digits_and_never_repeats() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
