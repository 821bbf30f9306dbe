package leasehold

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// KeyHistory is a key's newest events, newest first.
type KeyHistory struct {
	// Items are the key's events (lock.acquired, lock.updated,
	// lock.released), newest first, as a Watch delivers them.
	Items []Event `json:"items"`
	// Revision is the change-log revision the items reflect.
	Revision int64 `json:"revision"`
}

// LockHistory returns the newest limit events of key (0: the server's
// default, 50; at most 500), newest first: who held it, with which fencing
// token, and how each lease ended. A key without events answers none.
func (c *Client) LockHistory(ctx context.Context, key string, limit int) (*KeyHistory, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var h KeyHistory
	cl := &call{method: http.MethodGet, path: "/v1/locks/" + escape(key) + "/history", query: q}
	if _, err := c.do(ctx, cl, &h); err != nil {
		return nil, err
	}
	return &h, nil
}
