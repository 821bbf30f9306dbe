//! The blocks a reserve would take next (`GET /v1/pools/{pool}/free`),
//! read in one transaction holding the pool, its expired reservations
//! purged first as a reserve purges them, so the answer is what reserves
//! made now would get, in order.

use super::StoreResult;
use super::dialect::Atomicity::AllOrNothing;
use super::free_blocks::{free_block_at, outside_excludes};
use super::pools::{Pools, lock, purge_expired};
use super::rows::block;
use super::sql::{Sql, args};
use crate::domain::At;
use crate::domain::allocator::{next_blocks, relevant_excludes, usable};
use crate::domain::cidr::Block;
use crate::domain::names::PoolName;
use crate::domain::subnet::Pool;

impl Pools<'_> {
    /// The pool, and the next `limit` blocks of `len` (the pool's default
    /// when `None`) its reserves would take. `len` is `None` in the answer
    /// when neither names one.
    pub async fn free(
        self,
        name: &PoolName,
        len: Option<u8>,
        limit: u32,
        now: At,
    ) -> StoreResult<(Pool, Option<(u8, Vec<Block>)>)> {
        self.store
            .write(AllOrNothing, name.clone(), move |c, fx, name| {
                Box::pin(async move {
                    let pool = lock(c, &name).await?;
                    purge_expired(c, fx, &pool, now, i64::MAX).await?;
                    let Some(len) = len.or(pool.rules.default_prefix_len) else {
                        return Ok((pool, None));
                    };
                    let blocks = next_free(c, &pool, len, limit).await?;
                    Ok((pool, Some((len, blocks))))
                })
            })
            .await
    }
}

/// The next `limit` blocks of `len` in the purged `pool`, outside what its
/// rules keep from reserves: the free blocks cut by those excludes, in
/// pieces, and the first plain free blocks in best-fit order (each holds
/// at least one block of `len`, so `limit` of them are enough).
async fn next_free(
    conn: &mut dyn Sql,
    pool: &Pool,
    len: u8,
    limit: u32,
) -> StoreResult<Vec<Block>> {
    let excludes = relevant_excludes(pool.cidr, &pool.rules.excludes(pool.cidr));
    let mut cut = Vec::new();
    for x in &excludes {
        let free = free_block_at(conn, pool, x.start()).await?;
        if let Some(free) = free.filter(|f| f.contains(*x) && f != x && !cut.contains(f)) {
            cut.push(free);
        }
    }
    let sql = format!(
        "SELECT start, prefix_len FROM pool_free_blocks WHERE pool = $1 AND prefix_len <= $2{} \
         ORDER BY prefix_len DESC, start LIMIT $3",
        outside_excludes(&excludes, 4)
    );
    let bounds: Vec<([u8; 16], [u8; 16])> = excludes
        .iter()
        .map(|x| (x.start_bytes(), x.last_bytes()))
        .collect();
    let rows_wanted = i64::from(limit) + cut.len() as i64;
    let mut params = args![&pool.name, i64::from(len), rows_wanted].to_vec();
    for (first, last) in &bounds {
        params.push((&first[..]).into());
        params.push((&last[..]).into());
    }
    let mut free = Vec::new();
    for row in conn.rows(sql, &params).await? {
        let b = block(&row, pool.cidr.family(), "start")?;
        if !cut.contains(&b) {
            free.push(b);
        }
    }
    free.extend(cut.iter().flat_map(|&f| usable(f, &excludes)));
    Ok(next_blocks(free, len, limit as usize))
}
