//! Sessions: every transaction on them, written once for both dialects.
//!
//! A session is one row; a lease bound to it names it in `session_id` and
//! takes its liveness from that row (`live_by_session`), so a keep-alive
//! rewrites one row however many leases are bound. Closing deletes the
//! session and its bound leases in one transaction; an expired session's
//! leases are absent to every grant at once (rule 1) and the reaper deletes
//! them in batches, then the session (rule 8). Reads of sessions, one or a
//! page, are in `session_views.rs`.

use super::StoreResult;
use super::dialect::Atomicity::{AllOrNothing, OnKeys, Statement};
use super::dialect::Effects;
use super::events;
use super::expiry::{self, Text};
use super::hub::Store;
use super::lock_names::LockName;
use super::owners::lock_owner;
use super::rows::{corrupt, metadata, metadata_text};
use super::sql::{Columns, Sql, args, one};
use crate::domain::commands::LeaseOwner;
use crate::domain::commands::{Lifetime, OpenOutcome, OpenSession, SessionClaim};
use crate::domain::events::EventType;
use crate::domain::fencing::FencingToken;
use crate::domain::grant::QuotaKind;
use crate::domain::inputs::Metadata;
use crate::domain::lease::Lease;
use crate::domain::names::Ttl;
use crate::domain::names::{LeaseToken, SessionId};
use crate::domain::refusal::{OverQuota, Refused};
use crate::domain::session::session_event;
use crate::domain::session::{BOUND, Session};
use crate::domain::tenure;
use crate::domain::{At, Ms};
use crate::token::digest;

/// The store's verbs on sessions (`Store::sessions`).
#[derive(Clone, Copy)]
pub struct Sessions<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Store {
    /// The store's verbs on sessions.
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions { store: self }
    }
}

impl Sessions<'_> {
    /// Opens a session, or replays the live one of the same idempotency key.
    pub async fn open(self, new: OpenSession, now: At) -> StoreResult<OpenOutcome> {
        let atomicity = match &new.idempotency_key {
            Some(key) => OnKeys(vec![LockName::SessionOpen(key.clone())]),
            None => AllOrNothing,
        };
        self.store
            .write(atomicity, new, move |c, fx, new| {
                Box::pin(open(c, fx, new, now))
            })
            .await
    }

    /// Extends a live session (one row, however many leases are bound);
    /// `caller` as in `SessionClaim`.
    pub async fn renew(
        self,
        id: &SessionId,
        token: &LeaseToken,
        caller: Option<&str>,
        ttl: Option<Ttl>,
        now: At,
    ) -> StoreResult<Session> {
        // One row, however many leases are bound; a refusal only reads.
        let args = (id.clone(), token.clone(), caller.map(str::to_owned));
        self.store
            .write(Statement, args, move |c, _, (id, token, caller)| {
                Box::pin(async move { renew(c, &id, &token, caller.as_deref(), ttl, now).await })
            })
            .await
    }
}

pub(super) static SESSION_COLUMNS: Text = Text::new(|| {
    format!(
        "id, holder, token, owner, owner_quota, acquired_at, {} AS expires_at, \
         ttl_ms, metadata, idempotency_key, ends_by",
        expiry::expires_at("sessions")
    )
});

/// The session's `token` column holds the digest `$d` of the token sent as
/// `$p`. A row written before tokens were kept as digests holds the 32 hex
/// digits themselves; a digest is 64, and a token sent is always 32, so a
/// digest read from the database is no token.
fn token_is(d: u8, p: u8) -> String {
    format!("(token = ${d} OR (length(token) = 32 AND token = ${p}))")
}

/// Keeps the session `$1` alive at `$2` for the TTL `$4` or its own, if
/// the token `$3` (digest `$6`) is its own and the caller `$5` may.
static RENEW: Text = Text::new(|| {
    format!(
        "UPDATE sessions SET ttl_ms = coalesce($4, ttl_ms), expires_at = {} \
         WHERE id = $1 AND {} AND {} \
         AND ($5 IS NULL OR coalesce(owner, '') = $5) RETURNING {SESSION_COLUMNS}",
        expiry::renewed("$2 + coalesce($4, ttl_ms)"),
        expiry::live("sessions", "$2"),
        token_is(6, 3)
    )
});

