package leasehold

import "time"

// DefaultTTL is the lease TTL of a grant that names none.
const DefaultTTL = 15 * time.Second

// Option configures a grant (acquire, lock set, reserve, session), a Mutex,
// a KeyedMutex or an Election.
type Option func(*grant)

type grant struct {
	holder     string
	ttl        time.Duration
	wait       time.Duration
	metadata   map[string]any
	session    *Session
	idemKey    string
	mode       string
	maxHolders int
	lockDelay  time.Duration
	exclude    []string
	local      bool
	// capabilities of a group member (Join).
	capabilities any
}

func (c *Client) grantOf(opts []Option) grant {
	g := grant{holder: c.holder}
	for _, o := range opts {
		o(&g)
	}
	return g
}

// WithTTL sets how long the lease lives unless renewed (default DefaultTTL
// for locks, the server's 60 s for reservations).
func WithTTL(d time.Duration) Option { return func(g *grant) { g.ttl = d } }

// WithLeaseHolder names the holder of this lease (default: the client's).
func WithLeaseHolder(holder string) Option { return func(g *grant) { g.holder = holder } }

// WithWait makes an acquire wait this long for a held key (default 0).
func WithWait(d time.Duration) Option { return func(g *grant) { g.wait = d } }

// WithMetadata stores a small JSON object with the lease.
func WithMetadata(m map[string]any) Option { return func(g *grant) { g.metadata = m } }

// WithSession binds the lease to s instead of a TTL: it lives exactly as long
// as the session.
func WithSession(s *Session) Option { return func(g *grant) { g.session = s } }

// WithIdempotencyKey sends this Idempotency-Key (default: a fresh one per
// call, so that a retry after a lost answer returns the same lease).
func WithIdempotencyKey(k string) Option { return func(g *grant) { g.idemKey = k } }

// Shared asks for a shared lease, which coexists with other shared leases
// but not with an exclusive one.
func Shared() Option { return func(g *grant) { g.mode = "shared" } }

// WithMaxHolders makes the key a semaphore of n leases.
func WithMaxHolders(n int) Option { return func(g *grant) { g.maxHolders = n } }

// WithLockDelay keeps the key unavailable for d after a lease on it expired.
func WithLockDelay(d time.Duration) Option { return func(g *grant) { g.lockDelay = d } }

// Exclude names networks (CIDR) a reservation must not overlap.
func Exclude(cidrs ...string) Option {
	return func(g *grant) { g.exclude = append(g.exclude, cidrs...) }
}

// ExcludeLocal excludes this host's own interface networks from a
// reservation, so that it skips what is taken at the system level.
func ExcludeLocal() Option { return func(g *grant) { g.local = true } }

func optMs(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	v := ms(d)
	return &v
}
