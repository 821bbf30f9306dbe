package leasehold

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotLocked is returned by Unlock of a Mutex that holds no lease.
var ErrNotLocked = errors.New("leasehold: mutex is not locked")

// ErrNoClient is returned by a Mutex that was not made by Client.NewMutex.
var ErrNoClient = errors.New("leasehold: mutex made without a client (use Client.NewMutex)")

// longestPoll bounds one long-poll of a waiting Lock; a longer wait is
// several polls with the same Idempotency-Key.
const longestPoll = 30 * time.Second

// cleanupTimeout bounds the background request that undoes a grant the
// server may have made just as a Lock gave up.
const cleanupTimeout = 5 * time.Second

// Mutex is a lock on one key across processes and hosts. Lock waits for it,
// a background renewal keeps the lease alive, and Lost is closed when the
// lease is lost. A Mutex is for one holder at a time: Lock it again only
// after Unlock.
type Mutex struct {
	c    *Client
	key  string
	opts []Option

	mu    sync.Mutex
	lease *Lease
	k     *keeper
	lost  chan struct{}
}

// NewMutex returns a mutex on key; opts (WithTTL, WithSession, WithMetadata,
// WithLeaseHolder) apply to every Lock.
func (c *Client) NewMutex(key string, opts ...Option) *Mutex {
	return &Mutex{c: c, key: key, opts: opts}
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
			m.install(lease, &g)
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

func (m *Mutex) install(l *Lease, g *grant) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lease = l
	if g.session != nil {
		m.k = nil
		m.lost = make(chan struct{})
		lost, done := m.lost, g.session.Done()
		go func() {
			select {
			case <-done:
				close(lost)
			case <-lost:
			}
		}()
		return
	}
	ttl := g.ttl
	if ttl == 0 {
		ttl = DefaultTTL
	}
	key, token := m.key, l.Token
	m.k = startKeeper(l.Deadline(), ttl, func(ctx context.Context) (time.Time, error) {
		r, err := m.c.Renew(ctx, key, token, ttl)
		if err != nil {
			return time.Time{}, err
		}
		return r.Deadline(), nil
	})
	m.lost = m.k.lost
}

// Lost is closed when the lease is lost: the server said so, or no renewal
// succeeded before the lease's end as measured from when the last grant or
// renewal was sent (the moment it fires falls before the server can grant
// the key to another). It is also closed by Unlock. Before the first Lock it
// returns nil (a channel that never closes).
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
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

// Lease is the current lease (nil when unlocked).
func (m *Mutex) Lease() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// Unlock stops the renewal and releases the lease. A lease that was lost
// already is no error to release: Unlock then returns nil.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	l, k, lost := m.lease, m.k, m.lost
	m.lease, m.k = nil, nil
	m.mu.Unlock()
	if l == nil {
		return ErrNotLocked
	}
	if k != nil {
		k.halt()
		k.markLost(ErrNotLocked)
	} else {
		select {
		case <-lost:
		default:
			close(lost)
		}
	}
	err := m.c.Release(ctx, m.key, l.Token)
	if IsLeaseLost(err) {
		return nil
	}
	return err
}

// KeyedMutex is a lock per object (a service, a volume, a node) under one
// key prefix: what a controller uses to serialise reconciles per object. It
// keeps no state per key: Lock returns the locked *Mutex, which the caller
// unlocks, and nothing remains of a key once it is unlocked.
type KeyedMutex struct {
	c      *Client
	prefix string
	opts   []Option
}

// NewKeyedMutex returns a keyed mutex whose lock keys are prefix+key.
func (c *Client) NewKeyedMutex(prefix string, opts ...Option) *KeyedMutex {
	return &KeyedMutex{c: c, prefix: prefix, opts: opts}
}

// Lock waits for the lock of key and returns it held.
func (km *KeyedMutex) Lock(ctx context.Context, key string) (*Mutex, error) {
	m := km.c.NewMutex(km.prefix+key, km.opts...)
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// TryLock takes the lock of key only if it is free now.
func (km *KeyedMutex) TryLock(ctx context.Context, key string) (*Mutex, error) {
	m := km.c.NewMutex(km.prefix+key, km.opts...)
	if err := m.TryLock(ctx); err != nil {
		return nil, err
	}
	return m, nil
}
