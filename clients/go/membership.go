package leasehold

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// WithCapabilities sets what a member can do (any value that encodes as
// JSON) when it joins a group.
func WithCapabilities(v any) Option { return func(g *grant) { g.capabilities = v } }

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

	// Joined is true when the join created the member (201); false when the
	// same session replaced the capabilities of its member (200).
	Joined bool

	mu   sync.Mutex
	info MemberInfo
	lost chan struct{}
	once sync.Once
	err  error
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
		ttl: ttl, info: info, lost: make(chan struct{}), Joined: status == http.StatusCreated}
	if g.session != nil {
		done := g.session.Done()
		go func() {
			select {
			case <-done:
				m.end(g.session.Err())
			case <-m.lost:
			}
		}()
		return m, nil
	}
	deadline := cl.sent.Add(time.Duration(info.ExpiresInMS) * time.Millisecond)
	m.k = startKeeper(deadline, ttl, func(ctx context.Context) (time.Time, error) {
		r, sent, err := c.RenewMember(ctx, group, member, m.token, ttl, nil)
		if err != nil {
			return time.Time{}, err
		}
		m.setInfo(r)
		return sent.Add(time.Duration(r.ExpiresInMS) * time.Millisecond), nil
	})
	go func() {
		select {
		case <-m.k.lost:
			m.end(m.k.cause())
		case <-m.lost:
		}
	}()
	return m, nil
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

// Lost is closed when the membership has ended: left, its session ended, the
// server refused a renewal, or no renewal succeeded before its end.
func (m *Membership) Lost() <-chan struct{} { return m.lost }

// Err says why Lost was closed (nil while the membership lives).
func (m *Membership) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *Membership) setInfo(info *MemberInfo) {
	m.mu.Lock()
	m.info = *info
	m.info.Token = m.token
	m.mu.Unlock()
}

func (m *Membership) end(err error) {
	m.once.Do(func() {
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
		close(m.lost)
	})
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

// Leave ends the membership (one group.member_left event, reason "left").
// A membership that is already gone is no error to leave.
func (m *Membership) Leave(ctx context.Context) error {
	if m.k != nil {
		m.k.halt()
	}
	body := struct {
		Session *sessionRef `json:"session,omitempty"`
		Token   string      `json:"token,omitempty"`
	}{Token: m.token}
	if m.session != nil {
		body.Session, body.Token = m.session.ref(), ""
	}
	_, err := m.c.do(ctx, &call{method: http.MethodPost, path: memberPath(m.group, m.member) + "/leave", body: body}, nil)
	if err != nil && IsLeaseLost(err) {
		err = nil
	}
	// Not kept alive any longer, whatever the answer: a member whose leave
	// got no answer ends at its TTL (or with its session).
	m.end(errLeft)
	return err
}

type leftError struct{}

func (leftError) Error() string { return "leasehold: left the group" }

var errLeft error = leftError{}
