package leasehold

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// SessionInfo is a session as the server shows it.
type SessionInfo struct {
	ID           string         `json:"id"`
	Holder       string         `json:"holder"`
	AcquiredAt   time.Time      `json:"acquired_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
	ExpiresInMS  int64          `json:"expires_in_ms"`
	TTLMS        int64          `json:"ttl_ms"`
	Metadata     map[string]any `json:"metadata"`
	Locks        *int64         `json:"locks"`
	Reservations *int64         `json:"reservations"`
	// Members counts the group memberships bound to it (Info and Sessions).
	Members *int64 `json:"members"`
	Token   string `json:"token,omitempty"`
	// EndsBy is the end of its tenure (WithMaxLifetime, or the server's
	// ceiling): no renewal keeps it past this. Nil without a cap.
	EndsBy *time.Time `json:"ends_by"`
	// LifetimeLeftMS is how long its tenure has left; nil without a cap.
	LifetimeLeftMS *int64 `json:"lifetime_left_ms"`
}

// Session is one heartbeat for many leases: locks, elections, members and
// reservations bound to it (WithSession) live exactly as long as it does,
// as with etcd's concurrency.Session. It is kept alive in the background by
// the rule of a lease's life; Done is closed when it ends, and every lease
// bound to it is then lost with ErrSessionEnded, at the same instant.
type Session struct {
	c      *Client
	id     string
	token  string
	ttl    time.Duration
	margin time.Duration
	k      *keeper
	ending *ending

	mu       sync.Mutex
	watchers map[uint64]func(error)
	nextID   uint64
}

// NewSession opens a session with the TTL of WithTTL (default DefaultTTL)
// and keeps it alive until Close. WithLostMargin and WithHolder apply.
func (c *Client) NewSession(ctx context.Context, opts ...Option) (*Session, error) {
	g := c.grantOf(opts)
	ttl := g.ttlOrDefault()
	body := struct {
		Holder      string         `json:"holder"`
		TTL         int64          `json:"ttl_ms"`
		MaxLifetime *int64         `json:"max_lifetime_ms,omitempty"`
		Metadata    map[string]any `json:"metadata,omitempty"`
	}{g.holder, ms(ttl), optMs(g.maxLifetime), g.metadata}
	// Opening a session is not a lease grant keyed by an Idempotency-Key: an
	// attempt whose answer was lost leaves a session that simply expires.
	cl := &call{method: http.MethodPost, path: "/v1/sessions", body: body}
	var info SessionInfo
	if _, err := c.do(ctx, cl, &info); err != nil {
		return nil, err
	}
	s := &Session{c: c, id: info.ID, token: info.Token, ttl: ttl, margin: lostMargin(ttl, g.margin),
		ending: newEnding(), watchers: map[uint64]func(error){}}
	deadline := localDeadline(cl.sent, cl.received, 0, info.ExpiresInMS)
	s.k = startKeeper(deadline, capped(info.ExpiresInMS, info.LifetimeLeftMS), ttl, s.margin, s.renew, s.end)
	return s, nil
}

func (s *Session) renew(ctx context.Context) (time.Time, bool, error) {
	info, deadline, err := s.renewOnce(ctx, 0)
	if err != nil {
		return time.Time{}, false, err
	}
	return deadline, capped(info.ExpiresInMS, info.LifetimeLeftMS), nil
}

// end closes Done with err and tells every lease bound to the session, in
// this goroutine, so that they are all lost by the time end returns.
func (s *Session) end(err error) {
	if !s.ending.end(err) {
		return
	}
	s.mu.Lock()
	ws := s.watchers
	s.watchers = nil
	s.mu.Unlock()
	for _, f := range ws {
		f(err)
	}
}

// notify runs f once when the session ends (at once if it has); cancel
// forgets f. The session keeps nothing else per bound lease.
func (s *Session) notify(f func(error)) (cancel func()) {
	s.mu.Lock()
	if s.watchers == nil {
		s.mu.Unlock()
		f(s.ending.reason())
		return func() {}
	}
	id := s.nextID
	s.nextID++
	s.watchers[id] = f
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.watchers, id)
		s.mu.Unlock()
	}
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Token is the session's secret token.
func (s *Session) Token() string { return s.token }

func (s *Session) ref() *sessionRef { return &sessionRef{ID: s.id, Token: s.token} }

// Done is closed when the session has ended: closed by Close, or lost.
func (s *Session) Done() <-chan struct{} { return s.ending.ch }

// Err says why Done was closed (nil while the session lives): an error
// matching ErrUnlocked (Close), ErrExpired, ErrReleasedElsewhere (the
// server says it is gone: closed by another, or expired there),
// ErrSessionEnded (a 409 session-lost answer) or ErrRefused: the table of
// loss reasons in the README.
func (s *Session) Err() error { return s.ending.reason() }

// Deadline is the session's local deadline as of its last confirmed
// keep-alive; Done closes the lost margin before it.
func (s *Session) Deadline() time.Time { return s.deadline() }

func (s *Session) deadline() time.Time { return s.k.lostAt().Add(s.margin) }

// Renew keeps the session alive once, by ttl (zero: its own TTL), and
// returns when the request was sent. The background keep-alive does this
// already.
func (s *Session) Renew(ctx context.Context, ttl time.Duration) (*SessionInfo, time.Time, error) {
	info, deadline, err := s.renewOnce(ctx, ttl)
	if err != nil {
		return nil, time.Time{}, err
	}
	return info, deadline.Add(-time.Duration(info.ExpiresInMS) * time.Millisecond), nil
}

func (s *Session) renewOnce(ctx context.Context, ttl time.Duration) (*SessionInfo, time.Time, error) {
	body := struct {
		Token string `json:"token"`
		TTL   *int64 `json:"ttl_ms,omitempty"`
	}{s.token, optMs(ttl)}
	cl := &call{method: http.MethodPost, path: "/v1/sessions/" + escape(s.id) + "/renew", body: body}
	var info SessionInfo
	if _, err := s.c.do(ctx, cl, &info); err != nil {
		return nil, time.Time{}, err
	}
	return &info, localDeadline(cl.sent, cl.received, 0, info.ExpiresInMS), nil
}

// Info reads the session as the server has it, with how many leases it holds.
func (s *Session) Info(ctx context.Context) (*SessionInfo, error) {
	var info SessionInfo
	if _, err := s.c.do(ctx, &call{method: http.MethodGet, path: "/v1/sessions/" + escape(s.id)}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Close ends the session: Done closes and every lease bound to it is lost
// (ErrSessionEnded) first, then the server releases them all at once.
// Closing a session that is already gone is no error. It waits on the
// network no longer than the session's own life, and after a known loss
// at most 1 s, returning nil.
func (s *Session) Close(ctx context.Context) error {
	s.k.halt()
	bound := s.deadline()
	lostBefore := s.ending.ended()
	if lostBefore {
		// Lost before: the server said it is gone, or it may still hold it
		// a little while (then one bounded try frees its leases sooner).
		why := s.Err()
		if errors.Is(why, ErrReleasedElsewhere) || errors.Is(why, ErrSessionEnded) || errors.Is(why, ErrUnlocked) {
			return nil
		}
		bound = time.Now()
	} else {
		s.end(&LostError{Reason: ErrUnlocked})
	}
	if min := time.Now().Add(lostReleaseTimeout); bound.Before(min) {
		bound = min
	}
	cctx, cancel := context.WithDeadline(ctx, bound)
	defer cancel()
	cl := &call{method: http.MethodPost, path: "/v1/sessions/" + escape(s.id) + "/close",
		body: struct {
			Token string `json:"token"`
		}{s.token}}
	_, err := s.c.do(cctx, cl, nil)
	if lostBefore || IsLeaseLost(err) {
		return nil // the loss was told already; the close was a courtesy
	}
	return err
}

// ForceCloseSession ends a session by id (an admin call), releasing every
// lease bound to it.
func (c *Client) ForceCloseSession(ctx context.Context, id string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: "/v1/sessions/" + escape(id)}, nil)
	return err
}

// SessionPage is one page of live sessions, each as Info shows it.
type SessionPage struct {
	Items      []SessionInfo `json:"items"`
	NextCursor *string       `json:"next_cursor"`
	// Revision is the change-log revision the page reflects: a Watch with
	// Since: Revision continues exactly after it.
	Revision int64 `json:"revision"`
}

// Sessions returns one page of the live sessions the client's token may
// inspect (its own; an admin's also those of the tokens it covers), in id
// order, with how many locks, reservations and members each holds.
func (c *Client) Sessions(ctx context.Context, opts ListOptions) (*SessionPage, error) {
	var p SessionPage
	cl := &call{method: http.MethodGet, path: "/v1/sessions", query: opts.query()}
	if _, err := c.do(ctx, cl, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// BoundMember is a group membership bound to a session: the member as
// ListMembers shows it, with its group.
type BoundMember struct {
	Group string `json:"group"`
	MemberInfo
}

// SessionLeases is what a session holds: exactly the leases its end would
// release, none with its token.
type SessionLeases struct {
	// Locks are its locks, by key, as ListLocks shows them.
	Locks []Lease `json:"locks"`
	// Reservations are its reservations not yet confirmed (a confirmed
	// one outlives the session), by pool and address.
	Reservations []Reservation `json:"reservations"`
	// Members are its group memberships, by group and member.
	Members []BoundMember `json:"members"`
	// Truncated says a list was cut at 1000; Info counts them all.
	Truncated bool `json:"truncated"`
	// Revision is the change-log revision the lists reflect: a Watch with
	// Since: Revision continues exactly after them.
	Revision int64 `json:"revision"`
}

// SessionLeases reads the leases bound to the live session id, at most
// 1000 of each kind. A session the client's token may not inspect, or one
// that ended, is a session-not-found *Problem (IsNotFound).
func (c *Client) SessionLeases(ctx context.Context, id string) (*SessionLeases, error) {
	var l SessionLeases
	cl := &call{method: http.MethodGet, path: "/v1/sessions/" + escape(id) + "/leases"}
	if _, err := c.do(ctx, cl, &l); err != nil {
		return nil, err
	}
	return &l, nil
}
