//! Session operations: open, keep alive, close, inspect, list, force close. A
//! session is a lease of its own (a TTL on the lease clock, a secret token);
//! ending it ends every lease bound to it, and wakes their keys' waiters.

use super::groups::{NamePage, paged};
use super::{LeaseError, Leases, new_id, new_token};
use crate::domain::Revision;
use crate::domain::commands::{LeaseOwner, OpenOutcome, OpenSession, SessionEnd, SessionQuery};
use crate::domain::inputs::{Metadata, PageLimit};
use crate::domain::names::{Holder, IdempotencyKey, LeaseToken, SessionId, Ttl};
use crate::domain::selection::Selection;
use crate::domain::session::{BoundLeases, MAX_BOUND_SHOWN, Session, SessionAccess, SessionView};
use crate::domain::tenure::MaxLifetime;
use crate::domain::{Missing, Refused};
use crate::store;
use crate::telemetry::Metrics;
use crate::token;

/// A session to open, as the caller asks for it, parsed.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub holder: Holder,
    pub ttl: Ttl,
    /// The cap on its tenure, if any.
    pub max_lifetime: Option<MaxLifetime>,
    pub metadata: Option<Metadata>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// The API token opening it, and its quota; `None` without an auth file.
    pub owner: Option<LeaseOwner>,
    /// The sessions that token may hold open at once (`None`: no limit).
    pub max_sessions: Option<u32>,
    /// What only that API token's holder knows (the digest of its text), for
    /// the token of a session opened with an `Idempotency-Key`.
    pub caller_secret: Option<[u8; 32]>,
}

/// An opened session and its secret token, shown to its opener alone.
#[derive(Debug, Clone, PartialEq)]
pub enum Opened {
    Opened(Session, LeaseToken),
    Replayed(Session, LeaseToken),
}

fn secret(new: &NewSession) -> Option<&[u8]> {
    new.caller_secret.as_ref().map(|c| &c[..])
}

pub struct SessionService<'a> {
    pub(super) leases: &'a Leases,
}