/// Closes the session `$1` live at `$2`, if the token `$3` (digest `$5`)
/// is its own and the caller `$4` may.
pub(super) static CLOSE: Text = Text::new(|| {
    format!(
        "DELETE {LIVE_SESSION} AND {} \
         AND ($4 IS NULL OR coalesce(owner, '') = $4) RETURNING holder, owner",
        token_is(5, 3)
    )
});

/// `token_is` for a row already read.
fn token_matches(held: &Session, token: &str) -> bool {
    held.token_digest == digest(token)
        || (held.token_digest.len() == 32 && held.token_digest == token)
}

/// The session row of `$1`, live at `$2`.
pub(super) static LIVE_SESSION: Text = Text::new(|| {
    format!(
        "FROM sessions WHERE id = $1 AND {}",
        expiry::live("sessions", "$2")
    )
});

pub(super) fn session(row: &impl Columns) -> StoreResult<Session> {
    Ok(Session {
        id: row.text("id")?,
        holder: row.text("holder")?,
        token_digest: row.text("token")?,
        owner: row.opt_text("owner")?,
        owner_quota: row
            .opt_int("owner_quota")?
            .map(|q| u32::try_from(q).map_err(|_| corrupt("owner_quota")))
            .transpose()?,
        acquired_at: row.at("acquired_at")?,
        expires_at: row.at("expires_at")?,
        ttl_ms: row.ms("ttl_ms")?,
        metadata: metadata(row.opt_text("metadata")?)?,
        idempotency_key: row.opt_text("idempotency_key")?,
        ends_by: row.opt_at("ends_by")?,
    })
}

/// Whether `caller` may use a session of `owner` (`None`: anyone may).
fn owned_by(owner: &Option<String>, caller: Option<&str>) -> bool {
    caller.is_none_or(|c| owner.as_deref() == Some(c))
}

/// Opens the session, or replays the live one the caller opened with the
/// same Idempotency-Key; its owner's quota of sessions is counted in the
/// same transaction.
pub async fn open(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: OpenSession,
    now: At,
) -> StoreResult<OpenOutcome> {
    // Kept as digests: neither gives the token back (`token::derive`).
    let idempotency_key = new.idempotency_key.as_deref().map(digest);
    if let Some(idem) = &idempotency_key
        && let Some(held) = replay(conn, &new, idem, now).await?
    {
        return Ok(OpenOutcome::Replayed(held));
    }
    if let (Some(owner), Some(limit)) = (&new.owner, new.max_sessions) {
        let current = sessions_quota(conn, &owner.name, now).await?;
        if current >= u64::from(limit) {
            return Err(OverQuota {
                quota: QuotaKind::Sessions,
                limit,
                current,
                needed: 1,
            }
            .into());
        }
    }
    let meta = metadata_text(new.metadata.as_ref());
    let token_digest = digest(new.token.as_str());
    let (owner, owner_quota) = match new.owner {
        Some(LeaseOwner {
            name,
            max_live_leases,
        }) => (Some(name), max_live_leases),
        None => (None, None),
    };
    let ends_by = tenure::ends_by(new.max_lifetime, now);
    let expires_at = tenure::capped(now + new.ttl.ms(), ends_by);
    conn.execute(
        "INSERT INTO sessions (id, holder, token, owner, owner_quota, acquired_at, expires_at, \
         ttl_ms, metadata, idempotency_key, ends_by) \
         VALUES ($1, $2, $3, $4, $9, $5, $10, $6, $7, $8, $11)",
        args![
            new.id.as_str(),
            new.holder.as_str(),
            &token_digest,
            &owner,
            now,
            new.ttl.ms(),
            &meta,
            &idempotency_key,
            owner_quota.map(i64::from),
            expires_at,
            ends_by
        ],
    )
    .await?;
    let opened = session_event(
        EventType::SessionOpened,
        &new.id,
        &new.holder,
        owner.as_deref(),
        None,
        now,
    );
    events::record(conn, fx, &opened).await?;
    Ok(OpenOutcome::Opened(Session {
        id: new.id.into_string(),
        holder: new.holder.into_string(),
        token_digest,
        owner,
        owner_quota,
        acquired_at: now,
        expires_at,
        ttl_ms: new.ttl.ms(),
        metadata: new.metadata.map(Metadata::into_map),
        idempotency_key,
        ends_by,
    }))
}

