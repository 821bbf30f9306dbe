package leasehold

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// PoolRules are a pool's allocation rules. A child pool has its parent's
// and may only narrow them (a rule-conflict *Problem otherwise); a reserve
// that breaks one is a rule-violated *Problem naming it (Problem.Rule).
type PoolRules struct {
	MinPrefixLen     *int     `json:"min_prefix_len,omitempty"`
	MaxPrefixLen     *int     `json:"max_prefix_len,omitempty"`
	DefaultPrefixLen *int     `json:"default_prefix_len,omitempty"`
	Allowed          []string `json:"allowed,omitempty"`
	Disallowed       []string `json:"disallowed,omitempty"`
	RequiredLabels   []string `json:"required_labels,omitempty"`
}

// PoolChild is a pool cut from another, and the block it occupies there.
type PoolChild struct {
	Name string `json:"name"`
	CIDR string `json:"cidr"`
}

// PoolOptions define a pool beyond its CIDR.
type PoolOptions struct {
	// Parent is the pool it is cut from: its block must be free there, and
	// it then occupies it. A pool at depth 10 takes no children.
	Parent string
	// Rules narrow what reserves in it may take (nil: only its parent's).
	Rules *PoolRules
	// Labels are free-form text labels of the pool.
	Labels map[string]string
}

// PutPoolWith creates the pool with a parent, rules and labels, or checks
// that it exists with this definition (a pool-conflict *Problem if not).
func (c *Client) PutPoolWith(ctx context.Context, pool, cidr string, opts PoolOptions) (*Pool, error) {
	body := struct {
		CIDR   string            `json:"cidr"`
		Parent string            `json:"parent,omitempty"`
		Rules  *PoolRules        `json:"rules,omitempty"`
		Labels map[string]string `json:"labels,omitempty"`
	}{cidr, opts.Parent, opts.Rules, opts.Labels}
	var p Pool
	if _, err := c.do(ctx, &call{method: http.MethodPut, path: poolPath(pool), body: body}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// MaxBatch is the most blocks one ReserveBatch takes.
const MaxBatch = 256

// ReserveBatch takes count blocks of prefixLen bits out of pool in one
// transaction, all or none, in the order the allocator picks them; zero
// prefixLen asks for the pool's default_prefix_len. Under one
// Idempotency-Key (WithIdempotencyKey, or the one a retry sends again) the
// whole batch is replayed, each reservation then marked Replayed.
func (c *Client) ReserveBatch(ctx context.Context, pool string, prefixLen, count int, opts ...Option) ([]*Reservation, error) {
	if count < 1 || count > MaxBatch {
		return nil, fmt.Errorf("leasehold: a batch takes 1 to %d blocks, not %d", MaxBatch, count)
	}
	body := reserveBody{Count: &count}
	if prefixLen > 0 {
		body.PrefixLen = &prefixLen
	}
	var out struct {
		Items []*Reservation `json:"items"`
	}
	cl, status, err := c.reserveCall(ctx, pool, body, opts, &out)
	if err != nil {
		return nil, err
	}
	for _, r := range out.Items {
		r.Replayed = status == http.StatusOK
		r.Sent = cl.sent
	}
	return out.Items, nil
}

// FreeBlocks are the blocks reserves would take next, in order.
type FreeBlocks struct {
	Pool      string `json:"pool"`
	CIDR      string `json:"cidr"`
	PrefixLen int    `json:"prefix_len"`
	// Blocks holds fewer than asked when the pool has no more.
	Blocks []string `json:"blocks"`
}

// PoolFree lists the next limit blocks of prefixLen bits reserves would take
// in pool, read in one snapshot (what a plan shows before it applies). Zero
// prefixLen asks for the pool's default_prefix_len, zero limit for the
// server's default (10).
func (c *Client) PoolFree(ctx context.Context, pool string, prefixLen, limit int) (*FreeBlocks, error) {
	q := url.Values{}
	if prefixLen > 0 {
		q.Set("prefix_len", strconv.Itoa(prefixLen))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var f FreeBlocks
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: poolPath(pool) + "/free", query: q}, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// IsRuleViolated reports whether err says a reserve breaks a rule of the
// pool (Problem.Rule names it).
func IsRuleViolated(err error) bool { return isType(err, TypeRuleViolated) }

// IsRuleConflict reports whether err says a child pool's rule would widen
// its parent's (Problem.Rule names it).
func IsRuleConflict(err error) bool { return isType(err, TypeRuleConflict) }

// IsPoolInUse reports whether err says a pool keeps live reservations or
// child pools, so it cannot be deleted.
func IsPoolInUse(err error) bool { return isType(err, TypePoolInUse) }
