//! The free-block table: each pool's free space as its maximal free aligned
//! blocks (a buddy system), and the few indexed reads a grant decides over.

use super::rows::{block, corrupt};
use super::sql::{Columns, Sql, args, one};
use super::{StoreError, StoreResult};
use crate::domain::allocator::{Grant, best_fit, carve, largest, usable};
use crate::domain::cidr::Block;
use crate::domain::subnet::Pool;

pub(super) async fn insert_free(conn: &mut dyn Sql, pool: &str, block: Block) -> StoreResult<()> {
    conn.execute(
        "INSERT INTO pool_free_blocks (pool, start, prefix_len) VALUES ($1, $2, $3)",
        args![
            pool,
            &block.start_bytes()[..],
            i64::from(block.prefix_len())
        ],
    )
    .await?;
    Ok(())
}

/// Removes a free block; answers whether it was there (1) or not (0).
async fn remove_free(conn: &mut dyn Sql, pool: &str, block: Block) -> StoreResult<u64> {
    conn.execute(
        "DELETE FROM pool_free_blocks WHERE pool = $1 AND start = $2 AND prefix_len = $3",
        args![
            pool,
            &block.start_bytes()[..],
            i64::from(block.prefix_len())
        ],
    )
    .await
}

/// Takes a grant out of the free space: its free block goes, the rest of it stays.
pub(super) async fn take_free(conn: &mut dyn Sql, pool: &str, grant: Grant) -> StoreResult<()> {
    if remove_free(conn, pool, grant.from).await? != 1 {
        return Err(StoreError::Internal(format!("{} is not a free block", grant.from)).into());
    }
    for rest in carve(grant.from, grant.block) {
        insert_free(conn, pool, rest).await?;
    }
    Ok(())
}

/// Gives a block back to the free space, merged with its free buddies.
pub(super) async fn give_back(conn: &mut dyn Sql, pool: &Pool, block: Block) -> StoreResult<()> {
    let mut block = block;
    while block != pool.cidr {
        let (Some(buddy), Some(parent)) = (block.buddy(), block.parent()) else {
            break;
        };
        if remove_free(conn, &pool.name, buddy).await? == 0 {
            break;
        }
        block = parent;
    }
    insert_free(conn, &pool.name, block).await
}

/// The free block starting last at or before `address`: the only one that can hold it.
pub(super) async fn free_block_at(
    conn: &mut dyn Sql,
    pool: &Pool,
    address: u128,
) -> StoreResult<Option<Block>> {
    let row = conn
        .row(
            "SELECT start, prefix_len FROM pool_free_blocks WHERE pool = $1 AND start <= $2 \
             ORDER BY start DESC LIMIT 1",
            args![&pool.name, &address.to_be_bytes()[..]],
        )
        .await?;
    let block = row
        .map(|r| block(&r, pool.cidr.family(), "start"))
        .transpose()?;
    Ok(block.filter(|b| b.start() <= address && address <= b.last()))
}

/// `AND NOT (start BETWEEN …)` for every exclude: free blocks starting inside
/// an exclude are covered by it (or are one of the few that contain it, which
/// the caller handles apart).
pub(super) fn outside_excludes(excludes: &[Block], first_param: usize) -> String {
    (0..excludes.len())
        .map(|i| {
            let p = first_param + 2 * i;
            format!(" AND NOT (start BETWEEN ${p} AND ${})", p + 1)
        })
        .collect()
}

/// The first free block in best-fit order (`prefix_len` from `max_len` down
/// to the pool's, then lowest address) outside the excludes and not in `skip`.
pub(super) async fn best_plain(
    conn: &mut dyn Sql,
    pool: &Pool,
    max_len: u8,
    excludes: &[Block],
    skip: &[Block],
) -> StoreResult<Option<Block>> {
    let sql = format!(
        "SELECT start, prefix_len FROM pool_free_blocks WHERE pool = $1 AND prefix_len <= $2{} \
         ORDER BY prefix_len DESC, start LIMIT $3",
        outside_excludes(excludes, 4)
    );
    let bounds: Vec<([u8; 16], [u8; 16])> = excludes
        .iter()
        .map(|x| (x.start_bytes(), x.last_bytes()))
        .collect();
    let mut args = args![&pool.name, i64::from(max_len), skip.len() as i64 + 1].to_vec();
    for (first, last) in &bounds {
        args.push((&first[..]).into());
        args.push((&last[..]).into());
    }
    for row in conn.rows(sql, &args).await? {
        let block = block(&row, pool.cidr.family(), "start")?;
        if !skip.contains(&block) {
            return Ok(Some(block));
        }
    }
    Ok(None)
}

/// The largest free block (lowest address among equals) outside the excludes
/// and not in `skip`: one indexed probe per prefix length present.
pub(super) async fn largest_plain(
    conn: &mut dyn Sql,
    pool: &Pool,
    excludes: &[Block],
    skip: &[Block],
) -> StoreResult<Option<Block>> {
    let mut after: i64 = -1;
    loop {
        let level = one(
            conn,
            "SELECT min(prefix_len) AS level FROM pool_free_blocks \
             WHERE pool = $1 AND prefix_len > $2",
            args![&pool.name, after],
        )
        .await?
        .opt_int("level")?;
        let Some(level) = level else {
            return Ok(None);
        };
        let len = u8::try_from(level).map_err(|_| corrupt("prefix length"))?;
        let found = best_plain(conn, pool, len, excludes, skip).await?;
        if let Some(b) = found.filter(|b| i64::from(b.prefix_len()) == level) {
            return Ok(Some(b));
        }
        after = level;
    }
}

/// The grant for a prefix length: the best plain free block outside the
/// excludes, against the usable pieces of the few free blocks that contain an
/// exclude. `Err` carries the largest usable block.
pub(super) async fn find_grant(
    conn: &mut dyn Sql,
    pool: &Pool,
    len: u8,
    excludes: &[Block],
) -> StoreResult<Result<Grant, Option<Block>>> {
    let mut cut = Vec::new();
    for x in excludes {
        let free = free_block_at(conn, pool, x.start()).await?;
        if let Some(free) = free.filter(|f| f.contains(*x) && f != x && !cut.contains(f)) {
            cut.push(free);
        }
    }
    let pieces: Vec<(Block, Block)> = cut
        .iter()
        .flat_map(|&f| usable(f, excludes).into_iter().map(move |p| (f, p)))
        .collect();
    let plain = best_plain(conn, pool, len, excludes, &cut).await?;
    let candidates = plain
        .map(|p| (p, p))
        .into_iter()
        .chain(pieces.iter().copied());
    if let Some(grant) = best_fit(candidates, len) {
        return Ok(Ok(grant));
    }
    let largest_plain = largest_plain(conn, pool, excludes, &cut).await?;
    Ok(Err(largest(
        largest_plain
            .into_iter()
            .chain(pieces.iter().map(|(_, p)| *p)),
    )))
}
