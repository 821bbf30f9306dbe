//! The connections that only read, beside the writer on the WAL: opened
//! when first needed, kept for the next read, closed after a storage
//! failure so the next read opens a fresh one.

use std::path::PathBuf;
use std::sync::Mutex;

use tokio::sync::Semaphore;

use super::conn::Conn;
use crate::store::dialect::{Erased, ReadWork};
use crate::store::sql::Sql;
use crate::store::{Error, StoreError, StoreResult};

/// The most reads that run at once.
const MAX_READERS: usize = 8;

pub struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Conn>>,
    turns: Semaphore,
}

impl Readers {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            idle: Mutex::new(Vec::new()),
            turns: Semaphore::new(MAX_READERS),
        }
    }

    /// Runs `work` on a reading connection. Its statements run on this
    /// thread as it polls them, without a hand-off.
    pub async fn read(&self, work: ReadWork) -> StoreResult<Erased> {
        let _turn = self
            .turns
            .acquire()
            .await
            .map_err(|_| StoreError::Unavailable("the database is closed".into()))?;
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => Conn::open_reader(&self.path)?,
        };
        let result = work(&mut conn as &mut dyn Sql).await;
        let healthy = !matches!(
            result,
            Err(Error::Storage(
                StoreError::Unavailable(_) | StoreError::Damaged(_)
            ))
        );
        if healthy && !self.turns.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
        result
    }

    /// Closes the idle connections and refuses further reads.
    pub fn close(&self) {
        self.turns.close();
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
