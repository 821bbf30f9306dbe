//! What a caller may read, at a glance (`GET /v1/status`): the live rows
//! within its scope, counted in one snapshot of the store, this server's
//! waiters added to those the others published, and the database's figures.

use super::{LeaseError, Leases};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::commands::{DatabaseStatus, VisibleCounts};
use crate::domain::selection::Selection;

/// The live rows a caller may read, the revision they reflect, and the
/// database, at `at` on the lease clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub revision: Revision,
    pub counts: VisibleCounts,
    pub database: DatabaseStatus,
    pub at: At,
}

impl Leases {
    /// What `selection` (a caller's whole scope) reads now, counted.
    pub async fn status(&self, selection: &Selection) -> Result<Status, LeaseError> {
        let at = self.now();
        let (mut counts, revision) = self.store.count_visible(selection, at).await?;
        let mine = self.waiters.keys(|key| selection.selects_key(key));
        counts.waiters += mine.iter().map(|k| k.waiters).sum::<u64>();
        let database = self.store.database_status(at).await?;
        Ok(Status {
            revision,
            counts,
            database,
            at,
        })
    }
}