/// The live session the caller opened with the same Idempotency-Key
/// (`idem`, its digest), if any; an expired one gives its key up.
async fn replay(
    conn: &mut dyn Sql,
    new: &OpenSession,
    idem: &str,
    now: At,
) -> StoreResult<Option<Session>> {
    let same_key = "idempotency_key = $1 AND coalesce(owner, '') = coalesce($2, '')";
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions WHERE {same_key} AND {}",
        expiry::live("sessions", "$3")
    );
    let owner = new.owner.as_ref().map(|o| o.name.as_str());
    if let Some(row) = conn.row(sql, args![idem, owner, now]).await? {
        let held = session(&row)?;
        if held.holder != new.holder.as_str() {
            return Err(Refused::IdempotencyMismatch {
                holder: held.holder,
            }
            .into());
        }
        return Ok(Some(held));
    }
    // An expired session keeps its row until reaped, not its key.
    let sql = format!(
        "UPDATE sessions SET idempotency_key = NULL WHERE {same_key} AND {}",
        expiry::expired("sessions", "$3")
    );
    conn.execute(sql, args![idem, owner, now]).await?;
    Ok(None)
}

/// The live sessions of the owner `$1` at `$2`.
static COUNT_OWNED: Text = Text::new(|| {
    format!(
        "SELECT count(*) AS n FROM sessions WHERE owner = $1 AND {}",
        expiry::live("sessions", "$2")
    )
});

