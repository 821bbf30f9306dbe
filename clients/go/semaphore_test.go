package leasehold_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// eventually polls cond every 20 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

func TestASemaphoreTakesPermitsOfTheCapacityTheServerKeeps(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	if _, err := c.Capacity(ctx, "gpu/pool"); !leasehold.IsCapacityNotFound(err) {
		t.Fatalf("a capacity before it is set: %v", err)
	}
	if cp, created, err := c.SetCapacity(ctx, "gpu/pool", 5); err != nil || !created || cp.Permits != 5 {
		t.Fatalf("set: %+v, created %v, %v", cp, created, err)
	}
	if _, created, err := c.SetCapacity(ctx, "gpu/pool", 5); err != nil || created {
		t.Fatalf("set again: created %v, %v (want 200)", created, err)
	}
	s := c.NewSemaphore("gpu/pool", leasehold.WithTTL(10*time.Second))
	if err := s.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if s.TryAcquire(3) {
		t.Fatal("3 more of 5 with 3 held")
	}
	if !s.TryAcquire(2) {
		t.Fatal("2 more of 5 with 3 held")
	}
	if cp, err := c.Capacity(ctx, "gpu/pool"); err != nil || cp.Held != 5 || s.Held() != 5 {
		t.Fatalf("capacity %+v (held here %d), %v", cp, s.Held(), err)
	}
	if ls := s.Leases(); len(ls) != 2 || ls[0].Permits != 3 || ls[1].Permits != 2 || ls[0].FencingToken == ls[1].FencingToken {
		t.Fatalf("leases %+v", ls)
	}
	if err := s.Acquire(ctx, 6); !leasehold.IsPermitsExceedCapacity(err) {
		t.Fatalf("6 of 5: %v", err)
	}
	if err := c.DeleteCapacity(ctx, "gpu/pool"); !leasehold.IsCapacityInUse(err) {
		t.Fatalf("delete while held: %v", err)
	}
	s.Release(5)
	if s.Held() != 0 {
		t.Fatalf("held %d after releasing all", s.Held())
	}
	eventually(t, "nothing held on the server", func() bool {
		cp, err := c.Capacity(ctx, "gpu/pool")
		return err == nil && cp.Held == 0
	})
	if err := c.DeleteCapacity(ctx, "gpu/pool"); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("releasing more than held did not panic")
			}
		}()
		s.Release(1)
	}()
}

// A large Acquire at the head of the key's queue is granted before small
// ones behind it, even while they would fit.
func TestASemaphoresWaitersAreServedInOrder(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	if _, _, err := c.SetCapacity(ctx, "fifo", 4); err != nil {
		t.Fatal(err)
	}
	first, large, small := c.NewSemaphore("fifo"), c.NewSemaphore("fifo"), c.NewSemaphore("fifo")
	if err := first.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int64) func() bool {
		return func() bool {
			cp, err := c.Capacity(ctx, "fifo")
			return err == nil && cp.Waiting == n
		}
	}
	largeDone, smallDone := make(chan error, 1), make(chan error, 1)
	go func() { largeDone <- large.Acquire(ctx, 4) }()
	eventually(t, "the large request waits", waiting(4))
	go func() { smallDone <- small.Acquire(ctx, 1) }()
	eventually(t, "the small request waits behind it", waiting(5))
	time.Sleep(200 * time.Millisecond)
	if len(smallDone) > 0 {
		t.Fatal("a small request overtook the large one at the head")
	}
	first.Release(3)
	if err := <-largeDone; err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if len(smallDone) > 0 {
		t.Fatal("the small request was granted beside 4 of 4")
	}
	large.Release(4)
	if err := <-smallDone; err != nil {
		t.Fatal(err)
	}
	small.Release(1)
}

// Goroutines acquire 1 to 3 of 5 permits at once; neither what they hold
// nor what the server says is held ever exceeds the capacity.
func TestRacingAcquiresNeverHoldMoreThanTheCapacity(t *testing.T) {
	const capacity = 5
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 60*time.Second)
	if _, _, err := c.SetCapacity(ctx, "race", capacity); err != nil {
		t.Fatal(err)
	}
	var holding, most int64
	stop := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		var high int64
		for {
			select {
			case <-stop:
				sampled <- high
				return
			default:
			}
			if cp, err := c.Capacity(ctx, "race"); err == nil && cp.Held > high {
				high = cp.Held
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s := c.NewSemaphore("race")
			for round := 0; round < 4; round++ {
				n := int64((g+round)%3 + 1)
				if err := s.Acquire(ctx, n); err != nil {
					errs <- err
					return
				}
				now := atomic.AddInt64(&holding, n)
				for {
					m := atomic.LoadInt64(&most)
					if now <= m || atomic.CompareAndSwapInt64(&most, m, now) {
						break
					}
				}
				time.Sleep(time.Duration(5+g%3*5) * time.Millisecond)
				atomic.AddInt64(&holding, -n)
				s.Release(n)
			}
		}(g)
	}
	wg.Wait()
	close(stop)
	high := <-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("held at most %d on the server, %d by the clients, of %d", high, most, capacity)
	if high > capacity || most > capacity {
		t.Fatalf("held %d (server) / %d (clients) of %d", high, most, capacity)
	}
}

// An Acquire that gives up while its request is slow on the wire leaves
// no permits behind: a grant the server made meanwhile is released.
func TestAnAcquireThatGivesUpOnASlowLinkLeavesNothingHeld(t *testing.T) {
	srv := startServer(t)
	direct := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	if _, _, err := direct.SetCapacity(ctx, "slow", 3); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, srv.addr)
	c, err := leasehold.New(p.url())
	if err != nil {
		t.Fatal(err)
	}
	p.delay(300 * time.Millisecond)
	s := c.NewSemaphore("slow")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := s.Acquire(short, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an acquire past its context: %v", err)
	}
	if s.Held() != 0 {
		t.Fatalf("held %d after giving up", s.Held())
	}
	// The abandoned request still reaches the server, then its undo does.
	time.Sleep(1500 * time.Millisecond)
	p.delay(0)
	eventually(t, "the server holds nothing of it", func() bool {
		cp, err := direct.Capacity(ctx, "slow")
		return err == nil && cp.Held == 0
	})
	// The whole capacity is there for the next one.
	if !direct.NewSemaphore("slow").TryAcquire(3) {
		t.Fatal("the capacity was not whole again")
	}
}
