//! How a SQLite error becomes a `StoreError`: what a client may retry, what
//! means the file is damaged, and what is a bug.

use super::OVERLAP_ABORT;
use crate::store::StoreError;

/// Storage failures the client can do nothing about but wait are
/// `Unavailable`; a damaged file is `Damaged`; the rest are internal errors.
impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        const BUSY: i64 = 5;
        const READONLY: i64 = 8;
        const IOERR: i64 = 10;
        const FULL: i64 = 13;
        const CANTOPEN: i64 = 14;
        const CORRUPT: i64 = 11;
        const NOTADB: i64 = 26;
        if let Some(classified) = crate::store::postgres::classify(&error) {
            return classified;
        }
        match &error {
            sqlx::Error::Database(db) if db.message().contains(OVERLAP_ABORT) => {
                StoreError::SubnetOverlap
            }
            sqlx::Error::Database(db) => {
                let primary = db
                    .code()
                    .and_then(|c| c.parse::<i64>().ok())
                    .map(|c| c & 0xff);
                match primary {
                    Some(BUSY | READONLY | IOERR | FULL | CANTOPEN) => {
                        StoreError::Unavailable(db.message().to_owned())
                    }
                    Some(CORRUPT | NOTADB) => StoreError::Damaged(db.message().to_owned()),
                    _ => StoreError::Internal(error.to_string()),
                }
            }
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => {
                StoreError::Unavailable(error.to_string())
            }
            _ => StoreError::Internal(error.to_string()),
        }
    }
}