/// The live sessions `owner` opened, counted after the owner's lock (where
/// writes run side by side) so racing opens cannot pass its quota together.
async fn sessions_quota(conn: &mut dyn Sql, owner: &str, now: At) -> StoreResult<u64> {
    lock_owner(conn, owner).await?;
    let n = one(conn, COUNT_OWNED.as_str(), args![owner, now])
        .await?
        .int("n")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

pub async fn renew(
    conn: &mut dyn Sql,
    id: &str,
    token: &LeaseToken,
    caller: Option<&str>,
    ttl: Option<Ttl>,
    now: At,
) -> StoreResult<Session> {
    let (token, ttl_ms) = (token.as_str(), ttl.map(Ttl::ms));
    let sent = digest(token);
    match conn
        .row(RENEW.as_str(), args![id, now, token, ttl_ms, caller, &sent])
        .await?
    {
        // Not live, not the caller's or a wrong token: one answer, as for
        // a session that never existed.
        Some(row) => session(&row),
        None => Err(Refused::LeaseLost.into()),
    }
}

/// Whom a lease bound to `session` belongs to: the API token that opened the
/// session, with the quota it had then, whoever binds it (an admin may).
pub fn owner_of(session: &Session) -> Option<LeaseOwner> {
    session.owner.clone().map(|name| LeaseOwner {
        name,
        max_live_leases: session.owner_quota,
    })
}

pub(super) fn keys_of<R: Columns>(rows: &[R]) -> StoreResult<Vec<String>> {
    rows.iter().map(|r| r.text("key")).collect()
}

/// Checks a grant's claim on a session inside the grant's transaction, and
/// holds the session's row until it ends (where writes run side by side), so
/// a close cannot slip between the check and the insert.
pub async fn bind(conn: &mut dyn Sql, claim: &SessionClaim, now: At) -> StoreResult<Session> {
    bind_many(conn, claim, now, 1).await
}

/// `bind` for a grant of `adding` leases at once (a reserve's batch): the
/// session takes all of them within its cap, or none.
pub async fn bind_many(
    conn: &mut dyn Sql,
    claim: &SessionClaim,
    now: At,
    adding: u32,
) -> StoreResult<Session> {
    let held = check(conn, claim, now).await?;
    // A session carries only leases its own token could hold, whoever binds.
    if !claim.carriers.allows(held.owner.as_deref()) {
        return Err(Refused::SessionCannotCarry {
            session: held.id,
            owner: held.owner,
        }
        .into());
    }
    let bound = one(
        conn,
        "SELECT (SELECT count(*) FROM lock_leases WHERE session_id = $1) \
         + (SELECT count(*) FROM subnet_reservations WHERE session_id = $1) \
         + (SELECT count(*) FROM group_members WHERE session_id = $1) AS n",
        args![&claim.id],
    )
    .await?
    .int("n")?;
    if bound + i64::from(adding) > i64::from(claim.max_leases) {
        return Err(Refused::SessionFull {
            limit: claim.max_leases,
        }
        .into());
    }
    Ok(held)
}

/// A grant's lifetime as its transaction holds it: a TTL of its own, or
/// the live session it is bound to (whose row is held until the commit).
/// The one place a lifetime becomes the row's columns and the answer's.
pub enum Held {
    Ttl(Ttl),
    Bound(Session),
}

impl Held {
    /// Takes `lifetime` in the grant's transaction: a session is checked and
    /// bound (`bind`) before anything changes.
    pub async fn take(conn: &mut dyn Sql, lifetime: &Lifetime, now: At) -> StoreResult<Held> {
        Self::take_many(conn, lifetime, now, 1).await
    }

    /// `take` for a grant of `count` leases at once: a session must have
    /// room for all of them.
    pub async fn take_many(
        conn: &mut dyn Sql,
        lifetime: &Lifetime,
        now: At,
        count: u32,
    ) -> StoreResult<Held> {
        Ok(match lifetime {
            Lifetime::Ttl(ttl) => Held::Ttl(*ttl),
            Lifetime::Session(claim) => Held::Bound(bind_many(conn, claim, now, count).await?),
        })
    }

    /// The session it is bound to, if any.
    pub fn session(&self) -> Option<&Session> {
        match self {
            Held::Bound(s) => Some(s),
            Held::Ttl(_) => None,
        }
    }

    /// The row's `ttl_ms` and `expires_at`: a bound row lives by its
    /// session's row, never by its own expiry.
    pub fn columns(&self, now: At) -> (Ms, At) {
        match self {
            Held::Ttl(ttl) => (ttl.ms(), now + ttl.ms()),
            Held::Bound(s) => (s.ttl_ms, BOUND),
        }
    }

    /// The lease a grant at `now` answers: a bound one shows its session's
    /// TTL and expiry.
    pub fn lease(
        &self,
        holder: String,
        token: LeaseToken,
        fencing_token: FencingToken,
        now: At,
        metadata: Option<Metadata>,
    ) -> Lease {
        let (ttl_ms, expires_at) = match self {
            Held::Ttl(ttl) => (ttl.ms(), now + ttl.ms()),
            Held::Bound(s) => (s.ttl_ms, s.expires_at),
        };
        let metadata = metadata.map(Metadata::into_map);
        let mut lease = Lease::granted(holder, token, fencing_token, now, ttl_ms, metadata);
        lease.expires_at = Some(expires_at);
        // A bound lease lives by its session's cap on tenure.
        lease.ends_by = self.session().and_then(|s| s.ends_by);
        lease
    }
}

/// Checks a claim on a session (live, the caller's, its token) and holds
/// the session's row until the transaction ends, where writes run side by side.
pub async fn check(conn: &mut dyn Sql, claim: &SessionClaim, now: At) -> StoreResult<Session> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS} {LIVE_SESSION}{}",
        conn.texts().lock_pool_row
    );
    // Another token's session is answered as a missing one, before its
    // secret is compared: the answer says nothing of whether it lives, nor
    // of a token guessed for it.
    let held = match conn.row(sql, args![&claim.id, now]).await? {
        Some(row) => Some(session(&row)?),
        None => None,
    };
    let Some(held) = held.filter(|s| owned_by(&s.owner, claim.caller.as_deref())) else {
        return Err(Refused::SessionLost {
            field: "session.id",
        }
        .into());
    };
    if !token_matches(&held, claim.token.as_str()) {
        return Err(Refused::SessionLost {
            field: "session.token",
        }
        .into());
    }
    Ok(held)
}
