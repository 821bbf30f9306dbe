//! How a SQLite error becomes a `StoreError`: what a client may retry, what
//! means the file is damaged, and what is a bug.

use super::OVERLAP_ABORT;
use crate::store::StoreError;

/// SQLite errors as store errors: storage failures the client can do nothing
/// about but wait are `Unavailable`; a damaged file is `Damaged`; the rest are
/// internal errors. `None` for errors of another database.
pub(in crate::store) fn classify(error: &sqlx::Error) -> Option<StoreError> {
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>()?;
    let code = db.code().and_then(|c| c.parse::<i32>().ok());
    Some(by_code(code, db.message()))
}

/// A failure SQLite reported with its (extended) result `code` and `message`,
/// from whichever driver ran the statement.
pub(super) fn by_code(code: Option<i32>, message: &str) -> StoreError {
    use rusqlite::ffi::{
        SQLITE_BUSY, SQLITE_CANTOPEN, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_IOERR, SQLITE_NOTADB,
        SQLITE_READONLY,
    };
    if message.contains(OVERLAP_ABORT) {
        return StoreError::Overlap(message.to_owned());
    }
    // A primary key or unique index refused a second row.
    if matches!(code, Some(1555 | 2067)) {
        return StoreError::Duplicate(message.to_owned());
    }
    match code.map(|c| c & 0xff) {
        Some(SQLITE_BUSY | SQLITE_READONLY | SQLITE_IOERR | SQLITE_FULL | SQLITE_CANTOPEN) => {
            StoreError::Unavailable(message.to_owned())
        }
        Some(SQLITE_CORRUPT | SQLITE_NOTADB) => StoreError::Damaged(message.to_owned()),
        _ => StoreError::Internal(message.to_owned()),
    }
}
