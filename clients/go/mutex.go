package leasehold

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotLocked is returned by Unlock of a Mutex that holds no lease.
var ErrNotLocked = errors.New("leasehold: mutex is not locked")

// ErrLocked is returned by Lock of a Mutex that holds a live lease already:
// leases are not re-entrant, a second Lock would wait on itself.
var ErrLocked = errors.New("leasehold: mutex is locked already")

// ErrNoClient is returned by a Mutex that was not made by Client.NewMutex.
var ErrNoClient = errors.New("leasehold: mutex made without a client (use Client.NewMutex)")

// longestPoll bounds one long-poll of a waiting Lock; a longer wait is
// several polls with the same Idempotency-Key.
const longestPoll = 30 * time.Second

// cleanupTimeout bounds the background request that undoes a grant the
// server may have made just as a Lock gave up.
const cleanupTimeout = 5 * time.Second

// Mutex is a lock on one key across processes and hosts. Lock waits for it,
// a background renewal keeps the lease alive (or its Session does), and
// Lost is closed when the lease ends. A Mutex is for one holder at a time:
// Lock it again only after Unlock.
type Mutex struct {
	c    *Client
	key  string
	opts []Option

	mu    sync.Mutex
	lease *Lease
	life  *held
	// next is the Lost channel of the lease held, or of the next one.
	next *ending
	// last is the ending of the lease held, or of the last one (nil before
	// the first Lock): Err reads it.
	last *ending
}

// NewMutex returns a mutex on key; opts (WithTTL, WithLostMargin,
// WithSession, WithMetadata, WithHolder) apply to every Lock.
func (c *Client) NewMutex(key string, opts ...Option) *Mutex {
	return &Mutex{c: c, key: key, opts: opts, next: newEnding()}
}

// Key is the mutex's lock key.
func (m *Mutex) Key() string { return m.key }

// Lock waits until the lease is granted, or fails when ctx ends (with
// ctx.Err()) or when the server refuses the request. A Lock that gives up
// leaves no lease behind: a grant the server made as the client gave up is
// released in the background.
func (m *Mutex) Lock(ctx context.Context) error { return m.lock(ctx, true) }

// TryLock takes the lease only if the key is free now; held by another, it
// fails with a lock-held *Problem (IsHeld) naming the holder.
func (m *Mutex) TryLock(ctx context.Context) error { return m.lock(ctx, false) }

func (m *Mutex) lock(ctx context.Context, wait bool) error {
	if m.c == nil {
		return ErrNoClient
	}
	if err := m.discardLost(ctx); err != nil {
		return err
	}
	g := m.c.grantOf(m.opts)
	g.idemKey = newIdempotencyKey()
	for {
		g.wait = 0
		if wait {
			g.wait = longestPoll
			if dl, ok := ctx.Deadline(); ok {
				if left := time.Until(dl); left < g.wait {
					g.wait = left
				}
			}
			if g.wait < 0 {
				g.wait = 0
			}
		}
		lease, err := m.c.acquire(ctx, m.key, &g)
		if err == nil {
			life, err := m.c.keep(ctx, lease, &g)
			if err != nil {
				m.c.undo(m.key, g)
				return err
			}
			m.install(lease, life)
			return nil
		}
		if ctx.Err() != nil {
			m.c.undo(m.key, g)
			return ctx.Err()
		}
		if IsUnreachable(err) {
			// The request may have been granted before the answer was lost.
			m.c.undo(m.key, g)
			return err
		}
		if !wait || !IsHeld(err) {
			return err
		}
	}
}

// discardLost unlocks a lease that was lost and not unlocked (bounded as
// Unlock is after a loss), so that the mutex can be locked again; a live
// lease is ErrLocked.
func (m *Mutex) discardLost(ctx context.Context) error {
	m.mu.Lock()
	held, lost := m.lease != nil, m.last != nil && m.last.ended()
	m.mu.Unlock()
	switch {
	case held && !lost:
		return ErrLocked
	case held:
		_ = m.Unlock(ctx)
	}
	return nil
}

// undo releases whatever lease an acquire with g's Idempotency-Key was
// granted: a repeat with the same key and no wait returns that lease (or
// takes the free key), and it is released at once. It runs in the
// background with a fresh context of its own.
func (c *Client) undo(key string, g grant) {
	g.wait = 0
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if l, err := c.acquire(ctx, key, &g); err == nil {
			_ = c.Release(ctx, key, l.Token)
		}
	}()
}

// install makes l the held lease; its Lost channel is the one Lost gave
// out before, unless that one belonged to an earlier lease.
func (m *Mutex) install(l *Lease, life *held) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next.ended() {
		m.next = newEnding()
	}
	m.lease, m.life, m.last = l, life, m.next
	life.start(m.next)
}

// Lost returns the channel of the lease held, closed when it ends: lost
// (Err says why) or released by Unlock (Err is ErrUnlocked). Lost before
// Lock returns the channel of the next lease, the one that Lock then
// takes; after a loss the channel stays closed until Unlock, which gives
// Lost a fresh channel for the next lease. A channel once taken is never
// reopened or replaced, so it can be taken once and kept.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next.ch
}

// Err says why the lease ended: nil while it is held (and before the first
// Lock); once it ended, an error matching one of ErrExpired,
// ErrReleasedElsewhere, ErrRefused, ErrSessionEnded or ErrUnlocked, until
// the next Lock.
func (m *Mutex) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		return nil
	}
	return m.last.reason()
}

// FencingToken is the fencing token of the current lease (0 when unlocked).
// Send it with every write a downstream system can check.
func (m *Mutex) FencingToken() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return 0
	}
	return m.lease.FencingToken
}

// Lease is the current lease as it was granted (nil when unlocked).
func (m *Mutex) Lease() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// Deadline is the held lease's local deadline (zero when unlocked): the
// monotonic time by which the server certainly still holds it, as of the
// last confirmed renewal. Lost closes the lost margin before it.
func (m *Mutex) Deadline() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.life == nil {
		return time.Time{}
	}
	return m.life.deadline()
}

// Unlock stops the renewal, closes Lost (ErrUnlocked, unless the lease was
// lost already) and releases the lease. It waits on the network no longer
// than the lease's own life, and after a known loss at most 1 s (one
// release is still tried: the server may hold the lease a little longer);
// a lease that is gone already is no error.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	l, life, e := m.lease, m.life, m.last
	m.lease, m.life = nil, nil
	if l != nil {
		m.next = newEnding()
	}
	m.mu.Unlock()
	if l == nil {
		return ErrNotLocked
	}
	bound := life.stop()
	lostBefore := !e.end(&LostError{Reason: ErrUnlocked})
	if lostBefore {
		why := e.reason()
		if errors.Is(why, ErrReleasedElsewhere) || errors.Is(why, ErrSessionEnded) {
			return nil // the server said it is gone: nothing to release
		}
		bound = time.Now().Add(lostReleaseTimeout)
	}
	rctx, cancel := context.WithDeadline(ctx, bound)
	defer cancel()
	err := m.c.Release(rctx, m.key, l.Token)
	if err == nil || IsLeaseLost(err) || lostBefore {
		return nil
	}
	return err
}
