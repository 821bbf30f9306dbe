package leasehold

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// PoolMap is a pool's address space cut into blocks of one prefix length,
// in address order, as runs of alike blocks (at most two runs per live
// reservation, and one more). Counts are exact decimal strings: an IPv6
// pool holds more blocks and addresses than an int64.
type PoolMap struct {
	Pool      string   `json:"pool"`
	CIDR      string   `json:"cidr"`
	PrefixLen int      `json:"prefix_len"`
	Blocks    string   `json:"blocks"`
	Runs      []MapRun `json:"runs"`
}

// MapRun is Count consecutive blocks from First, alike: State is "free",
// "reserved", "allocated" or "mixed"; each block holds Reserved and
// Allocated addresses.
type MapRun struct {
	First     string `json:"first"`
	Count     string `json:"count"`
	State     string `json:"state"`
	Reserved  string `json:"reserved"`
	Allocated string `json:"allocated"`
}

// PoolMap returns pool's map at blocks of prefixLen (0: the server's
// default, 8 bits finer than the pool).
func (c *Client) PoolMap(ctx context.Context, pool string, prefixLen int) (*PoolMap, error) {
	var m PoolMap
	query := url.Values{}
	if prefixLen > 0 {
		query.Set("prefix_len", strconv.Itoa(prefixLen))
	}
	cl := &call{method: http.MethodGet, path: poolPath(pool) + "/map", query: query}
	if _, err := c.do(ctx, cl, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
