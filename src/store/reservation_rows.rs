//! Writing one granted reservation: its block out of the pool's free
//! space, its row with the next fencing token, and its event.

use super::dialect::Effects;
use super::events;
use super::free_blocks::take_free;
use super::owners::owner_name;
use super::rows::{labels_text, metadata_text};
use super::sessions::Held;
use super::sql::{Arg, Columns, Sql, args, one};
use super::{Error, StoreError, StoreResult};
use crate::domain::At;
use crate::domain::Ms;
use crate::domain::allocator::Grant;
use crate::domain::commands::ReserveSubnet;
use crate::domain::events::{EventType, Holding};
use crate::domain::fencing::FencingToken;
use crate::domain::names::LeaseToken;
use crate::domain::refusal::Refused;
use crate::domain::subnet::{Pool, Reservation};
use crate::domain::tenure;

/// A reservation row as `insert_reservation` writes it, its fields in the
/// order of the statement's placeholders (`$1` to `$17`).
struct NewReservationRow<'a> {
    fencing_token: FencingToken,
    pool: &'a str,
    first_addr: &'a [u8],
    last_addr: &'a [u8],
    prefix_len: i64,
    holder: &'a str,
    token: &'a LeaseToken,
    acquired_at: At,
    expires_at: At,
    ttl_ms: Ms,
    metadata: Option<&'a str>,
    idempotency_key: Option<&'a str>,
    owner: Option<&'a str>,
    session_id: Option<&'a str>,
    /// The subnet as text, for a dialect that keeps it as a network type
    /// besides its addresses.
    subnet: &'a str,
    labels: Option<&'a str>,
    /// Its place in its batch (0 for a single reservation): the rows of a
    /// batch share their `Idempotency-Key`.
    batch_index: i64,
}

impl NewReservationRow<'_> {
    fn args(&self) -> [Arg<'_>; 17] {
        [
            self.fencing_token.into(),
            self.pool.into(),
            self.first_addr.into(),
            self.last_addr.into(),
            self.prefix_len.into(),
            self.holder.into(),
            self.token.into(),
            self.acquired_at.into(),
            self.expires_at.into(),
            self.ttl_ms.into(),
            self.metadata.into(),
            self.idempotency_key.into(),
            self.owner.into(),
            self.session_id.into(),
            self.subnet.into(),
            self.labels.into(),
            self.batch_index.into(),
        ]
    }
}

/// A block the pool gives a reserve: the pool, the request, how the
/// reservation lives, its place in its batch and the time of the grant.
pub struct NewGrant<'a> {
    pub pool: &'a Pool,
    pub new: &'a ReserveSubnet,
    pub held: &'a Held,
    pub grant: Grant,
    pub index: usize,
    pub now: At,
}

/// Takes the block out of the free space and inserts the reservation.
pub async fn insert(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    g: NewGrant<'_>,
    token: LeaseToken,
) -> StoreResult<Reservation> {
    let NewGrant {
        pool,
        new,
        held,
        grant,
        index,
        now,
    } = g;
    take_free(conn, &pool.name, grant).await?;
    let text = conn.texts().next_fencing;
    let fencing_token = one(conn, text, args![])
        .await?
        .fencing_token("fencing_token")?;
    let metadata = metadata_text(new.metadata.as_ref());
    let labels = labels_text(&new.labels)?;
    let (ttl_ms, expires_at, ends_by) = columns(held, new, now);
    let (first, last) = (grant.block.start_bytes(), grant.block.last_bytes());
    let subnet = grant.block.to_string();
    let row = NewReservationRow {
        fencing_token,
        pool: &pool.name,
        first_addr: &first,
        last_addr: &last,
        prefix_len: i64::from(grant.block.prefix_len()),
        holder: new.holder.as_str(),
        token: &token,
        acquired_at: now,
        expires_at,
        ttl_ms,
        metadata: metadata.as_deref(),
        idempotency_key: new.idempotency_key.as_deref(),
        owner: owner_name(&new.owner),
        session_id: held.session().map(|s| s.id.as_str()),
        subnet: &subnet,
        labels: labels.as_deref(),
        batch_index: i64::try_from(index).map_err(|e| StoreError::Internal(e.to_string()))?,
    };
    write(conn, &row, ends_by).await?;
    let holding = Holding {
        holder: new.holder.as_str(),
        fencing_token,
        session: held.session().map(|s| s.id.as_str()),
        owner: owner_name(&new.owner),
    };
    let event = holding.reservation(
        EventType::ReservationReserved,
        &pool.name,
        subnet.clone(),
        None,
        now,
    );
    events::record(conn, fx, &event).await?;
    let mut lease = held.lease(
        new.holder.as_str().to_owned(),
        token,
        fencing_token,
        now,
        new.metadata.clone(),
    );
    lease.ends_by = ends_by.or(lease.ends_by);
    lease.expires_at = lease.expires_at.map(|at| tenure::capped(at, ends_by));
    Ok(Reservation {
        pool: pool.name.clone(),
        subnet: grant.block,
        lease,
        idempotency_key: new.idempotency_key.as_ref().map(|k| k.as_str().to_owned()),
        session: held.session().map(|s| s.id.clone()),
        labels: new.labels.clone().into_map(),
    })
}

/// The row's `ttl_ms` and `expires_at` as `held` gives them, the expiry
/// capped at its `ends_by` (the cap `new` asks for, from `now`).
fn columns(held: &Held, new: &ReserveSubnet, now: At) -> (Ms, At, Option<At>) {
    let (ttl_ms, expires_at) = held.columns(now);
    let ends_by = tenure::ends_by(new.max_lifetime, now);
    (ttl_ms, tenure::capped(expires_at, ends_by), ends_by)
}

/// Inserts `row` and, beside it in the reserve's transaction, its cap on
/// tenure (`ends_by`).
async fn write(
    conn: &mut dyn Sql,
    row: &NewReservationRow<'_>,
    ends_by: Option<At>,
) -> StoreResult<()> {
    conn.execute(conn.texts().insert_reservation, &row.args())
        .await
        .map_err(|e| match e {
            // The database's backstop behind the allocator.
            Error::Storage(StoreError::Overlap(_)) => Refused::SubnetOverlap.into(),
            other => other,
        })?;
    if let Some(ends_by) = ends_by {
        conn.execute(
            "UPDATE subnet_reservations SET ends_by = $3 WHERE pool = $1 AND fencing_token = $2",
            args![row.pool, row.fencing_token, ends_by],
        )
        .await?;
    }
    Ok(())
}
