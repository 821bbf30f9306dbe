package leasehold

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Reservation is a subnet reserved out of a pool. Token is set only in the
// answer to Reserve.
type Reservation struct {
	ID           string         `json:"id"`
	Pool         string         `json:"pool"`
	Subnet       string         `json:"subnet"`
	PrefixLen    int            `json:"prefix_len"`
	State        string         `json:"state"`
	Holder       string         `json:"holder"`
	FencingToken int64          `json:"fencing_token"`
	AcquiredAt   time.Time      `json:"acquired_at"`
	ExpiresAt    *time.Time     `json:"expires_at"`
	ExpiresInMS  *int64         `json:"expires_in_ms"`
	Metadata     map[string]any `json:"metadata"`
	Session      string         `json:"session,omitempty"`
	// Labels are the text labels it was reserved with.
	Labels map[string]string `json:"labels,omitempty"`
	Token  string            `json:"token,omitempty"`
	// EndsBy is the end of its tenure while unconfirmed (WithMaxLifetime,
	// or the server's ceiling); nil without a cap, and once allocated.
	EndsBy *time.Time `json:"ends_by"`
	// LifetimeLeftMS is how long its tenure has left; nil without a cap.
	LifetimeLeftMS *int64 `json:"lifetime_left_ms"`

	// Replayed is true when the grant was an idempotent replay (200).
	Replayed bool `json:"-"`
	// Sent is when the request that granted or renewed it was sent.
	Sent time.Time `json:"-"`
}

// Reservation states.
const (
	StateReserved  = "reserved"
	StateAllocated = "allocated"
)

// Network is the reserved subnet, parsed.
func (r *Reservation) Network() (*net.IPNet, error) {
	_, n, err := net.ParseCIDR(r.Subnet)
	return n, err
}

// Pool is a subnet pool with its usage (usage fields, Children and Rules
// only from GetPool and PutPool).
type Pool struct {
	Name      string            `json:"name"`
	CIDR      string            `json:"cidr"`
	Family    string            `json:"family"` // ipv4 or ipv6
	Labels    map[string]string `json:"labels"`
	CreatedAt time.Time         `json:"created_at"`
	// Parent is the pool it is cut from; nil at the top.
	Parent *string `json:"parent"`
	// Depth is 0 without a parent, one more than the parent's with one.
	Depth int `json:"depth"`
	// Children are the pools cut from it, in address order.
	Children []PoolChild `json:"children,omitempty"`
	// Rules are its effective rules: its own, within its ancestors'.
	Rules          *PoolRules `json:"rules,omitempty"`
	ReservedCount  int64      `json:"reserved_count"`
	AllocatedCount int64      `json:"allocated_count"`
	FreeAddresses  string     `json:"free_addresses"`
	TotalAddresses string     `json:"total_addresses"`
	LargestFree    *string    `json:"largest_free"`
}

func poolPath(pool string) string { return "/v1/pools/" + escape(pool) }

func reservationPath(pool, id string) string {
	return poolPath(pool) + "/reservations/" + escape(id)
}

// PutPool creates the pool, or checks that it exists with this cidr (a
// pool-conflict *Problem if it has another). PutPoolWith also takes a
// parent and rules.
func (c *Client) PutPool(ctx context.Context, pool, cidr string, labels map[string]string) (*Pool, error) {
	return c.PutPoolWith(ctx, pool, cidr, PoolOptions{Labels: labels})
}

// GetPool reads a pool with its usage.
func (c *Client) GetPool(ctx context.Context, pool string) (*Pool, error) {
	var p Pool
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: poolPath(pool)}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// PoolPage is one page of pools (without usage).
type PoolPage struct {
	Items      []Pool  `json:"items"`
	NextCursor *string `json:"next_cursor"`
	// Revision is the change-log revision the page reflects (Watch Since).
	Revision int64 `json:"revision"`
}

// ListPools returns a page of the pools the caller may see.
func (c *Client) ListPools(ctx context.Context, opts ListOptions) (*PoolPage, error) {
	var p PoolPage
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/pools", query: opts.query()}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeletePool deletes a pool without live reservations.
func (c *Client) DeletePool(ctx context.Context, pool string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: poolPath(pool)}, nil)
	return err
}

