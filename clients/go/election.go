package leasehold

import (
	"context"
	"errors"
)

// ErrNoLeader is returned by Leader when nobody leads.
var ErrNoLeader = errors.New("leasehold: no leader")

// Election elects one leader among campaigners of the same name: the leader
// is the holder of the lock of that key. Its lease is kept alive while it
// leads; Lost is closed when leadership is lost.
type Election struct {
	c    *Client
	name string
	m    *Mutex
}

// NewElection returns an election of name; opts apply to the leader's lease.
func (c *Client) NewElection(name string, opts ...Option) *Election {
	return &Election{c: c, name: name, m: c.NewMutex(name, opts...)}
}

// Campaign waits until this campaigner leads, or ctx ends.
func (e *Election) Campaign(ctx context.Context) error { return e.m.Lock(ctx) }

// Resign gives leadership up.
func (e *Election) Resign(ctx context.Context) error { return e.m.Unlock(ctx) }

// Lost is closed when leadership (once won) is lost, or resigned.
func (e *Election) Lost() <-chan struct{} { return e.m.Lost() }

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
		w := e.c.Watch(ctx, WatchOptions{Prefix: e.name, Since: since, FromStart: err == nil})
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
