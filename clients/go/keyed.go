package leasehold

import "context"

// KeyedMutex is a lock per object (a service, a volume, a node) under one
// key prefix: what a controller uses to serialise reconciles per object. It
// keeps no state per key: Lock returns the locked *Mutex, which the caller
// unlocks, and nothing remains of a key once it is unlocked. Bound to a
// session (WithSession), a thousand held keys cost one keep-alive.
type KeyedMutex struct {
	c      *Client
	prefix string
	opts   []Option
}

// NewKeyedMutex returns a keyed mutex whose lock keys are prefix+key; opts
// apply to every lock, as NewMutex's do.
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
