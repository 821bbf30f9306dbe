package leasehold

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Queue is a key with waiters: how many, and since when the oldest of
// them waits.
type Queue struct {
	Key           string    `json:"key"`
	Waiters       int64     `json:"waiters"`
	WaitingSince  time.Time `json:"waiting_since"`
	LongestWaitMS int64     `json:"longest_wait_ms"`
}

// Queues is the keys with the most waiters, most first, and the totals
// over every key read, listed or not.
type Queues struct {
	Items []Queue `json:"items"`
	// Waiters counts the waiters on every key read.
	Waiters int64 `json:"waiters"`
	// Keys counts the keys with waiters.
	Keys int64 `json:"keys"`
}

// Queues returns the keys under prefix with the longest queues on every
// server sharing the store, within what the client's token may read; limit
// 0 is the server's default (100).
func (c *Client) Queues(ctx context.Context, prefix string, limit int) (*Queues, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out Queues
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/queues", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Counts is what a key prefix counted: grants, releases (by the holder, a
// force release, a session's close), expiries and acquires refused.
type Counts struct {
	Grants   int64 `json:"grants"`
	Releases int64 `json:"releases"`
	Expiries int64 `json:"expiries"`
	Refusals int64 `json:"refusals"`
}

// PrefixActivity is one key prefix's lock activity on the server answering:
// a key's first path segment with its slash, or "other" past the server's
// bound on prefixes.
type PrefixActivity struct {
	Prefix     string `json:"prefix"`
	Total      Counts `json:"total"`
	LastMinute Counts `json:"last_minute"`
	// Waiters is how many wait on keys of the prefix on this server now.
	Waiters int64 `json:"waiters"`
	// WaitP50MS and WaitP99MS are how long the acquires that waited in the
	// last minute waited; nil without any.
	WaitP50MS *float64 `json:"wait_p50_ms"`
	WaitP99MS *float64 `json:"wait_p99_ms"`
}

// Prefixes returns lock activity by key prefix in name order, what
// /metrics counts per prefix, within what the client's token may read.
func (c *Client) Prefixes(ctx context.Context) ([]PrefixActivity, error) {
	var out struct {
		Items []PrefixActivity `json:"items"`
	}
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/prefixes"}, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}
