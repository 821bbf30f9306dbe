//! Creating a pool, or checking that it exists as defined; a pool cut from
//! a parent is placed in it under the parent's lock.

use super::StoreError;
use super::StoreResult;
use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Effects;
use super::free_blocks::{free_block_at, insert_free};
use super::pool_tree::{occupy, unavailable};
use super::pools::{Pools, lock, lock_row, purge_expired, usage};
use super::rows::family_code;
use super::sql::{Sql, args};
use crate::domain::At;
use crate::domain::allocator::Grant;
use crate::domain::commands::PutPoolOutcome;
use crate::domain::pool_rules::Rules;
use crate::domain::refusal::{Missing, Refused};
use crate::domain::subnet::{Pool, child_depth, pool_differences};

impl Pools<'_> {
    /// Creates a pool, or checks that the existing one has the same definition.
    pub async fn put(self, pool: Pool, now: At) -> StoreResult<PutPoolOutcome> {
        self.store
            .write(AllOrNothing, pool, move |c, fx, pool| {
                Box::pin(put(c, fx, pool, now))
            })
            .await
    }
}

/// Creates a pool, or checks that the existing one has the same definition.
pub async fn put(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    mut pool: Pool,
    now: At,
) -> StoreResult<PutPoolOutcome> {
    let Some(parent_name) = pool.parent.clone() else {
        // Two replicas creating the same pool: one inserts, the other finds it.
        if insert(conn, &pool).await? {
            insert_free(conn, &pool.name, pool.cidr).await?;
            return Ok(PutPoolOutcome::Created(usage(conn, pool).await?));
        }
        return existing(conn, fx, pool, now).await;
    };
    let refused = |refused: Refused| PutPoolOutcome::InParent {
        parent: parent_name.clone(),
        refused,
    };
    // The parent's lock first: children of one parent are placed one at a time.
    let Some(parent) = lock_row(conn, &parent_name).await? else {
        return Ok(refused(Missing::Pool.into()));
    };
    // The child keeps its effective rules: its parent's, narrowed by its own.
    pool.rules = match parent.rules.narrow(&pool.rules) {
        Ok(rules) => rules,
        Err(breach) => return Ok(refused(Refused::RuleConflict(breach))),
    };
    if lock_row(conn, &pool.name).await?.is_some() {
        return existing(conn, fx, pool, now).await;
    }
    let grant = match place(conn, fx, &parent, &mut pool, now).await? {
        Ok(grant) => grant,
        Err(refusal) => return Ok(refused(refusal)),
    };
    if !insert(conn, &pool).await? {
        // A pool of that name without a parent was created meanwhile.
        return existing(conn, fx, pool, now).await;
    }
    occupy(conn, &parent, &pool, grant).await?;
    Ok(PutPoolOutcome::Created(usage(conn, pool).await?))
}

/// Inserts the pool's row; answers whether it was created.
async fn insert(conn: &mut dyn Sql, pool: &Pool) -> StoreResult<bool> {
    let labels =
        serde_json::to_string(&pool.labels).map_err(|e| StoreError::Internal(e.to_string()))?;
    let rules = (pool.rules != Rules::default()).then(|| pool.rules.to_json().to_string());
    let inserted = conn
        .execute(
            "INSERT INTO subnet_pools \
             (name, family, start, prefix_len, labels, created_at, parent, depth, rules) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (name) DO NOTHING",
            args![
                &pool.name,
                family_code(pool.cidr.family()),
                &pool.cidr.start_bytes()[..],
                i64::from(pool.cidr.prefix_len()),
                &labels,
                pool.created_at,
                pool.parent.as_deref(),
                i64::from(pool.depth),
                rules.as_deref(),
            ],
        )
        .await?;
    Ok(inserted == 1)
}

/// The answer for a pool that exists: unchanged when defined alike.
async fn existing(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    pool: Pool,
    now: At,
) -> StoreResult<PutPoolOutcome> {
    let existing = lock(conn, &pool.name).await?;
    let differs = pool_differences(&existing, &pool);
    if !differs.is_empty() {
        return Ok(PutPoolOutcome::Conflict { existing, differs });
    }
    purge_expired(conn, fx, &existing, now, i64::MAX).await?;
    Ok(PutPoolOutcome::Unchanged(usage(conn, existing).await?))
}

/// Where a new child of the locked `parent` goes (the free block of the
/// parent that holds it), with its depth set; or why the parent refuses it.
async fn place(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    parent: &Pool,
    child: &mut Pool,
    now: At,
) -> StoreResult<Result<Grant, Refused>> {
    child.depth = match child_depth(parent, child.cidr) {
        Ok(depth) => depth,
        Err(invalid) => return Ok(Err(invalid.into())),
    };
    purge_expired(conn, fx, parent, now, i64::MAX).await?;
    let free = free_block_at(conn, parent, child.cidr.start()).await?;
    if let Some(from) = free.filter(|f| f.contains(child.cidr)) {
        return Ok(Ok(Grant {
            from,
            block: child.cidr,
        }));
    }
    let refusal = unavailable(conn, parent, child.cidr, Vec::new()).await?;
    Ok(Err(Refused::Subnet(refusal)))
}
