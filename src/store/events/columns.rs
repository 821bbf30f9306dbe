//! The columns of the change log and of the rows whose end it records, as
//! statements name them: `decode` reads rows of exactly these.

use crate::store::texts::event_columns;

/// The columns a statement that ends a lock answers (`RETURNING`), for
/// `ended_lock`.
pub const ENDED_LOCK: &str = "key, holder, fencing_token, session_id, owner, \
     CAST(CASE WHEN expiry_announced THEN 1 ELSE 0 END AS bigint) AS announced, \
     CAST(CASE WHEN expires_at >= ends_by THEN 1 ELSE 0 END AS bigint) AS lifetime_ended";

/// `ENDED_LOCK`'s columns, answered by the statement that announces the
/// expiry of the rows it answers: none of them was announced before it.
pub const ANNOUNCING_LOCK: &str = "key, holder, fencing_token, session_id, owner, \
     CAST(0 AS bigint) AS announced, \
     CAST(CASE WHEN expires_at >= ends_by THEN 1 ELSE 0 END AS bigint) AS lifetime_ended";

/// The columns a statement that ends a reservation answers, for
/// `ended_reservation` (with the pool's family to read its subnet).
pub const ENDED_RESERVATION: &str = "fencing_token, first_addr, prefix_len, holder, session_id, owner, \
     CAST(CASE WHEN expires_at >= ends_by THEN 1 ELSE 0 END AS bigint) AS lifetime_ended";

/// The columns of a row of `events`, for `event`.
pub const EVENT_COLUMNS: &str = concat!("revision, ", event_columns!());
