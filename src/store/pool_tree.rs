//! Pools cut from pools: a child occupies its block in its parent (taken
//! out of the parent's free space, never a reservation row), so a reserve
//! in the parent never takes it and the parent's usage and map count it.
//! Creating or deleting a child holds its parent's lock; allocating in a
//! child holds the child's alone. Also what overlaps a block of a pool:
//! its live reservations and its children.

use super::free_blocks::{give_back, insert_free, take_free};
use super::rows::{self, RESERVATION_COLUMNS, block};
use super::sql::{Columns, Sql, args, one};
use super::{StoreError, StoreResult};
use crate::domain::allocator::Grant;
use crate::domain::cidr::Block;
use crate::domain::subnet::{Child, MAX_CONFLICTS, Pool, Reservation, ReserveRefusal};

/// The pools cut from `pool`, in address order.
pub async fn children(conn: &mut dyn Sql, pool: &Pool) -> StoreResult<Vec<Child>> {
    let rows = conn
        .rows(
            "SELECT name, start, prefix_len FROM subnet_pools WHERE parent = $1 ORDER BY start",
            args![&pool.name],
        )
        .await?;
    let family = pool.cidr.family();
    rows.iter()
        .map(|row| {
            Ok(Child {
                name: row.text("name")?,
                cidr: block(row, family, "start")?,
            })
        })
        .collect()
}

/// How many pools are cut from the pool named `name`.
pub async fn count_children(conn: &mut dyn Sql, name: &str) -> StoreResult<u64> {
    let row = one(
        conn,
        "SELECT count(*) AS n FROM subnet_pools WHERE parent = $1",
        args![name],
    )
    .await?;
    Ok(row.int("n")? as u64)
}

/// The live reservations overlapping `subnet` (all rows are live once the
/// pool is purged): the one starting before it if it reaches in, and those
/// starting inside it.
pub async fn conflicts(
    conn: &mut dyn Sql,
    pool: &Pool,
    subnet: Block,
) -> StoreResult<Vec<Reservation>> {
    let family = pool.cidr.family();
    let (first, last) = (subnet.start_bytes(), subnet.last_bytes());
    let before = format!(
        "SELECT {RESERVATION_COLUMNS} FROM subnet_reservations \
         WHERE pool = $1 AND first_addr < $2 ORDER BY first_addr DESC LIMIT 1"
    );
    let mut found = Vec::new();
    if let Some(row) = conn.row(before, args![&pool.name, &first[..]]).await? {
        let r = rows::reservation(family, &row)?;
        if r.subnet.overlaps(subnet) {
            found.push(r);
        }
    }
    let inside = format!(
        "SELECT {RESERVATION_COLUMNS} FROM subnet_reservations \
         WHERE pool = $1 AND first_addr BETWEEN $2 AND $3 ORDER BY first_addr LIMIT $4"
    );
    let args = args![&pool.name, &first[..], &last[..], MAX_CONFLICTS as i64 + 1];
    for row in conn.rows(inside, args).await? {
        found.push(rows::reservation(family, &row)?);
    }
    Ok(found)
}

/// Why `subnet` is not free in the purged `pool`: the live reservations
/// and the children it overlaps, and the caller's excludes it overlaps.
pub async fn unavailable(
    conn: &mut dyn Sql,
    pool: &Pool,
    subnet: Block,
    excluded: Vec<Block>,
) -> StoreResult<ReserveRefusal> {
    let mut conflicts = conflicts(conn, pool, subnet).await?;
    let more_conflicts = conflicts.len() > MAX_CONFLICTS;
    conflicts.truncate(MAX_CONFLICTS);
    let mut children = children(conn, pool).await?;
    children.retain(|c| c.cidr.overlaps(subnet));
    Ok(ReserveRefusal::Unavailable {
        conflicts,
        more_conflicts,
        excluded,
        children,
    })
}

/// The child's block goes out of its parent's free space (`grant.from`
/// is the free block holding it); the child's own free space is the whole
/// block.
pub async fn occupy(
    conn: &mut dyn Sql,
    parent: &Pool,
    child: &Pool,
    grant: Grant,
) -> StoreResult<()> {
    take_free(conn, &parent.name, grant).await?;
    insert_free(conn, &child.name, child.cidr).await
}

/// A deleted child's block goes back to its parent's free space.
pub async fn vacate(conn: &mut dyn Sql, parent: Option<&Pool>, child: &Pool) -> StoreResult<()> {
    match parent {
        Some(parent) => give_back(conn, parent, child.cidr).await,
        None if child.parent.is_some() => {
            Err(StoreError::Internal(format!("the parent of pool {} is gone", child.name)).into())
        }
        None => Ok(()),
    }
}
