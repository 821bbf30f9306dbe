package leasehold

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Lease is a lock lease. Token is set only in the answer to a grant.
type Lease struct {
	Key          string         `json:"key"`
	Holder       string         `json:"holder"`
	FencingToken int64          `json:"fencing_token"`
	AcquiredAt   time.Time      `json:"acquired_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
	ExpiresInMS  int64          `json:"expires_in_ms"`
	Metadata     map[string]any `json:"metadata"`
	Mode         string         `json:"mode"`
	MaxHolders   *int           `json:"max_holders"`
	// Permits is how much of the key's capacity the lease holds (1 unless
	// asked with WithPermits).
	Permits int          `json:"permits"`
	Session string       `json:"session,omitempty"`
	Holders []LockHolder `json:"holders,omitempty"`
	Token   string       `json:"token,omitempty"`
	// EndsBy is the end of its tenure (WithMaxLifetime, or the server's
	// ceiling): no renewal keeps it past this. Nil without a cap.
	EndsBy *time.Time `json:"ends_by"`
	// LifetimeLeftMS is how long its tenure has left; nil without a cap.
	LifetimeLeftMS *int64 `json:"lifetime_left_ms"`

	// WaitedMS is, in the answer to a grant, how long the request waited
	// on the server before ExpiresInMS was computed (0 for a renewal).
	WaitedMS int64 `json:"waited_ms,omitempty"`

	// Replayed is true when the grant was an idempotent replay (200).
	Replayed bool `json:"-"`
	// Sent is when the request that granted, renewed or read it was sent
	// (with the monotonic reading of time.Now).
	Sent time.Time `json:"-"`
	// received is when its answer arrived.
	received time.Time
}

// LockHolder is one lease of a shared or semaphore key.
type LockHolder struct {
	Holder       string    `json:"holder"`
	FencingToken int64     `json:"fencing_token"`
	AcquiredAt   time.Time `json:"acquired_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	ExpiresInMS  int64     `json:"expires_in_ms"`
	Permits      int       `json:"permits"`
	// EndsBy and LifetimeLeftMS: its cap on tenure, as a Lease's.
	EndsBy         *time.Time `json:"ends_by"`
	LifetimeLeftMS *int64     `json:"lifetime_left_ms"`
}

// Capped says whether the lease's expiry is the end of its tenure: no
// renewal extends it.
func (l *Lease) Capped() bool { return capped(l.ExpiresInMS, l.LifetimeLeftMS) }

// ExpiresIn is the lease's remaining life as the server computed it.
func (l *Lease) ExpiresIn() time.Duration { return time.Duration(l.ExpiresInMS) * time.Millisecond }

// Deadline is the lease's local deadline: a time on this process's
// monotonic clock by which the server certainly still holds it. It is when
// the request that granted, renewed or read it was sent, plus how long the
// server says a grant waited (never past the answer's arrival), plus the
// remaining life the server gave. Zero for a lease not read from the server.
func (l *Lease) Deadline() time.Time {
	if l.Sent.IsZero() {
		return time.Time{}
	}
	return localDeadline(l.Sent, l.received, l.WaitedMS, l.ExpiresInMS)
}

// localDeadline is the rule of a lease's life (life.go): sent, plus waited
// (bounded by when the answer arrived: the server cannot have waited longer
// than the client did), plus the remaining life.
func localDeadline(sent, received time.Time, waitedMS, expiresInMS int64) time.Time {
	start := sent.Add(time.Duration(waitedMS) * time.Millisecond)
	if !received.IsZero() && start.After(received) {
		start = received
	}
	return start.Add(time.Duration(expiresInMS) * time.Millisecond)
}

type sessionRef struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

type acquireBody struct {
	Holder     string         `json:"holder"`
	TTL        *int64         `json:"ttl_ms,omitempty"`
	Wait       *int64         `json:"wait_ms,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Session    *sessionRef    `json:"session,omitempty"`
	Mode       string         `json:"mode,omitempty"`
	MaxHolders *int           `json:"max_holders,omitempty"`
	Permits    *int           `json:"permits,omitempty"`
	LockDelay  *int64         `json:"lock_delay_ms,omitempty"`
	// MaxLifetime caps the lease's tenure (never with a session).
	MaxLifetime *int64 `json:"max_lifetime_ms,omitempty"`
}

func (g *grant) acquireBody() acquireBody {
	b := acquireBody{Holder: g.holder, Wait: optMs(g.wait), Metadata: g.metadata, Mode: g.mode,
		LockDelay: optMs(g.lockDelay)}
	if g.session != nil {
		b.Session = g.session.ref()
	} else {
		ttl := g.ttl
		if ttl == 0 {
			ttl = DefaultTTL
		}
		b.TTL = optMs(ttl)
		b.MaxLifetime = optMs(g.maxLifetime)
	}
	if g.maxHolders > 0 {
		n := g.maxHolders
		b.MaxHolders = &n
	}
	if g.permits > 0 {
		n := g.permits
		b.Permits = &n
	}
	return b
}

func idemHeader(key string) http.Header {
	h := http.Header{}
	h.Set("Idempotency-Key", key)
	return h
}

// Acquire asks for a lease on key. Held by another, it waits up to WithWait
// (default: not at all) and then fails with a lock-held *Problem (IsHeld).
func (c *Client) Acquire(ctx context.Context, key string, opts ...Option) (*Lease, error) {
	g := c.grantOf(opts)
	if g.idemKey == "" {
		g.idemKey = newIdempotencyKey()
	}
	return c.acquire(ctx, key, &g)
}

func (c *Client) acquire(ctx context.Context, key string, g *grant) (*Lease, error) {
	cl := &call{method: http.MethodPost, path: "/v1/locks/" + escape(key) + "/acquire",
		body: g.acquireBody(), header: idemHeader(g.idemKey), grant: true}
	var l Lease
	status, err := c.do(ctx, cl, &l)
	if err != nil {
		return nil, err
	}
	l.Replayed = status == http.StatusOK
	l.Sent, l.received = cl.sent, cl.received
	return &l, nil
}

// Renew extends a lease by ttl from now (zero: its own TTL).
func (c *Client) Renew(ctx context.Context, key, token string, ttl time.Duration) (*Lease, error) {
	return c.RenewWithMetadata(ctx, key, token, ttl, nil)
}

// RenewWithMetadata renews a lease as Renew does and, when metadata is not
// nil, replaces its metadata in the same transaction (one lock.updated
// event; a plain renewal is no event).
func (c *Client) RenewWithMetadata(ctx context.Context, key, token string, ttl time.Duration, metadata map[string]any) (*Lease, error) {
	body := struct {
		Token    string         `json:"token"`
		TTL      *int64         `json:"ttl_ms,omitempty"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}{token, optMs(ttl), metadata}
	cl := &call{method: http.MethodPost, path: "/v1/locks/" + escape(key) + "/renew", body: body}
	var l Lease
	if _, err := c.do(ctx, cl, &l); err != nil {
		return nil, err
	}
	l.Sent, l.received = cl.sent, cl.received
	l.WaitedMS = 0 // a renewal does not wait
	l.Token = token
	return &l, nil
}

