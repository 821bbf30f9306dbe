package leasehold

import (
	"context"
	"sync"
	"time"
)

// keeper renews one lease (a lock, a session, a member) in the background
// by the rule in life.go, and calls onLost once when the lease is lost:
// when the server answers that it is gone or refuses it, or, by a timer of
// its own, at the local deadline minus the margin when no renewal was
// confirmed in time. Once an answer says the expiry is the end of the
// lease's tenure (capped), nothing extends it: renewals stop, and the
// timer then says ErrLifetimeEnded. A renewal call runs in a goroutine of its own, so a
// call that hangs never delays that timer.
type keeper struct {
	ttl    time.Duration
	margin time.Duration
	renew  renewFunc
	onLost func(error)

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	mu       sync.Mutex
	deadline time.Time
	capped   bool
}

// renewFunc renews once and returns the lease's new local deadline, and
// whether that expiry is the end of its tenure.
type renewFunc func(ctx context.Context) (time.Time, bool, error)

type renewal struct {
	deadline time.Time
	capped   bool
	err      error
}

func startKeeper(deadline time.Time, capped bool, ttl, margin time.Duration, renew renewFunc, onLost func(error)) *keeper {
	k := &keeper{ttl: ttl, margin: margin, renew: renew, onLost: onLost, deadline: deadline,
		capped: capped, stop: make(chan struct{}), done: make(chan struct{})}
	go k.run()
	return k
}

// lostAt is when the lease counts as lost unless a renewal is confirmed.
func (k *keeper) lostAt() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.deadline.Add(-k.margin)
}

// renewDelay is how long until the next renewal of a lease whose deadline
// is deadline: a third of the TTL after the request that gave it was sent,
// at once if that is past.
func (k *keeper) renewDelay(deadline time.Time) time.Duration {
	d := time.Until(deadline.Add(-2 * k.ttl / 3))
	if d < 0 {
		return 0
	}
	return d
}

// retryDelay is the pause after a renewal that got no usable answer (the
// client already retried within the call).
func (k *keeper) retryDelay() time.Duration {
	d := k.ttl / 12
	if d < 20*time.Millisecond {
		d = 20 * time.Millisecond
	}
	if d > 500*time.Millisecond {
		d = 500 * time.Millisecond
	}
	return d
}

func (k *keeper) run() {
	defer close(k.done)
	lostAt := k.lostAt()
	lost := time.NewTimer(time.Until(lostAt))
	defer lost.Stop()
	next := time.NewTimer(k.renewDelay(lostAt.Add(k.margin)))
	defer next.Stop()
	if k.isCapped() {
		next.Stop()
	}
	var (
		inflight <-chan renewal // nil while no renewal is in flight
		cancel   context.CancelFunc
		lastErr  error
	)
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	for {
		select {
		case <-k.stop:
			return
		case <-lost.C:
			reason := ErrExpired
			if k.isCapped() {
				reason = ErrLifetimeEnded
			}
			k.onLost(&LostError{Reason: reason, Err: lastErr})
			return
		case <-next.C:
			// Each call ends by the time loss is declared, and after a third
			// of the TTL at most, so that one hung connection leaves time to
			// try another.
			end := time.Now().Add(k.ttl / 3)
			if lostAt.Before(end) {
				end = lostAt
			}
			inflight, cancel = k.startRenewal(end)
		case r := <-inflight:
			cancel()
			cancel, inflight = nil, nil
			switch {
			case r.err == nil:
				lostAt = k.extend(r.deadline, r.capped)
				resetTimer(lost, time.Until(lostAt))
				if !k.isCapped() {
					next.Reset(k.renewDelay(lostAt.Add(k.margin)))
				}
			case final(r.err):
				k.onLost(lostBy(r.err))
				return
			default:
				lastErr = r.err
				next.Reset(k.retryDelay())
			}
		}
	}
}

// startRenewal sends one renewal in a goroutine of its own, ending by end.
func (k *keeper) startRenewal(end time.Time) (<-chan renewal, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(context.Background(), end)
	out := make(chan renewal, 1)
	go func() {
		d, capped, err := k.renew(ctx)
		out <- renewal{d, capped, err}
	}()
	return out, cancel
}

// extend moves the deadline to d (never back), notes whether it is the
// end of the lease's tenure, and returns the new lostAt.
func (k *keeper) extend(d time.Time, capped bool) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	if d.After(k.deadline) {
		k.deadline = d
	}
	k.capped = k.capped || capped
	return k.deadline.Add(-k.margin)
}

// isCapped says whether an answer said the expiry is the tenure's end.
func (k *keeper) isCapped() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.capped
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// halt stops renewing (a renewal in flight is cancelled) and waits until the
// keeper is gone; onLost is not called after halt returns.
func (k *keeper) halt() {
	k.stopOnce.Do(func() { close(k.stop) })
	<-k.done
}
