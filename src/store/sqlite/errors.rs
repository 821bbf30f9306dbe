//! How a SQLite error becomes a `StoreError`: what a client may retry, what
//! means the file is damaged, and what is a bug.

use super::OVERLAP_ABORT;
use crate::store::StoreError;

/// SQLite errors as store errors: storage failures the client can do nothing
/// about but wait are `Unavailable`; a damaged file is `Damaged`; the rest are
/// internal errors. `None` for errors of another database.
pub(in crate::store) fn classify(error: &sqlx::Error) -> Option<StoreError> {
    const BUSY: i64 = 5;
    const READONLY: i64 = 8;
    const IOERR: i64 = 10;
    const FULL: i64 = 13;
    const CANTOPEN: i64 = 14;
    const CORRUPT: i64 = 11;
    const NOTADB: i64 = 26;
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>()?;
    if db.message().contains(OVERLAP_ABORT) {
        return Some(StoreError::SubnetOverlap);
    }
    let primary = db
        .code()
        .and_then(|c| c.parse::<i64>().ok())
        .map(|c| c & 0xff);
    Some(match primary {
        Some(BUSY | READONLY | IOERR | FULL | CANTOPEN) => {
            StoreError::Unavailable(db.message().to_owned())
        }
        Some(CORRUPT | NOTADB) => StoreError::Damaged(db.message().to_owned()),
        _ => StoreError::Internal(error.to_string()),
    })
}
