package leasehold

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Capacity is a key's capacity as the server keeps it: the permits its
// live leases may hold in all, the permits they hold and those its
// waiters ask for. After a shrink Held may exceed Permits: nothing held is
// revoked, grants wait until what is held plus what is asked fits.
type Capacity struct {
	Key     string `json:"key"`
	Permits int64  `json:"permits"`
	Held    int64  `json:"held"`
	Waiting int64  `json:"waiting"`
}

func capacityPath(key string) string { return "/v1/locks/" + escape(key) + "/capacity" }

// SetCapacity stores permits as key's capacity, or changes it: created
// says which (201 or 200). A change revokes nothing and wakes the key's
// waiters that now fit.
func (c *Client) SetCapacity(ctx context.Context, key string, permits int64) (*Capacity, bool, error) {
	body := struct {
		Permits int64 `json:"permits"`
	}{permits}
	var cp Capacity
	status, err := c.do(ctx, &call{method: http.MethodPut, path: capacityPath(key), body: body}, &cp)
	if err != nil {
		return nil, false, err
	}
	return &cp, status == http.StatusCreated, nil
}

// Capacity reads key's capacity; a key without one is IsCapacityNotFound.
func (c *Client) Capacity(ctx context.Context, key string) (*Capacity, error) {
	var cp Capacity
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: capacityPath(key)}, &cp); err != nil {
		return nil, err
	}
	return &cp, nil
}

// DeleteCapacity deletes key's capacity; while live leases hold permits of
// it the server refuses (IsCapacityInUse).
func (c *Client) DeleteCapacity(ctx context.Context, key string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: capacityPath(key)}, nil)
	return err
}

// tryTimeout bounds a TryAcquire, which takes no context.
const tryTimeout = 10 * time.Second

// Semaphore is a weighted semaphore over a key whose capacity the server
// keeps (SetCapacity), shaped as golang.org/x/sync/semaphore's Weighted:
// Acquire(ctx, n) waits for n permits, TryAcquire(n) takes them only if
// they fit now, Release(n) gives them back. Every process and host
// acquiring the same key shares the one capacity, and the server serves
// its waiters strictly in order: a large Acquire at the head of the queue
// is never overtaken by small ones behind it.
//
// Each Acquire is one lease of n permits with a fencing token of its own,
// renewed in the background while held (as a Mutex's). Release(n) gives
// back whole acquisitions: n is the permits of one Acquire, or the sum of
// several.
type Semaphore struct {
	c    *Client
	key  string
	opts []Option

	mu   sync.Mutex
	held []*Mutex
}

// NewSemaphore returns a semaphore over key; opts (WithTTL,
// WithLostMargin, WithSession, WithMetadata, WithHolder) apply to every
// Acquire.
func (c *Client) NewSemaphore(key string, opts ...Option) *Semaphore {
	return &Semaphore{c: c, key: key, opts: opts}
}

// Key is the semaphore's lock key.
func (s *Semaphore) Key() string { return s.key }

// Acquire waits until n permits are granted, or fails when ctx ends (with
// ctx.Err(), leaving nothing held) or when the server refuses the request:
// more than the capacity is IsPermitsExceedCapacity at once.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	return s.acquire(ctx, n, true)
}

// TryAcquire takes n permits only if they fit now and nobody waits before
// it; false otherwise (and on any error).
func (s *Semaphore) TryAcquire(n int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), tryTimeout)
	defer cancel()
	return s.acquire(ctx, n, false) == nil
}

func (s *Semaphore) acquire(ctx context.Context, n int64, wait bool) error {
	if s.c == nil {
		return ErrNoClient
	}
	if n < 1 {
		return fmt.Errorf("leasehold: Acquire(%d): a semaphore takes at least 1 permit", n)
	}
	opts := append(append([]Option{}, s.opts...), WithPermits(int(n)))
	m := s.c.NewMutex(s.key, opts...)
	var err error
	if wait {
		err = m.Lock(ctx)
	} else {
		err = m.TryLock(ctx)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.held = append(s.held, m)
	s.mu.Unlock()
	return nil
}

// Held is the permits this semaphore holds now (leases lost since they
// were acquired included, until released).
func (s *Semaphore) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, m := range s.held {
		n += permitsOf(m)
	}
	return n
}

// Leases are the leases held, one per Acquire, oldest first.
func (s *Semaphore) Leases() []*Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Lease, 0, len(s.held))
	for _, m := range s.held {
		if l := m.Lease(); l != nil {
			out = append(out, l)
		}
	}
	return out
}

// Release gives back n permits: the newest acquisition of exactly n, else
// acquisitions whose permits add up to n, newest first. As x/sync's
// Release, it panics when n is more than is held or matches no whole
// acquisitions. The leases are released in the background.
func (s *Semaphore) Release(n int64) {
	s.mu.Lock()
	picked, ok := pick(s.held, n)
	if !ok {
		s.mu.Unlock()
		panic(fmt.Sprintf("leasehold: Release(%d) of %s matches no acquisitions held", n, s.key))
	}
	kept := s.held[:0]
	for i, m := range s.held {
		if !picked[i] {
			kept = append(kept, m)
		}
	}
	var gone []*Mutex
	for i := range picked {
		gone = append(gone, s.held[i])
	}
	s.held = kept
	s.mu.Unlock()
	for _, m := range gone {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		_ = m.Unlock(ctx)
		cancel()
	}
}

// pick chooses the acquisitions of held that Release(n) gives back: the
// newest of exactly n permits, else the newest whose permits fit in what
// is left of n, until n is covered exactly.
func pick(held []*Mutex, n int64) (map[int]bool, bool) {
	for i := len(held) - 1; i >= 0; i-- {
		if permitsOf(held[i]) == n {
			return map[int]bool{i: true}, true
		}
	}
	order := make([]int, len(held))
	for i := range order {
		order[i] = len(held) - 1 - i
	}
	sort.SliceStable(order, func(a, b int) bool { return permitsOf(held[order[a]]) > permitsOf(held[order[b]]) })
	picked, left := map[int]bool{}, n
	for _, i := range order {
		if p := permitsOf(held[i]); p <= left {
			picked[i] = true
			left -= p
		}
	}
	return picked, left == 0 && n > 0
}

func permitsOf(m *Mutex) int64 {
	if l := m.Lease(); l != nil {
		return int64(l.Permits)
	}
	return 0
}
