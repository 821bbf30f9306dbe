package leasehold

import (
	"context"
	"sync"
	"time"
)

// keeper renews a lease (or a session) in the background and closes lost
// when it is lost: when the server says so, or when its deadline (measured
// from when the last successful grant or renewal was SENT) passes without a
// successful renewal. The server measures the lease from when it received
// the request, so the deadline falls no later than the real end.
type keeper struct {
	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	lostOnce sync.Once
	stopOnce sync.Once
	mu       sync.Mutex
	err      error
}

// renewFunc renews once and returns the new deadline.
type renewFunc func(ctx context.Context) (time.Time, error)

func startKeeper(deadline time.Time, ttl time.Duration, renew renewFunc) *keeper {
	k := &keeper{lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go k.run(deadline, ttl, renew)
	return k
}

// safetyMargin is how much before the computed deadline a lease counts as
// lost: room for the local clock to run slower than the server's, and for
// the holder to stop acting on Lost.
func safetyMargin(ttl time.Duration) time.Duration {
	m := ttl / 20
	if m > time.Second {
		m = time.Second
	}
	return m
}

// interval between renewals: a third of the TTL, so two renewals can fail
// before the lease ends.
func renewInterval(ttl time.Duration) time.Duration {
	d := ttl / 3
	if d < 30*time.Millisecond {
		d = 30 * time.Millisecond
	}
	return d
}

func (k *keeper) run(deadline time.Time, ttl time.Duration, renew renewFunc) {
	defer close(k.done)
	interval := renewInterval(ttl)
	margin := safetyMargin(ttl)
	end := time.NewTimer(time.Until(deadline) - margin)
	defer end.Stop()
	next := time.NewTimer(interval)
	defer next.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-end.C:
			k.markLost(context.DeadlineExceeded)
			return
		case <-next.C:
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		stopped := make(chan struct{})
		go func() {
			select {
			case <-k.stop:
				cancel()
			case <-stopped:
			}
		}()
		d, err := renew(ctx)
		close(stopped)
		cancel()
		switch {
		case err == nil:
			deadline = d
			if !end.Stop() {
				select {
				case <-end.C:
				default:
				}
			}
			end.Reset(time.Until(deadline) - margin)
			next.Reset(interval)
		case AsProblem(err) != nil && AsProblem(err).Status < 500 && AsProblem(err).Status != 429 &&
			AsProblem(err).Status != 408:
			// The server answered: the lease is gone (or the request can
			// never succeed). Nothing will bring it back.
			k.markLost(err)
			return
		default:
			// No answer: try again soon, until the deadline.
			retry := interval / 4
			if retry < 20*time.Millisecond {
				retry = 20 * time.Millisecond
			}
			next.Reset(retry)
		}
	}
}

func (k *keeper) markLost(err error) {
	k.lostOnce.Do(func() {
		k.mu.Lock()
		k.err = err
		k.mu.Unlock()
		close(k.lost)
	})
}

// halt stops renewing and waits until the renewer is gone.
func (k *keeper) halt() {
	k.stopOnce.Do(func() { close(k.stop) })
	<-k.done
}

func (k *keeper) cause() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}
