package leasehold

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

// One rule for a lease's life, the same in every leasehold client:
//
//   - The local deadline is the monotonic time the request that granted or
//     renewed the lease was sent, plus waited_ms (how long a grant waited on
//     the server; renewals carry none), plus expires_in_ms. The server
//     counts the lease from instants later than each of those, so the
//     deadline falls before the server's end. time.Now carries a monotonic
//     reading and Add keeps it: a step of the wall clock changes nothing.
//   - Renewals are sent every third of the TTL, so two can fail before the
//     lease ends, and each renewal call ends (its context's deadline) by
//     the time loss must be declared.
//   - Loss is declared at the deadline minus a margin, by a timer of its
//     own, whatever the renewal calls are doing: the margin is the time the
//     holder has to stop before the server can grant the key to another.

// Why a kept lease ended. Err of a Mutex, Election, Session or Membership
// matches exactly one of them with errors.Is; where the server answered,
// its *Problem is reachable with errors.As.
var (
	// ErrExpired: no renewal was confirmed before the local deadline minus
	// the margin; the network or the server was silent.
	ErrExpired = errors.New("leasehold: lease expired: no renewal confirmed in time")
	// ErrReleasedElsewhere: the server answered that the lease is gone
	// (409 lease-lost, or a 404): force-released, released with its token
	// elsewhere, expired on the server, or no longer there.
	ErrReleasedElsewhere = errors.New("leasehold: the server says the lease is gone")
	// ErrRefused: the server refused the renewal for another reason (401,
	// 403, 400, another 409, or any other final refusal).
	ErrRefused = errors.New("leasehold: the server refused the renewal")
	// ErrSessionEnded: the session the lease is bound to ended: closed,
	// expired or lost (told by the session, or a 409 session-lost).
	ErrSessionEnded = errors.New("leasehold: the lease's session ended")
	// ErrLifetimeEnded: the lease reached its cap on tenure (ends_by,
	// WithMaxLifetime or the server's ceiling), however often it was
	// renewed; said the lost margin before it.
	ErrLifetimeEnded = errors.New("leasehold: the lease reached the end of its tenure")
	// ErrUnlocked: this client released the lease itself (Unlock, Resign,
	// Close, Leave). Not a loss.
	ErrUnlocked = errors.New("leasehold: released by this client")
)

// LostError says why a kept lease ended: Reason is one of the sentinels
// above (errors.Is matches it), Err what was seen (the server's *Problem,
// the last renewal's error), if anything.
type LostError struct {
	Reason error
	Err    error
}

func (e *LostError) Error() string {
	if e.Err == nil {
		return e.Reason.Error()
	}
	return e.Reason.Error() + ": " + e.Err.Error()
}

// Is matches the reason alone, so that exactly one sentinel matches.
func (e *LostError) Is(target error) bool { return target == e.Reason }

// Unwrap gives what was seen, for errors.As (a *Problem, a *TransportError).
func (e *LostError) Unwrap() error { return e.Err }

// lostBy is the reason a final renewal answer ends a lease with: the table
// of loss reasons in the README, the same in every leasehold client.
//
//	409 session-lost              ErrSessionEnded
//	409 lease-lost                ErrReleasedElsewhere
//	404 (any *-not-found)         ErrReleasedElsewhere
//	any other final answer        ErrRefused (401, 403, 400, another 409, 410…)
//	no answer, 408, 429, 5xx      retried; ErrExpired at the lost time
func lostBy(err error) error {
	p := AsProblem(err)
	switch {
	case p == nil:
		return &LostError{Reason: ErrExpired, Err: err}
	case p.Type == TypeSessionLost:
		return &LostError{Reason: ErrSessionEnded, Err: err}
	case p.Type == TypeLeaseLost || p.Status == http.StatusNotFound:
		return &LostError{Reason: ErrReleasedElsewhere, Err: err}
	}
	return &LostError{Reason: ErrRefused, Err: err}
}

// capped says whether an answer's expiry is its tenure's end (its
// expires_in_ms reached its lifetime_left_ms): no renewal extends it.
func capped(expiresInMS int64, lifetimeLeftMS *int64) bool {
	return lifetimeLeftMS != nil && *lifetimeLeftMS <= expiresInMS
}

// final says whether a renewal error ends the lease at once: the server
// answered, and no later try can change its answer. Unanswered requests,
// 5xx, 408 and 429 are retried until the deadline.
func final(err error) bool {
	p := AsProblem(err)
	return p != nil && p.Status < 500 && p.Status != http.StatusRequestTimeout &&
		p.Status != http.StatusTooManyRequests
}

// cause is what a lease bound to a session was seen to end with: the
// session's own evidence, without the session's reason, so that the bound
// lease's Err matches ErrSessionEnded alone.
func cause(sessionErr error) error {
	var le *LostError
	if errors.As(sessionErr, &le) {
		return le.Err
	}
	return sessionErr
}

// Margin bounds: TTL/20, within [minMargin, maxMargin], at most TTL/2.
const (
	minMargin = 50 * time.Millisecond
	maxMargin = 2 * time.Second
)

// lostMargin is how long before the local deadline a lease of ttl is
// declared lost: room for the holder to stop, and for the local clock to
// run a little slower than the server's.
func lostMargin(ttl, asked time.Duration) time.Duration {
	m := asked
	if m <= 0 {
		m = ttl / 20
		if m < minMargin {
			m = minMargin
		}
		if m > maxMargin {
			m = maxMargin
		}
	}
	if m > ttl/2 {
		m = ttl / 2
	}
	return m
}

// lostReleaseTimeout bounds the release Unlock still tries after a known
// loss (the server may hold the lease a little longer; freeing it helps the
// next holder, but nobody waits long on a network that just failed).
const lostReleaseTimeout = time.Second

// ending is a channel closed once, with the reason it was closed.
type ending struct {
	ch   chan struct{}
	once sync.Once
	mu   sync.Mutex
	err  error
}

func newEnding() *ending { return &ending{ch: make(chan struct{})} }

// end closes the channel with err and reports whether this call did.
func (e *ending) end(err error) bool {
	did := false
	e.once.Do(func() {
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
		close(e.ch)
		did = true
	})
	return did
}

func (e *ending) reason() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *ending) ended() bool {
	select {
	case <-e.ch:
		return true
	default:
		return false
	}
}
