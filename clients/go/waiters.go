package leasehold

import (
	"context"
	"net/http"
	"time"
)

// Waiter is an acquire waiting for a key, as the key's queue lists it.
type Waiter struct {
	// Position is 1 for the head of the queue, the next to be granted.
	Position   int    `json:"position"`
	Holder     string `json:"holder"`
	Mode       string `json:"mode"`
	MaxHolders *int   `json:"max_holders"`
	// Keys is 1, or the size of the lock set it waits for.
	Keys         int       `json:"keys"`
	WaitingSince time.Time `json:"waiting_since"`
	WaitedMS     int64     `json:"waited_ms"`
	// WaitingUntil is when its wait ends, granted or not.
	WaitingUntil time.Time `json:"waiting_until"`
	WaitLeftMS   int64     `json:"wait_left_ms"`
	// Replica names the server that serves it.
	Replica string `json:"replica"`
}

// Waiters returns who waits for key, head first, on every server sharing
// the store; nobody waiting is an empty slice, held or not.
func (c *Client) Waiters(ctx context.Context, key string) ([]Waiter, error) {
	var q struct {
		Items []Waiter `json:"items"`
	}
	cl := &call{method: http.MethodGet, path: "/v1/locks/" + escape(key) + "/waiters"}
	if _, err := c.do(ctx, cl, &q); err != nil {
		return nil, err
	}
	return q.Items, nil
}
