package leasehold

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// Membership is this client's member in a group. Bound to a session
// (WithSession) it lives exactly as long as the session; with a TTL of its
// own (WithTTL, default DefaultTTL) it is renewed in the background, as a
// Mutex is. Lost is closed when it ends: left, or lost as far as this
// client can tell.
type Membership struct {
	c       *Client
	group   string
	member  string
	token   string
	session *Session
	ttl     time.Duration
	k       *keeper
	unbind  func()
	ending  *ending

	// Joined is true when the join created the member (201); false when the
	// same session replaced the capabilities of its member (200).
	Joined bool

	mu   sync.Mutex
	info MemberInfo
}

// Join makes member a live member of group: bound to the session of
// WithSession, or with the TTL of WithTTL (default DefaultTTL) renewed in the
// background; WithCapabilities says what it can do. A group that does not
// exist is IsGroupNotFound; a member id another session or holder has is
// IsMemberExists. A session-bound join of the session's own member again
// replaces its capabilities.
func (c *Client) Join(ctx context.Context, group, member string, opts ...Option) (*Membership, error) {
	g := c.grantOf(opts)
	body := struct {
		Session      *sessionRef `json:"session,omitempty"`
		TTL          *int64      `json:"ttl_ms,omitempty"`
		MaxLifetime  *int64      `json:"max_lifetime_ms,omitempty"`
		Capabilities any         `json:"capabilities,omitempty"`
	}{Capabilities: g.capabilities}
	ttl := g.ttl
	if g.session != nil {
		body.Session = g.session.ref()
	} else {
		if ttl == 0 {
			ttl = DefaultTTL
		}
		body.TTL = optMs(ttl)
		body.MaxLifetime = optMs(g.maxLifetime)
	}
	// A join with a TTL is a grant without an Idempotency-Key: not retried
	// after an answer that may have been lost (the member would then be
	// another holder's). A session-bound join is safe to repeat.
	cl := &call{method: http.MethodPut, path: memberPath(group, member), body: body, grant: g.session == nil}
	var info MemberInfo
	status, err := c.do(ctx, cl, &info)
	if err != nil {
		return nil, err
	}
	m := &Membership{c: c, group: group, member: member, token: info.Token, session: g.session,
		ttl: ttl, info: info, ending: newEnding(), Joined: status == http.StatusCreated}
	if g.session != nil {
		m.unbind = g.session.notify(func(err error) {
			m.ending.end(&LostError{Reason: ErrSessionEnded, Err: cause(err)})
		})
		return m, nil
	}
	deadline := localDeadline(cl.sent, cl.received, 0, info.ExpiresInMS)
	m.k = startKeeper(deadline, capped(info.ExpiresInMS, info.LifetimeLeftMS), ttl,
		lostMargin(ttl, g.margin), m.renew, func(err error) { m.ending.end(err) })
	return m, nil
}

func (m *Membership) renew(ctx context.Context) (time.Time, bool, error) {
	r, deadline, err := m.c.renewMember(ctx, m.group, m.member, m.token, m.ttl, nil)
	if err != nil {
		return time.Time{}, false, err
	}
	m.setInfo(r)
	return deadline, capped(r.ExpiresInMS, r.LifetimeLeftMS), nil
}

// Group is the membership's group.
func (m *Membership) Group() string { return m.group }

// Member is the member id.
func (m *Membership) Member() string { return m.member }

// Token is the member's own token (empty for a session-bound member).
func (m *Membership) Token() string { return m.token }

// Info is the member as the last join, renewal or update returned it.
func (m *Membership) Info() MemberInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.info
}

// Lost is closed when the membership has ended: left (ErrUnlocked), its
// session ended (ErrSessionEnded), removed or expired on the server
// (ErrReleasedElsewhere), refused (ErrRefused), or no renewal confirmed
// in time (ErrExpired), the lost margin before its local deadline.
func (m *Membership) Lost() <-chan struct{} { return m.ending.ch }

// Err says why Lost was closed (nil while the membership lives).
func (m *Membership) Err() error { return m.ending.reason() }

func (m *Membership) setInfo(info *MemberInfo) {
	m.mu.Lock()
	m.info = *info
	m.info.Token = m.token
	m.mu.Unlock()
}

// UpdateCapabilities replaces what the member can do, in one transaction
// (one group.member_updated event): a renewal that carries them for a member
// with its own TTL, a join again with its session for a bound one.
func (m *Membership) UpdateCapabilities(ctx context.Context, capabilities any) error {
	if m.session != nil {
		body := struct {
			Session      *sessionRef `json:"session"`
			Capabilities any         `json:"capabilities"`
		}{m.session.ref(), capabilities}
		var info MemberInfo
		if _, err := m.c.do(ctx, &call{method: http.MethodPut, path: memberPath(m.group, m.member), body: body}, &info); err != nil {
			return err
		}
		m.setInfo(&info)
		return nil
	}
	info, _, err := m.c.RenewMember(ctx, m.group, m.member, m.token, m.ttl, capabilities)
	if err != nil {
		return err
	}
	m.setInfo(info)
	return nil
}

// Leave ends the membership (one group.member_left event, reason "left"):
// Lost closes (ErrUnlocked) first. A membership that is already gone is no
// error to leave. It waits on the network no longer than the membership's
// own life, and after a known loss at most 1 s, returning nil.
func (m *Membership) Leave(ctx context.Context) error {
	bound := time.Now()
	switch {
	case m.k != nil:
		m.k.halt()
		bound = m.k.lostAt()
	case m.unbind != nil:
		m.unbind()
		bound = m.session.deadline()
	}
	lostBefore := !m.ending.end(&LostError{Reason: ErrUnlocked})
	if lostBefore {
		why := m.Err()
		if errors.Is(why, ErrReleasedElsewhere) || errors.Is(why, ErrSessionEnded) || errors.Is(why, ErrUnlocked) {
			return nil
		}
		bound = time.Now()
	}
	if min := time.Now().Add(lostReleaseTimeout); bound.Before(min) {
		bound = min
	}
	lctx, cancel := context.WithDeadline(ctx, bound)
	defer cancel()
	body := struct {
		Session *sessionRef `json:"session,omitempty"`
		Token   string      `json:"token,omitempty"`
	}{Token: m.token}
	if m.session != nil {
		body.Session, body.Token = m.session.ref(), ""
	}
	_, err := m.c.do(lctx, &call{method: http.MethodPost, path: memberPath(m.group, m.member) + "/leave", body: body}, nil)
	if lostBefore || IsLeaseLost(err) {
		return nil // the loss was told already; the leave was a courtesy
	}
	return err
}
