package leasehold

import (
	"context"
	"time"
)

// held is how one held lock lease is kept: renewed by a keeper of its own,
// or bound to a session that keeps it. It is started with the ending it
// closes on loss, and stopped by Unlock.
type held struct {
	c        *Client
	key      string
	token    string
	ttl      time.Duration
	margin   time.Duration
	session  *Session
	initial  time.Time // the grant's local deadline
	capped   bool      // the grant's expiry is its tenure's end
	k        *keeper
	unbind   func()
	finished bool
}

// keep prepares the keeping of a lease just granted. A grant whose answer
// came so late that its lost time has passed is renewed once at once: the
// renewal proves the lease is still held (or the Lock fails).
func (c *Client) keep(ctx context.Context, l *Lease, g *grant) (*held, error) {
	h := &held{c: c, key: l.Key, token: l.Token, session: g.session, initial: l.Deadline(),
		capped: l.Capped()}
	if g.session != nil {
		if g.session.ending.ended() {
			return nil, &LostError{Reason: ErrSessionEnded, Err: cause(g.session.Err())}
		}
		return h, nil
	}
	h.ttl = g.ttlOrDefault()
	h.margin = lostMargin(h.ttl, g.margin)
	if !time.Now().Before(h.initial.Add(-h.margin)) {
		d, capped, err := h.renew(ctx)
		if err != nil {
			return nil, err
		}
		h.initial, h.capped = d, capped
	}
	return h, nil
}

func (h *held) renew(ctx context.Context) (time.Time, bool, error) {
	r, err := h.c.Renew(ctx, h.key, h.token, h.ttl)
	if err != nil {
		return time.Time{}, false, err
	}
	return r.Deadline(), r.Capped(), nil
}

// start keeps the lease from now on; e is closed with the reason when it is
// lost.
func (h *held) start(e *ending) {
	if h.session != nil {
		h.unbind = h.session.notify(func(err error) {
			e.end(&LostError{Reason: ErrSessionEnded, Err: cause(err)})
		})
		return
	}
	h.k = startKeeper(h.initial, h.capped, h.ttl, h.margin, h.renew, func(err error) { e.end(err) })
}

// stop ends the keeping. It returns how long a release is still worth
// waiting for: until the lease's local deadline (the server frees the key
// by itself then), and at least lostReleaseTimeout.
func (h *held) stop() time.Time {
	if h.finished {
		return time.Now().Add(lostReleaseTimeout)
	}
	h.finished = true
	if h.unbind != nil {
		h.unbind()
	}
	if h.k != nil {
		h.k.halt()
	}
	bound := h.deadline()
	if min := time.Now().Add(lostReleaseTimeout); bound.Before(min) {
		bound = min
	}
	return bound
}

// deadline is the lease's local deadline as of the last confirmed renewal.
func (h *held) deadline() time.Time {
	switch {
	case h.k != nil:
		return h.k.lostAt().Add(h.margin)
	case h.session != nil:
		return h.session.deadline()
	}
	return h.initial
}
