//! A lock row as a grant writes it, and the statements that write it with
//! its grant's event: in the grant's transaction (`insert_lock`, the event
//! in the same statement where the dialect records the rows it selects), or
//! as a statement of its own (`FreeGrant::OneStatement`, for `lock_alone`).

use super::StoreResult;
use super::dialect::Effects;
use super::events;
use super::owners::owner_name;
use super::sessions::Held;
use super::sql::{Arg, Columns, Sql};
use crate::domain::commands::AcquireLock;
use crate::domain::events::EventType;
use crate::domain::events::Holding;
use crate::domain::fencing::FencingToken;
use crate::domain::names::LeaseToken;
use crate::domain::tenure;
use crate::domain::{At, Ms};

/// A lock row written: its fencing token and when it was granted.
pub(super) struct Written {
    pub fencing_token: FencingToken,
    pub at: At,
}

/// Writes `row`, the lease `new` living as `held`, with the next fencing
/// token, and records its grant: in one statement, `recorded` (an insert
/// that records its event too), where the dialect has one, else the insert
/// and then the event. `None` when the
/// row's conditions kept it out and nothing was written.
pub(super) async fn write(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    recorded: Option<&'static str>,
    new: &AcquireLock,
    row: &NewLockRow<'_>,
    held: &Held,
) -> StoreResult<Option<Written>> {
    let event = |fencing_token, at| {
        let holding = Holding {
            holder: new.holder.as_str(),
            fencing_token,
            session: held.session().map(|s| s.id.as_str()),
            owner: owner_name(&new.owner),
        };
        holding.lock(EventType::LockAcquired, new.key.as_str(), None, at)
    };
    if let Some(text) = recorded {
        let mut args = row.args().to_vec();
        args.push(EventType::LockAcquired.as_str().into());
        let Some(granted) = conn.row(text, &args).await? else {
            return Ok(None);
        };
        let (fencing_token, at) = (
            granted.fencing_token("fencing_token")?,
            granted.at("acquired_at")?,
        );
        events::recorded(fx, event(fencing_token, at), granted.revision("revision")?);
        cap(conn, row, fencing_token).await?;
        return Ok(Some(Written { fencing_token, at }));
    }
    let Some(fencing_token) = insert_row(conn, row).await? else {
        return Ok(None);
    };
    let at = row.acquired_at;
    events::record(conn, fx, &event(fencing_token, at)).await?;
    cap(conn, row, fencing_token).await?;
    Ok(Some(Written { fencing_token, at }))
}

/// Writes the cap on tenure of the row just inserted, in the grant's
/// transaction (a capped grant never runs as one statement of its own).
async fn cap(
    conn: &mut dyn Sql,
    row: &NewLockRow<'_>,
    fencing_token: FencingToken,
) -> StoreResult<()> {
    if let Some(ends_by) = row.ends_by {
        conn.execute(
            "UPDATE lock_leases SET ends_by = $3 WHERE key = $1 AND fencing_token = $2",
            &[row.key.into(), fencing_token.into(), ends_by.into()],
        )
        .await?;
    }
    Ok(())
}

/// A lock row as `insert_lock` (or `FreeGrant::OneStatement`) writes it, its fields in the order of the
/// statement's placeholders (`$1` to `$16`).
pub(super) struct NewLockRow<'a> {
    key: &'a str,
    holder: &'a str,
    token: &'a LeaseToken,
    mode: &'a str,
    max_holders: Option<i64>,
    permits: i64,
    acquired_at: At,
    expires_at: At,
    ttl_ms: Ms,
    lock_delay_ms: Ms,
    metadata: Option<&'a str>,
    idempotency_key: Option<&'a str>,
    owner: Option<&'a str>,
    session_id: Option<&'a str>,
    /// Only if the key has no row at all.
    pub(super) only_if_free: bool,
    /// Only if no row of its owner carries its idempotency key.
    pub(super) only_if_idempotency_unused: bool,
    /// Its cap on tenure, written beside the insert (`cap`).
    ends_by: Option<At>,
}

impl<'a> NewLockRow<'a> {
    /// The row of `new` granted at `now`, with its secret `token`, as
    /// `held`, written whatever the key's rows.
    pub(super) fn of(
        new: &'a AcquireLock,
        token: &'a LeaseToken,
        now: At,
        held: &'a Held,
        metadata: Option<&'a str>,
    ) -> Self {
        let (ttl_ms, expires_at) = held.columns(now);
        let ends_by = tenure::ends_by(new.max_lifetime, now);
        let expires_at = tenure::capped(expires_at, ends_by);
        Self {
            key: new.key.as_str(),
            holder: new.holder.as_str(),
            token,
            mode: new.mode.as_str(),
            max_holders: new.max_holders.map(|n| i64::from(n.get())),
            permits: i64::from(new.permits.get()),
            acquired_at: now,
            expires_at,
            ttl_ms,
            lock_delay_ms: new.lock_delay_ms,
            metadata,
            idempotency_key: new.idempotency_key.as_deref(),
            owner: owner_name(&new.owner),
            session_id: held.session().map(|s| s.id.as_str()),
            only_if_free: false,
            only_if_idempotency_unused: false,
            ends_by,
        }
    }

    fn args(&self) -> [Arg<'_>; 16] {
        [
            self.key.into(),
            self.holder.into(),
            self.token.into(),
            self.mode.into(),
            self.max_holders.into(),
            self.acquired_at.into(),
            self.expires_at.into(),
            self.ttl_ms.into(),
            self.lock_delay_ms.into(),
            self.metadata.into(),
            self.idempotency_key.into(),
            self.owner.into(),
            self.session_id.into(),
            self.only_if_free.into(),
            self.only_if_idempotency_unused.into(),
            self.permits.into(),
        ]
    }
}

/// Inserts `row` with the next fencing token and answers it, or `None`
/// when its conditions kept it out.
async fn insert_row(conn: &mut dyn Sql, row: &NewLockRow<'_>) -> StoreResult<Option<FencingToken>> {
    let inserted = conn.row(conn.texts().insert_lock, &row.args()).await?;
    inserted
        .map(|r| r.fencing_token("fencing_token"))
        .transpose()
}
