package leasehold

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// LimitInfo is a rate limit as the server keeps it: Rate tokens every
// PeriodMS, at most Burst at once, and how full its bucket is now.
type LimitInfo struct {
	Name     string `json:"name"`
	Rate     int64  `json:"rate"`
	PeriodMS int64  `json:"period_ms"`
	Burst    int64  `json:"burst"`
	// Available is how many whole tokens a take could have now.
	Available int64 `json:"available"`
	// FullInMS is how long until the bucket is full again.
	FullInMS int64 `json:"full_in_ms"`
}

// Period is the limit's period as a time.Duration.
func (l *LimitInfo) Period() time.Duration { return time.Duration(l.PeriodMS) * time.Millisecond }

// LimitPage is one page of rate limits.
type LimitPage struct {
	Items      []LimitInfo `json:"items"`
	NextCursor *string     `json:"next_cursor"`
}

// Taken is the answer to a take that was admitted.
type Taken struct {
	Cost      int64 `json:"cost"`
	Available int64 `json:"available"`
	FullInMS  int64 `json:"full_in_ms"`
	// WaitedMS is how long the take waited on the server, when it did.
	WaitedMS int64 `json:"waited_ms,omitempty"`
}

func limitPath(name string) string { return "/v1/limits/" + escape(name) }

// DefineLimit creates the rate limit name (rate tokens every period, at most
// burst at once; burst 0: rate), or changes its numbers: created says which
// (201 or 200). A change keeps what was spent. A name ending in "/" is a
// family: every name under it gets a bucket of its own with these numbers.
func (c *Client) DefineLimit(ctx context.Context, name string, rate int64, period time.Duration, burst int64) (*LimitInfo, bool, error) {
	body := struct {
		Rate     int64  `json:"rate"`
		PeriodMS int64  `json:"period_ms"`
		Burst    *int64 `json:"burst,omitempty"`
	}{Rate: rate, PeriodMS: period.Milliseconds()}
	if burst > 0 {
		body.Burst = &burst
	}
	var info LimitInfo
	status, err := c.do(ctx, &call{method: http.MethodPut, path: limitPath(name), body: body}, &info)
	if err != nil {
		return nil, false, err
	}
	return &info, status == http.StatusCreated, nil
}

// Limit reads a rate limit; one that does not exist is IsLimitNotFound.
func (c *Client) Limit(ctx context.Context, name string) (*LimitInfo, error) {
	var info LimitInfo
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: limitPath(name)}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// ListLimits returns one page of the rate limits whose names start with
// prefix ("": every one).
func (c *Client) ListLimits(ctx context.Context, prefix string, opts ListOptions) (*LimitPage, error) {
	var p LimitPage
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/limits", query: prefixQuery(prefix, opts)}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteLimit deletes a rate limit (its creator, or an admin).
func (c *Client) DeleteLimit(ctx context.Context, name string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: limitPath(name)}, nil)
	return err
}

// TakeLimit takes cost tokens of the limit name, waiting on the server up
// to wait for them (0: not at all). A denial is a rate-limited *Problem
// (IsRateLimited) whose RetryAfter says when the same take would be
// admitted; it is returned as it is, never retried here. A cost above the
// limit's burst is IsCostExceedsBurst.
func (c *Client) TakeLimit(ctx context.Context, name string, cost int64, wait time.Duration) (*Taken, error) {
	body := struct {
		Cost int64  `json:"cost"`
		Wait *int64 `json:"wait_ms,omitempty"`
	}{Cost: cost, Wait: optMs(wait)}
	var t Taken
	cl := &call{method: http.MethodPost, path: limitPath(name) + "/take", body: body, denialIsFinal: true}
	if _, err := c.do(ctx, cl, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// RefundLimit gives cost tokens back to the limit name (never above its
// burst), as when work that took them did not happen.
func (c *Client) RefundLimit(ctx context.Context, name string, cost int64) (*LimitInfo, error) {
	body := struct {
		Cost int64 `json:"cost"`
	}{cost}
	var info LimitInfo
	if _, err := c.do(ctx, &call{method: http.MethodPost, path: limitPath(name) + "/refund", body: body}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Limiter takes from one rate limit kept on the server, shaped as
// golang.org/x/time/rate's Limiter: Allow and AllowN say whether a take is
// admitted now, Wait blocks until it is or the context ends. Every replica
// and every process taking from the same name shares one bucket.
type Limiter struct {
	c    *Client
	name string
	// chunk bounds one wait on the server, so that a server whose
	// --max-wait is short never refuses the request.
	chunk time.Duration
}

// NewLimiter returns a Limiter of the rate limit name (define it first
// with DefineLimit, or name one under a family).
func (c *Client) NewLimiter(name string) *Limiter {
	return &Limiter{c: c, name: name, chunk: 5 * time.Second}
}

// Name is the rate limit this limiter takes from.
func (l *Limiter) Name() string { return l.name }

// Allow takes one token if one is there now, and says whether it did. An
// error (the server unreachable, the limit unknown) is a false; AllowN
// says which.
func (l *Limiter) Allow(ctx context.Context) bool {
	ok, _ := l.AllowN(ctx, 1)
	return ok
}

// AllowN takes n tokens if they are there now: true and nil when taken,
// false and nil when denied (nothing is taken then), false and the error
// when the server refused otherwise.
func (l *Limiter) AllowN(ctx context.Context, n int64) (bool, error) {
	_, err := l.c.TakeLimit(ctx, l.name, n, 0)
	if err == nil {
		return true, nil
	}
	if IsRateLimited(err) {
		return false, nil
	}
	return false, err
}

// Wait blocks until cost tokens are taken, first come first served among
// the server's waiters of this limit, or until ctx ends (its error then).
// A cost above the limit's burst fails at once (IsCostExceedsBurst), as
// x/time/rate's WaitN does for n above its burst.
func (l *Limiter) Wait(ctx context.Context, cost int64) error {
	for {
		wait := l.chunk
		if deadline, ok := ctx.Deadline(); ok {
			left := time.Until(deadline)
			if left <= 0 {
				return context.DeadlineExceeded
			}
			if left < wait {
				wait = left
			}
		}
		_, err := l.c.TakeLimit(ctx, l.name, cost, wait)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !IsRateLimited(err) {
			return err
		}
		// Denied past this wait: a take limited by the token's write rate
		// (not the limit's) comes back at once; wait as it says.
		if p := AsProblem(err); p.RetryAfter > 0 && !isLimitDenial(p) {
			if !sleepCtx(ctx, p.RetryAfter) {
				return ctx.Err()
			}
		}
	}
}

// isLimitDenial tells a rate limit's denial (which says retry_after_ms)
// from the token's write rate being exceeded.
func isLimitDenial(p *Problem) bool {
	_, ok := p.Extensions["retry_after_ms"]
	return ok
}

// RetryAfterMS is how long until a denied take would be admitted, as the
// rate limit's denial says it (0 when err says nothing of it).
func RetryAfterMS(err error) int64 {
	p := AsProblem(err)
	if p == nil {
		return 0
	}
	var ms int64
	if raw, ok := p.Extensions["retry_after_ms"]; ok && json.Unmarshal(raw, &ms) == nil {
		return ms
	}
	return 0
}