// Release ends a lease. A release that was retried after a lost answer and
// then finds the lease gone counts as done.
func (c *Client) Release(ctx context.Context, key, token string) error {
	cl := &call{method: http.MethodPost, path: "/v1/locks/" + escape(key) + "/release",
		body: struct {
			Token string `json:"token"`
		}{token}}
	_, err := c.do(ctx, cl, nil)
	if err != nil && cl.retried && IsLeaseLost(err) {
		return nil
	}
	return err
}

// Inspect returns the live lease on key (without its token); a key nobody
// holds is a lock-not-found *Problem (IsNotFound).
func (c *Client) Inspect(ctx context.Context, key string) (*Lease, error) {
	var l Lease
	cl := &call{method: http.MethodGet, path: "/v1/locks/" + escape(key)}
	if _, err := c.do(ctx, cl, &l); err != nil {
		return nil, err
	}
	l.Sent, l.received = cl.sent, cl.received
	return &l, nil
}

// ForceRelease ends whatever lease is on key (an admin call).
func (c *Client) ForceRelease(ctx context.Context, key string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: "/v1/locks/" + escape(key)}, nil)
	return err
}

// LockPage is one page of live leases.
type LockPage struct {
	Items      []Lease `json:"items"`
	NextCursor *string `json:"next_cursor"`
	// Revision is the change-log revision the page reflects: a Watch with
	// Since set to it continues exactly after the listing.
	Revision int64 `json:"revision"`
}

// ListLocks returns one page of the live leases whose keys start with
// prefix ("": every key).
func (c *Client) ListLocks(ctx context.Context, prefix string, opts ListOptions) (*LockPage, error) {
	var p LockPage
	cl := &call{method: http.MethodGet, path: "/v1/locks", query: prefixQuery(prefix, opts)}
	if _, err := c.do(ctx, cl, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// FencingCheck says whether a fencing token is still the current one of key.
type FencingCheck struct {
	Key          string     `json:"key"`
	FencingToken int64      `json:"fencing_token"`
	Current      bool       `json:"current"`
	Reason       *string    `json:"reason"`
	Holder       *string    `json:"holder"`
	ExpiresAt    *time.Time `json:"expires_at"`
	ExpiresInMS  *int64     `json:"expires_in_ms"`
}

// CheckFencing asks whether fencingToken is the live lease of key, as a
// storage system guarding writes with fencing tokens does.
func (c *Client) CheckFencing(ctx context.Context, key string, fencingToken int64) (*FencingCheck, error) {
	var f FencingCheck
	path := "/v1/locks/" + escape(key) + "/fencing/" + strconv.FormatInt(fencingToken, 10)
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: path}, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// AcquireSet asks for an exclusive lease on every key of keys, or on none.
func (c *Client) AcquireSet(ctx context.Context, keys []string, opts ...Option) ([]Lease, error) {
	g := c.grantOf(opts)
	if g.idemKey == "" {
		g.idemKey = newIdempotencyKey()
	}
	ab := g.acquireBody()
	body := struct {
		Keys     []string       `json:"keys"`
		Holder   string         `json:"holder"`
		TTL      *int64         `json:"ttl_ms,omitempty"`
		Wait     *int64         `json:"wait_ms,omitempty"`
		Metadata map[string]any `json:"metadata,omitempty"`
		Session  *sessionRef    `json:"session,omitempty"`
	}{keys, ab.Holder, ab.TTL, ab.Wait, ab.Metadata, ab.Session}
	cl := &call{method: http.MethodPost, path: "/v1/lock-sets/acquire", body: body,
		header: idemHeader(g.idemKey), grant: true}
	var out struct {
		Items []Lease `json:"items"`
	}
	status, err := c.do(ctx, cl, &out)
	if err != nil {
		return nil, err
	}
	for i := range out.Items {
		out.Items[i].Sent, out.Items[i].received = cl.sent, cl.received
		out.Items[i].Replayed = status == http.StatusOK
	}
	return out.Items, nil
}
