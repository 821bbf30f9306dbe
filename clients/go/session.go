package leasehold

import (
	"context"
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
	Token        string         `json:"token,omitempty"`
}

// Session is one heartbeat for many leases: locks and reservations bound to
// it (WithSession) live exactly as long as it does. It is kept alive in the
// background; Done is closed when it ends (closed, or lost).
type Session struct {
	c     *Client
	id    string
	token string
	ttl   time.Duration
	k     *keeper
	once  sync.Once
}

// NewSession opens a session with the TTL of WithTTL (default DefaultTTL)
// and keeps it alive until Close.
func (c *Client) NewSession(ctx context.Context, opts ...Option) (*Session, error) {
	g := c.grantOf(opts)
	ttl := g.ttl
	if ttl == 0 {
		ttl = DefaultTTL
	}
	body := struct {
		Holder   string         `json:"holder"`
		TTL      int64          `json:"ttl_ms"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}{g.holder, ms(ttl), g.metadata}
	// Opening a session is not a lease grant keyed by an Idempotency-Key: an
	// attempt whose answer was lost leaves a session that simply expires.
	cl := &call{method: http.MethodPost, path: "/v1/sessions", body: body}
	var info SessionInfo
	if _, err := c.do(ctx, cl, &info); err != nil {
		return nil, err
	}
	s := &Session{c: c, id: info.ID, token: info.Token, ttl: ttl}
	s.k = startKeeper(cl.sent.Add(time.Duration(info.ExpiresInMS)*time.Millisecond), ttl, s.renew)
	return s, nil
}

func (s *Session) renew(ctx context.Context) (time.Time, error) {
	info, sent, err := s.Renew(ctx, 0)
	if err != nil {
		return time.Time{}, err
	}
	return sent.Add(time.Duration(info.ExpiresInMS) * time.Millisecond), nil
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Token is the session's secret token.
func (s *Session) Token() string { return s.token }

func (s *Session) ref() *sessionRef { return &sessionRef{ID: s.id, Token: s.token} }

// Done is closed when the session has ended: closed by Close, or lost
// (expired, or closed by another), as far as this client can tell.
func (s *Session) Done() <-chan struct{} { return s.k.lost }

// Err says why Done was closed (nil while the session lives).
func (s *Session) Err() error { return s.k.cause() }

// Renew keeps the session alive once, by ttl (zero: its own TTL). The
// background keep-alive does this already.
func (s *Session) Renew(ctx context.Context, ttl time.Duration) (*SessionInfo, time.Time, error) {
	body := struct {
		Token string `json:"token"`
		TTL   *int64 `json:"ttl_ms,omitempty"`
	}{s.token, optMs(ttl)}
	cl := &call{method: http.MethodPost, path: "/v1/sessions/" + escape(s.id) + "/renew", body: body}
	var info SessionInfo
	if _, err := s.c.do(ctx, cl, &info); err != nil {
		return nil, time.Time{}, err
	}
	return &info, cl.sent, nil
}

// Info reads the session as the server has it, with how many leases it holds.
func (s *Session) Info(ctx context.Context) (*SessionInfo, error) {
	var info SessionInfo
	if _, err := s.c.do(ctx, &call{method: http.MethodGet, path: "/v1/sessions/" + escape(s.id)}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Close ends the session: every lock and unconfirmed reservation bound to it
// is released at once. Closing a session that is already gone is no error.
func (s *Session) Close(ctx context.Context) error {
	s.k.halt()
	cl := &call{method: http.MethodPost, path: "/v1/sessions/" + escape(s.id) + "/close",
		body: struct {
			Token string `json:"token"`
		}{s.token}}
	_, err := s.c.do(ctx, cl, nil)
	if err != nil && IsLeaseLost(err) {
		err = nil
	}
	s.k.markLost(errSessionClosed)
	return err
}

type closedError struct{}

func (closedError) Error() string { return "leasehold: session closed" }

var errSessionClosed error = closedError{}

// ForceCloseSession ends a session by id (an admin call), releasing every
// lease bound to it.
func (c *Client) ForceCloseSession(ctx context.Context, id string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: "/v1/sessions/" + escape(id)}, nil)
	return err
}
