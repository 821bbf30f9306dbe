//! A key's stored capacity read as a row: what a grant decides over (in
//! the grant's transaction) and what the capacity routes show.

use std::num::NonZeroU32;

use super::StoreResult;
use super::rows::corrupt;
use super::sql::{Columns, Sql, args};
use crate::domain::capacity::Capacity;

const CAPACITY_ROW: &str = "SELECT key, permits, owner FROM lock_capacities WHERE key = $1";

/// The capacity stored for `key`, if any.
pub async fn stored(conn: &mut dyn Sql, key: &str) -> StoreResult<Option<Capacity>> {
    let Some(row) = conn.row(CAPACITY_ROW, args![key]).await? else {
        return Ok(None);
    };
    let permits = u32::try_from(row.int("permits")?)
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or_else(|| corrupt("capacity"))?;
    Ok(Some(Capacity {
        key: row.text("key")?,
        permits,
        owner: row.opt_text("owner")?,
    }))
}
