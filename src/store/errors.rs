//! How a sqlx error becomes a `StoreError`. Each dialect classifies its own
//! database errors; what no database raised (a pool timeout, a broken socket)
//! is classified here, once for both.

use super::{Error, StoreError};
use super::{postgres, sqlite};

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        if let Some(classified) = sqlite::classify(&error).or_else(|| postgres::classify(&error)) {
            return classified;
        }
        match &error {
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => {
                StoreError::Unavailable(error.to_string())
            }
            _ => StoreError::Internal(error.to_string()),
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        Error::Storage(error.into())
    }
}
