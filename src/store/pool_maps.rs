//! What a pool's map is drawn from: the pool, the subnets of its live
//! reservations with their states in address order, and its children, read
//! in one snapshot
//! (`domain::pool_map` cuts them into blocks).

use super::StoreResult;
use super::pool_tree::children;
use super::pools;
use super::pools::Pools;
use super::reservation_updates::live;
use super::rows::{self, RESERVATION_COLUMNS};
use super::sql::{Sql, args};
use crate::domain::At;
use crate::domain::cidr::Block;
use crate::domain::names::PoolName;
use crate::domain::subnet::{Child, Pool, ReservationState};

/// A pool, what its live reservations occupy, and its children.
pub type Occupancy = (Pool, Vec<(Block, ReservationState)>, Vec<Child>);

impl Pools<'_> {
    /// `name` and its live reservations' subnets and states, in address
    /// order; `Missing::Pool` when there is no such pool.
    pub async fn occupancy(self, name: &PoolName, now: At) -> StoreResult<Occupancy> {
        self.store
            .read(name.clone(), move |c, name| {
                Box::pin(async move { occupancy(c, &name, now).await })
            })
            .await
    }
}

async fn occupancy(conn: &mut dyn Sql, name: &str, now: At) -> StoreResult<Occupancy> {
    let pool = pools::load(conn, name).await?;
    // `first_addr > ''`: every row, in the statement shape of a listing.
    let sql = format!(
        "SELECT {RESERVATION_COLUMNS} FROM subnet_reservations \
         WHERE pool = $1 AND first_addr > $2 AND {} ORDER BY first_addr",
        live()
    );
    let from: &[u8] = &[];
    let rows = conn.rows(sql, args![&pool.name, from, now]).await?;
    let used = rows
        .iter()
        .map(|r| rows::reservation(pool.cidr.family(), r).map(|r| (r.subnet, r.state())))
        .collect::<StoreResult<Vec<_>>>()?;
    let children = children(conn, &pool).await?;
    Ok((pool, used, children))
}