type reserveBody struct {
	Holder    string `json:"holder"`
	PrefixLen *int   `json:"prefix_len,omitempty"`
	Subnet    string `json:"subnet,omitempty"`
	TTL       *int64 `json:"ttl_ms,omitempty"`
	// MaxLifetime caps its tenure while unconfirmed (never with a session).
	MaxLifetime *int64            `json:"max_lifetime_ms,omitempty"`
	Exclude     []string          `json:"exclude,omitempty"`
	Metadata    map[string]any    `json:"metadata,omitempty"`
	Session     *sessionRef       `json:"session,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Count       *int              `json:"count,omitempty"`
}

// Reserve takes a free block of prefixLen bits out of pool (best fit, then
// lowest address), avoiding Exclude and, with ExcludeLocal, this host's own
// networks. Confirm it once the real network exists, or let it lapse.
func (c *Client) Reserve(ctx context.Context, pool string, prefixLen int, opts ...Option) (*Reservation, error) {
	n := prefixLen
	return c.reserve(ctx, pool, reserveBody{PrefixLen: &n}, opts)
}

// ReserveSubnet reserves the named aligned subnet of pool.
func (c *Client) ReserveSubnet(ctx context.Context, pool, subnet string, opts ...Option) (*Reservation, error) {
	return c.reserve(ctx, pool, reserveBody{Subnet: subnet}, opts)
}

func (c *Client) reserve(ctx context.Context, pool string, body reserveBody, opts []Option) (*Reservation, error) {
	var r Reservation
	cl, status, err := c.reserveCall(ctx, pool, body, opts, &r)
	if err != nil {
		return nil, err
	}
	r.Replayed = status == http.StatusOK
	r.Sent = cl.sent
	return &r, nil
}

// reserveCall sends a reserve (one block or a batch) with the grant's
// options, under an Idempotency-Key a retry sends again, into out.
func (c *Client) reserveCall(ctx context.Context, pool string, body reserveBody, opts []Option, out any) (*call, int, error) {
	g := c.grantOf(opts)
	if g.idemKey == "" {
		g.idemKey = newIdempotencyKey()
	}
	body.Holder = g.holder
	body.Metadata = g.metadata
	body.Labels = g.labels
	body.Exclude = append([]string(nil), g.exclude...)
	if g.local {
		local, err := LocalNetworks()
		if err != nil {
			return nil, 0, err
		}
		body.Exclude = append(body.Exclude, local...)
	}
	if g.session != nil {
		body.Session = g.session.ref()
	} else {
		body.TTL = optMs(g.ttl)
		body.MaxLifetime = optMs(g.maxLifetime)
	}
	cl := &call{method: http.MethodPost, path: poolPath(pool) + "/reservations", body: body,
		header: idemHeader(g.idemKey), grant: true}
	status, err := c.do(ctx, cl, out)
	return cl, status, err
}

// ErrNoReservation is returned for a nil *Reservation.
var ErrNoReservation = errors.New("leasehold: no reservation given")

type tokenBody struct {
	Token string `json:"token"`
	TTL   *int64 `json:"ttl_ms,omitempty"`
}

// RenewReservation extends a reservation by ttl from now (zero: its own).
func (c *Client) RenewReservation(ctx context.Context, r *Reservation, ttl time.Duration) (*Reservation, error) {
	return c.RenewReservationWithMetadata(ctx, r, ttl, nil)
}

// RenewReservationWithMetadata renews as RenewReservation does and, when
// metadata is not nil, replaces the reservation's metadata in the same
// transaction (one reservation.updated event).
func (c *Client) RenewReservationWithMetadata(ctx context.Context, r *Reservation, ttl time.Duration, metadata map[string]any) (*Reservation, error) {
	if r == nil {
		return nil, ErrNoReservation
	}
	body := struct {
		tokenBody
		Metadata map[string]any `json:"metadata,omitempty"`
	}{tokenBody{r.Token, optMs(ttl)}, metadata}
	cl := &call{method: http.MethodPost, path: reservationPath(r.Pool, r.ID) + "/renew", body: body}
	var out Reservation
	if _, err := c.do(ctx, cl, &out); err != nil {
		return nil, err
	}
	out.Token, out.Sent = r.Token, cl.sent
	return &out, nil
}

// Confirm makes a reservation allocated: it no longer expires.
func (c *Client) Confirm(ctx context.Context, r *Reservation) (*Reservation, error) {
	if r == nil {
		return nil, ErrNoReservation
	}
	cl := &call{method: http.MethodPost, path: reservationPath(r.Pool, r.ID) + "/confirm",
		body: tokenBody{Token: r.Token}}
	var out Reservation
	if _, err := c.do(ctx, cl, &out); err != nil {
		if cl.retried && IsLeaseLost(err) {
			// An earlier attempt may have confirmed it: look.
			if cur, gerr := c.GetReservation(ctx, r.Pool, r.ID); gerr == nil && cur.State == StateAllocated &&
				cur.FencingToken == r.FencingToken {
				cur.Token = r.Token
				return cur, nil
			}
		}
		return nil, err
	}
	out.Token, out.Sent = r.Token, cl.sent
	return &out, nil
}

// ReleaseReservation gives a reservation back (confirmed or not).
func (c *Client) ReleaseReservation(ctx context.Context, r *Reservation) error {
	if r == nil {
		return ErrNoReservation
	}
	cl := &call{method: http.MethodPost, path: reservationPath(r.Pool, r.ID) + "/release",
		body: tokenBody{Token: r.Token}}
	_, err := c.do(ctx, cl, nil)
	if err != nil && cl.retried && IsLeaseLost(err) {
		return nil
	}
	return err
}

// GetReservation reads one reservation (without its token).
func (c *Client) GetReservation(ctx context.Context, pool, id string) (*Reservation, error) {
	var r Reservation
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: reservationPath(pool, id)}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReservationPage is one page of a pool's live reservations.
type ReservationPage struct {
	Items      []Reservation `json:"items"`
	NextCursor *string       `json:"next_cursor"`
	// Revision is the change-log revision the page reflects (Watch Since).
	Revision int64 `json:"revision"`
}

// ListReservations returns a page of pool's live reservations.
func (c *Client) ListReservations(ctx context.Context, pool string, opts ListOptions) (*ReservationPage, error) {
	var p ReservationPage
	cl := &call{method: http.MethodGet, path: poolPath(pool) + "/reservations", query: opts.query()}
	if _, err := c.do(ctx, cl, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// LocalNetworks lists this host's interface networks (CIDR, host bits
// cleared): what ExcludeLocal adds to a reservation's exclusions.
func LocalNetworks() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		n := net.IPNet{IP: ipn.IP.Mask(ipn.Mask), Mask: ipn.Mask}
		if ip4 := n.IP.To4(); ip4 != nil {
			ones, _ := ipn.Mask.Size()
			n = net.IPNet{IP: ip4, Mask: net.CIDRMask(ones, 32)}
		}
		s := n.String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}
