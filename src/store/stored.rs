//! Stored values read back as domain values, the same in both dialects: a
//! pool's family code and its blocks (start bytes and prefix length). A value
//! that does not decode is corruption, never a client's fault.

use crate::domain::cidr::{Block, Family};
use crate::store::{StoreError, StoreResult};

/// How a pool's address family is stored.
pub(super) fn family_code(family: Family) -> i64 {
    match family {
        Family::V4 => 4,
        Family::V6 => 6,
    }
}

/// The error for a stored value that cannot be what it claims.
pub(super) fn corrupt(what: &str) -> StoreError {
    StoreError::Internal(format!("stored {what} is invalid"))
}

/// A stored block of `family`.
pub(super) fn block_of(family: Family, start: &[u8], prefix_len: i64) -> StoreResult<Block> {
    let len = u8::try_from(prefix_len).map_err(|_| corrupt("prefix length"))?;
    Block::from_bytes(family, start, len).ok_or_else(|| corrupt("block"))
}