impl SessionService<'_> {
    pub async fn open(&self, new: NewSession) -> Result<Opened, LeaseError> {
        let id = new_id();
        // With an Idempotency-Key the token is derived, so that a retry can
        // be answered it again: the store keeps only digests.
        let token = match &new.idempotency_key {
            Some(k) => token::derive(k, secret(&new), &id),
            None => new_token(),
        };
        let replay_key = new.idempotency_key.clone();
        let caller_secret = new.caller_secret;
        let open = OpenSession {
            id: SessionId::parse(id)
                .map_err(|e| LeaseError::Internal(format!("a drawn session id: {e}")))?,
            token: token.clone(),
            holder: new.holder,
            ttl: new.ttl,
            max_lifetime: new.max_lifetime,
            metadata: new.metadata,
            idempotency_key: new.idempotency_key,
            owner: new.owner,
            max_sessions: new.max_sessions,
        };
        let now = self.leases.now();
        Ok(match self.leases.store.sessions().open(open, now).await? {
            OpenOutcome::Opened(s) => {
                Metrics::inc(&self.leases.metrics.sessions.opens);
                Opened::Opened(s, token)
            }
            OpenOutcome::Replayed(s) => {
                let key = replay_key.as_ref().map_or("", IdempotencyKey::as_str);
                let again = token::derive(key, caller_secret.as_ref().map(|c| &c[..]), &s.id);
                // The API token's text changed since (same name, new
                // secret): the token cannot be given again.
                if token::digest(again.as_str()) != s.token_digest {
                    return Err(Refused::IdempotencyMismatch { holder: s.holder }.into());
                }
                Opened::Replayed(s, again)
            }
        })
    }

    /// The API token a statement on session `id` must find as its opener,
    /// for a caller with `access` (`None`: any). A caller who may see the
    /// sessions of several tokens has the session's opener read first; a
    /// session it may not see is answered `missing`, as one that is not
    /// live, decided before its token is compared.
    async fn opener(
        &self,
        id: &SessionId,
        access: &SessionAccess,
        missing: Refused,
    ) -> Result<Option<String>, LeaseError> {
        match access {
            SessionAccess::Any => Ok(None),
            SessionAccess::Owners(names) if names.len() == 1 => Ok(Some(names[0].clone())),
            SessionAccess::Owners(_) => {
                let now = self.leases.now();
                let view = match self.leases.store.sessions().get(id, now).await {
                    Err(store::Error::Refused(Refused::Missing(Missing::Session))) => {
                        return Err(missing.into());
                    }
                    other => other?,
                };
                let owner = view.session.owner;
                if !access.allows(owner.as_deref()) {
                    return Err(missing.into());
                }
                Ok(owner)
            }
        }
    }

    /// Extends the session of a caller with `access`; another token's
    /// session is `LeaseLost` whatever token is sent, as a missing one.
    pub async fn renew(
        &self,
        id: &SessionId,
        token: &LeaseToken,
        access: &SessionAccess,
        ttl: Option<Ttl>,
    ) -> Result<Session, LeaseError> {
        let opener = self.opener(id, access, Refused::LeaseLost).await?;
        let now = self.leases.now();
        let session = self
            .leases
            .store
            .sessions()
            .renew(id, token, opener.as_deref(), ttl, now)
            .await?;
        Metrics::inc(&self.leases.metrics.sessions.renewals);
        Ok(session)
    }

    /// Closes the session by its token (`access` as in `renew`), releasing
    /// every lease bound to it.
    pub async fn close(
        &self,
        id: &SessionId,
        token: &LeaseToken,
        access: &SessionAccess,
    ) -> Result<Vec<String>, LeaseError> {
        let opener = self.opener(id, access, Refused::LeaseLost).await?;
        let end = SessionEnd::Close {
            token: token.clone(),
            caller: opener,
        };
        self.end(id, end).await
    }

    /// Closes the session whatever its token (admin), if the caller may see
    /// it and every lease bound to it lies `within` the caller's scope;
    /// answers the keys it freed.
    pub async fn force_close(
        &self,
        id: &SessionId,
        access: &SessionAccess,
        within: Selection,
    ) -> Result<Vec<String>, LeaseError> {
        let opener = self.opener(id, access, Missing::Session.into()).await?;
        let end = SessionEnd::Force {
            caller: opener,
            within,
        };
        self.end(id, end).await
    }

    async fn end(&self, id: &SessionId, end: SessionEnd) -> Result<Vec<String>, LeaseError> {
        let now = self.leases.now();
        let mut keys = self.leases.store.sessions().end(id, end, now).await?;
        Metrics::inc(&self.leases.metrics.sessions.closes);
        keys.sort_unstable();
        keys.dedup();
        for key in &keys {
            self.leases.waiters.wake(key);
        }
        Ok(keys)
    }

    /// A live session the caller may see, with how many leases it holds;
    /// `NotFound`.
    pub async fn inspect(
        &self,
        id: &SessionId,
        access: &SessionAccess,
    ) -> Result<SessionView, LeaseError> {
        let now = self.leases.now();
        let view = self.leases.store.sessions().get(id, now).await?;
        seen(access, &view.session)?;
        Ok(view)
    }

    /// A live session the caller may see (as `inspect`) and the leases
    /// bound to it, at most `MAX_BOUND_SHOWN` of each kind, with the
    /// change-log revision they reflect; `NotFound`.
    pub async fn bound(
        &self,
        id: &SessionId,
        access: &SessionAccess,
    ) -> Result<(BoundLeases, Revision), LeaseError> {
        let now = self.leases.now();
        // One more than shown of each, to know whether a kind holds more.
        let most = MAX_BOUND_SHOWN as u32 + 1;
        let (bound, revision) = self.leases.store.sessions().leases(id, most, now).await?;
        seen(access, &bound.session)?;
        Ok((bound.at_most(MAX_BOUND_SHOWN), revision))
    }

    /// One page of the live sessions the caller may see (`access`, as
    /// `inspect` answers them), in id order after the id `after`; only
    /// `holder`'s when given.
    pub async fn list(
        &self,
        access: &SessionAccess,
        holder: Option<Holder>,
        limit: PageLimit,
        after: Option<String>,
    ) -> Result<NamePage<SessionView>, LeaseError> {
        let limit = limit.get();
        let query = SessionQuery {
            access: access.clone(),
            holder: holder.map(Holder::into_string),
            after,
            limit: limit + 1,
        };
        let now = self.leases.now();
        let (items, revision) = self.leases.store.sessions().list(&query, now).await?;
        Ok(paged(items, limit, revision, |v: &SessionView| {
            &v.session.id
        }))
    }
}

/// Another token's session is answered as a missing one.
fn seen(access: &SessionAccess, session: &Session) -> Result<(), LeaseError> {
    match access.allows(session.owner.as_deref()) {
        true => Ok(()),
        false => Err(Missing::Session.into()),
    }
}
