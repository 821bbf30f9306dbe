package leasehold

import (
	"net/http"
	"time"
)

// DefaultTTL is the lease TTL of a grant that names none.
const DefaultTTL = 15 * time.Second

// ClientOption configures a Client (New): WithToken, WithHTTPClient,
// WithRetry, WithHolder.
type ClientOption interface{ applyClient(*Client) }

// Option configures a grant (Acquire, AcquireSet, Reserve, NewSession,
// Join) or what takes grants (NewMutex, NewKeyedMutex, NewElection).
// WithHolder is both an Option and a ClientOption.
type Option interface{ applyGrant(*grant) }

type clientFunc func(*Client)

func (f clientFunc) applyClient(c *Client) { f(c) }

type grantFunc func(*grant)

func (f grantFunc) applyGrant(g *grant) { f(g) }

// WithToken sends an API token (as a Bearer token) with every request.
func WithToken(token string) ClientOption { return clientFunc(func(c *Client) { c.token = token }) }

// WithHTTPClient makes requests through hc instead of the client's own.
// A long-polling acquire or watch needs hc without a short Timeout.
func WithHTTPClient(hc *http.Client) ClientOption {
	return clientFunc(func(c *Client) { c.hc = hc })
}

// WithRetry replaces DefaultRetry.
func WithRetry(p RetryPolicy) ClientOption { return clientFunc(func(c *Client) { c.retry = p }) }

// HolderOption names the holder of leases; see WithHolder.
type HolderOption string

// WithHolder names the holder (informational only). Given to New it names
// every lease the client takes (default: host name and process id); given
// to a grant, a Mutex, an Election or a Session it names those leases alone.
func WithHolder(holder string) HolderOption { return HolderOption(holder) }

func (h HolderOption) applyClient(c *Client) { c.holder = string(h) }
func (h HolderOption) applyGrant(g *grant)   { g.holder = string(h) }

type grant struct {
	holder     string
	ttl        time.Duration
	margin     time.Duration
	wait       time.Duration
	metadata   map[string]any
	session    *Session
	idemKey    string
	mode       string
	maxHolders int
	permits    int
	lockDelay  time.Duration
	// maxLifetime caps the tenure of a lease with a TTL of its own.
	maxLifetime time.Duration
	exclude     []string
	local       bool
	labels      map[string]string
	// capabilities of a group member (Join).
	capabilities any
}

func (c *Client) grantOf(opts []Option) grant {
	g := grant{holder: c.holder}
	for _, o := range opts {
		if o != nil {
			o.applyGrant(&g)
		}
	}
	return g
}

// ttlOrDefault is the TTL a lease with its own TTL is granted.
func (g *grant) ttlOrDefault() time.Duration {
	if g.ttl <= 0 {
		return DefaultTTL
	}
	return g.ttl
}

// WithTTL sets how long the lease lives unless renewed (default DefaultTTL
// for locks, sessions and members, the server's 60 s for reservations).
func WithTTL(d time.Duration) Option { return grantFunc(func(g *grant) { g.ttl = d }) }

// WithLostMargin sets how long before its local deadline a kept lease
// (Mutex, Election, Session, Membership) is declared lost: the time left to
// stop acting on it. Default: the TTL/20, at least 50 ms and at most 2 s;
// never more than half the TTL.
func WithLostMargin(d time.Duration) Option { return grantFunc(func(g *grant) { g.margin = d }) }

// WithMaxLifetime caps the tenure of a lease with a TTL of its own (a lock,
// a session, a member, an unconfirmed reservation): renewals keep it alive
// until its grant plus d and never past it (its EndsBy); a kept lease is
// then lost with ErrLifetimeEnded, the lost margin before EndsBy. Default:
// no cap, or the server's ceiling (--max-lease-lifetime) when it has one.
func WithMaxLifetime(d time.Duration) Option {
	return grantFunc(func(g *grant) { g.maxLifetime = d })
}

// WithWait makes an acquire wait this long for a held key (default 0).
func WithWait(d time.Duration) Option { return grantFunc(func(g *grant) { g.wait = d }) }

// WithMetadata stores a small JSON object with the lease.
func WithMetadata(m map[string]any) Option { return grantFunc(func(g *grant) { g.metadata = m }) }

// WithLabels gives a reservation text labels (a pool's required_labels
// rule names the ones it must carry).
func WithLabels(labels map[string]string) Option {
	return grantFunc(func(g *grant) { g.labels = labels })
}

// WithSession binds the lease to s instead of a TTL: it lives exactly as
// long as the session, and has no keep-alive of its own.
func WithSession(s *Session) Option { return grantFunc(func(g *grant) { g.session = s }) }

// WithIdempotencyKey sends this Idempotency-Key (default: a fresh one per
// call, so that a retry after a lost answer returns the same lease).
func WithIdempotencyKey(k string) Option { return grantFunc(func(g *grant) { g.idemKey = k }) }

// Shared asks for a shared lease, which coexists with other shared leases
// but not with an exclusive one.
func Shared() Option { return grantFunc(func(g *grant) { g.mode = "shared" }) }

// WithMaxHolders makes the key a semaphore of n permits (each lease takes
// 1 unless WithPermits says more). Under a capacity the server keeps for
// the key (SetCapacity), leave it out.
func WithMaxHolders(n int) Option { return grantFunc(func(g *grant) { g.maxHolders = n }) }

// WithPermits takes n permits of the key's capacity (the one the server
// keeps, else WithMaxHolders) instead of 1.
func WithPermits(n int) Option { return grantFunc(func(g *grant) { g.permits = n }) }

// WithLockDelay keeps the key unavailable for d after a lease on it expired.
func WithLockDelay(d time.Duration) Option { return grantFunc(func(g *grant) { g.lockDelay = d }) }

// Exclude names networks (CIDR) a reservation must not overlap.
func Exclude(cidrs ...string) Option {
	return grantFunc(func(g *grant) { g.exclude = append(g.exclude, cidrs...) })
}

// ExcludeLocal excludes this host's own interface networks from a
// reservation, so that it skips what is taken at the system level.
func ExcludeLocal() Option { return grantFunc(func(g *grant) { g.local = true }) }

// WithCapabilities sets what a member can do (any value that encodes as
// JSON) when it joins a group.
func WithCapabilities(v any) Option { return grantFunc(func(g *grant) { g.capabilities = v }) }

func optMs(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	v := ms(d)
	return &v
}
