package leasehold

import (
	"context"
	"errors"
	"time"
)

// ErrNoLeader is returned by Leader when nobody leads.
var ErrNoLeader = errors.New("leasehold: no leader")

// Election elects one leader among campaigners of the same name: the leader
// is the holder of the lock of that key, and campaigners are served first
// come, first served. Its lease is kept by the rule of a lease's life (a
// campaign that waited long is counted from its grant, never from when it
// started waiting), so a leader that resigns hands over at once: the next
// campaigner leads a round trip later. Lost is closed when leadership is
// lost, and Err says why.
//
// An election can ride on a Session, as etcd's concurrency.NewElection
// does: NewElection(name, WithSession(s)). It then has no keep-alive of its
// own, and leadership ends with the session (ErrSessionEnded).
type Election struct {
	c    *Client
	name string
	m    *Mutex
}

// NewElection returns an election of name; opts (WithTTL, WithLostMargin,
// WithSession, WithMetadata, WithHolder) apply to the leader's lease.
func (c *Client) NewElection(name string, opts ...Option) *Election {
	return &Election{c: c, name: name, m: c.NewMutex(name, opts...)}
}

// Campaign waits until this campaigner leads, or ctx ends.
func (e *Election) Campaign(ctx context.Context) error { return e.m.Lock(ctx) }

// Resign gives leadership up; the next campaigner leads at once. It waits
// on the network as Mutex.Unlock does.
func (e *Election) Resign(ctx context.Context) error { return e.m.Unlock(ctx) }

// Lost is closed when leadership ends: lost, or resigned. Its life is a
// Mutex's: taken before Campaign, it is the channel of the leadership that
// Campaign wins.
func (e *Election) Lost() <-chan struct{} { return e.m.Lost() }

// Err says why leadership ended (nil while leading, and before the first
// Campaign): ErrExpired, ErrReleasedElsewhere, ErrRefused,
// ErrSessionEnded, or ErrUnlocked after Resign.
func (e *Election) Err() error { return e.m.Err() }

// Deadline is the leader's lease's local deadline (zero when not leading).
func (e *Election) Deadline() time.Time { return e.m.Deadline() }

// FencingToken is the leader's fencing token while this campaigner leads.
func (e *Election) FencingToken() int64 { return e.m.FencingToken() }

// Leader is the current leader's lease, or ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (*Lease, error) {
	l, err := e.c.Inspect(ctx, e.name)
	if IsNotFound(err) {
		return nil, ErrNoLeader
	}
	return l, err
}

// Observe sends the leader at start and at every change (a nil *Lease when
// nobody leads) until ctx ends, when the channel is closed.
func (e *Election) Observe(ctx context.Context) <-chan *Lease {
	out := make(chan *Lease, 1)
	go func() {
		defer close(out)
		// Changes after this revision are watched, so none made after the
		// first look at the leader is missed.
		since, err := e.c.Revision(ctx)
		w := e.c.Watch(ctx, WatchOptions{Prefix: e.name, Since: since, FromNow: err != nil})
		var last int64 = -1
		send := func() bool {
			l, err := e.Leader(ctx)
			if err != nil && !errors.Is(err, ErrNoLeader) {
				return ctx.Err() == nil
			}
			var token int64
			if l != nil {
				token = l.FencingToken
			}
			if token == last {
				return true
			}
			last = token
			select {
			case out <- l:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if !send() {
			return
		}
		for ev := range w.Events() {
			if ev.Key != e.name {
				continue
			}
			if !send() {
				return
			}
		}
	}()
	return out
}
