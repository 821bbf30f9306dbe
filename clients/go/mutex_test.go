package leasehold_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// span is one critical section as its holder saw it.
type span struct {
	token      int64
	start, end int64 // unix nanoseconds
}

// checkSpans fails unless the spans, ordered by start, never overlap and
// carry strictly increasing fencing tokens.
func checkSpans(t *testing.T, spans []span) {
	t.Helper()
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for i := 1; i < len(spans); i++ {
		a, b := spans[i-1], spans[i]
		if b.start < a.end {
			t.Fatalf("two holders at once: %+v and %+v", a, b)
		}
		if b.token <= a.token {
			t.Fatalf("fencing token did not grow: %d then %d", a.token, b.token)
		}
	}
}

func holdOnce(ctx context.Context, m *leasehold.Mutex, inside *int32) (span, error) {
	if err := m.Lock(ctx); err != nil {
		return span{}, err
	}
	s := span{token: m.FencingToken(), start: time.Now().UnixNano()}
	if n := atomic.AddInt32(inside, 1); n != 1 {
		return s, fmt.Errorf("%d holders inside at once", n)
	}
	time.Sleep(2 * time.Millisecond)
	atomic.AddInt32(inside, -1)
	s.end = time.Now().UnixNano()
	return s, m.Unlock(ctx)
}

func TestMutexExcludesGoroutines(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	key := uniqueKey(t)
	ctx := ctxT(t, 60*time.Second)
	var (
		inside int32
		mu     sync.Mutex
		spans  []span
		wg     sync.WaitGroup
		errs   = make(chan error, 8)
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := c.NewMutex(key, leasehold.WithTTL(5*time.Second))
			for i := 0; i < 15; i++ {
				s, err := holdOnce(ctx, m, &inside)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				spans = append(spans, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(spans) != 120 {
		t.Fatalf("%d critical sections, want 120", len(spans))
	}
	checkSpans(t, spans)
}

// lockingChild is a process of TestMutexExcludesProcesses (run through
// TestMain): it takes the lock N times and prints each critical section as
// "SPAN token start end".
func lockingChild(url, key string, n int) error {
	c, err := leasehold.New(url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := c.NewMutex(key, leasehold.WithTTL(5*time.Second))
	var inside int32
	for i := 0; i < n; i++ {
		s, err := holdOnce(ctx, m, &inside)
		if err != nil {
			return err
		}
		check, err := c.CheckFencing(ctx, key, s.token)
		if err != nil {
			return err
		}
		if check.Current {
			return fmt.Errorf("fencing token %d still current after unlock", s.token)
		}
		fmt.Printf("SPAN %d %d %d\n", s.token, s.start, s.end)
	}
	return nil
}

func TestMutexExcludesProcesses(t *testing.T) {
	srv := startServer(t)
	key := uniqueKey(t)
	var (
		mu    sync.Mutex
		spans []span
		wg    sync.WaitGroup
	)
	for p := 0; p < 3; p++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "LEASEHOLD_HELPER_URL="+srv.url(), "LEASEHOLD_HELPER_KEY="+key,
			"LEASEHOLD_HELPER_N=20")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
				var s span
				if _, err := fmt.Sscanf(sc.Text(), "SPAN %d %d %d", &s.token, &s.start, &s.end); err == nil {
					mu.Lock()
					spans = append(spans, s)
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("a locking process failed: %v\n%s\n%s", err, strings.Join(lines, "\n"), stderr.String())
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(spans) != 60 {
		t.Fatalf("%d critical sections, want 60", len(spans))
	}
	checkSpans(t, spans)
}

func TestLostFiresBeforeAnotherIsGranted(t *testing.T) {
	srv := startServer(t)
	px := startProxy(t, srv.addr)
	far, err := leasehold.New(px.url(), leasehold.WithRetry(leasehold.RetryPolicy{Attempts: 2, First: 10 * time.Millisecond, Max: 50 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	near := srv.client(t)
	key := uniqueKey(t)
	ctx := ctxT(t, 30*time.Second)
	m := far.NewMutex(key, leasehold.WithTTL(time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	first := m.FencingToken()
	// Renewals go through while the proxy lets them.
	time.Sleep(1500 * time.Millisecond)
	select {
	case <-m.Lost():
		t.Fatal("lost while the server was reachable")
	default:
	}
	px.cut()
	var lostAt time.Time
	lostSeen := make(chan struct{})
	go func() { <-m.Lost(); lostAt = time.Now(); close(lostSeen) }()
	l, err := near.Acquire(ctx, key, leasehold.WithWait(10*time.Second), leasehold.WithTTL(5*time.Second))
	grantedAt := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	<-lostSeen
	if !lostAt.Before(grantedAt) {
		t.Fatalf("Lost fired at %v, after another was granted the key at %v", lostAt, grantedAt)
	}
	if l.FencingToken <= first {
		t.Fatalf("the new lease's fencing token %d is not above %d", l.FencingToken, first)
	}
	t.Logf("Lost fired %v before the key was granted to another", grantedAt.Sub(lostAt))
	if err := m.Unlock(ctx); err != nil && !leasehold.IsUnreachable(err) {
		t.Fatalf("unlock of a lost lease: %v", err)
	}
}

func TestCancelledLockLeavesNoWaiterGranted(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 60*time.Second)
	for i := 0; i < 12; i++ {
		key := fmt.Sprintf("%s/%d", uniqueKey(t), i)
		holder, err := c.Acquire(ctx, key, leasehold.WithTTL(30*time.Second), leasehold.WithHolder("first"))
		if err != nil {
			t.Fatal(err)
		}
		// The release and the waiter's give-up race: some rounds the
		// server grants the waiter just as it stops waiting.
		giveUp := 150*time.Millisecond + time.Duration(i%4)*time.Millisecond
		waitCtx, cancel := context.WithTimeout(ctx, giveUp)
		waiter := c.NewMutex(key, leasehold.WithTTL(30*time.Second), leasehold.WithHolder("waiter"))
		done := make(chan error, 1)
		go func() { done <- waiter.Lock(waitCtx) }()
		time.Sleep(giveUp - time.Duration(i%3)*time.Millisecond)
		if err := c.Release(ctx, key, holder.Token); err != nil {
			t.Fatal(err)
		}
		err = <-done
		cancel()
		if err == nil {
			// Granted in time: a legitimate lock, unlocked here.
			if err := waiter.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: %v", i, err)
		}
		// Nobody holds the key for long: a grant made as the waiter gave
		// up is released in the background.
		deadline := time.Now().Add(3 * time.Second)
		for {
			l, err := c.Inspect(ctx, key)
			if leasehold.IsNotFound(err) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %s still holds the key after the waiter gave up", i, l.Holder)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestHeldKeyAnswersTyped409WithHolder(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	key := uniqueKey(t)
	if _, err := c.Acquire(ctx, key, leasehold.WithHolder("alpha"), leasehold.WithTTL(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	m := c.NewMutex(key)
	err := m.TryLock(ctx)
	var p *leasehold.Problem
	if !errors.As(err, &p) {
		t.Fatalf("TryLock of a held key: %v, want a *Problem", err)
	}
	if p.Status != 409 || p.Type != leasehold.TypeLockHeld || !leasehold.IsHeld(err) {
		t.Fatalf("problem %+v", p)
	}
	if p.Holder != "alpha" || p.ExpiresAt == nil || p.Key != key {
		t.Fatalf("the 409 names holder %q, expires %v, key %q", p.Holder, p.ExpiresAt, p.Key)
	}
	if p.RetryAfter <= 0 {
		t.Fatalf("no Retry-After on a conflict that clears by itself")
	}
	if m.FencingToken() != 0 || m.Err() != nil || m.Lease() != nil {
		t.Fatal("a refused TryLock left state behind")
	}
	select {
	case <-m.Lost():
		t.Fatal("the Lost channel of the next lease is closed after a refused TryLock")
	default:
	}
}

func TestKeyedMutexAndIdempotentReplay(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	km := c.NewKeyedMutex("svc/", leasehold.WithTTL(5*time.Second))
	a, err := km.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := km.Lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := km.TryLock(ctx, "a"); !leasehold.IsHeld(err) {
		t.Fatalf("second lock of svc/a: %v", err)
	}
	if b.FencingToken() <= a.FencingToken() {
		t.Fatal("fencing tokens do not grow across keys")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, leasehold.ErrNotLocked) {
		t.Fatalf("second unlock: %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListLocks(ctx, "svc/", leasehold.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("locks left after unlock: %v %v", page, err)
	}
	// A retried grant with the same Idempotency-Key is the same lease.
	key := uniqueKey(t)
	l1, err := c.Acquire(ctx, key, leasehold.WithIdempotencyKey("k-1"))
	if err != nil {
		t.Fatal(err)
	}
	l2, err := c.Acquire(ctx, key, leasehold.WithIdempotencyKey("k-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !l2.Replayed || l2.Token != l1.Token || l2.FencingToken != l1.FencingToken {
		t.Fatalf("replay %+v of %+v", l2, l1)
	}
	check, err := c.CheckFencing(ctx, key, l1.FencingToken)
	if err != nil || !check.Current {
		t.Fatalf("fencing check of the live lease: %+v %v", check, err)
	}
	if _, err := c.Renew(ctx, key, l1.Token, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, key, l1.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Renew(ctx, key, l1.Token, 0); !leasehold.IsLeaseLost(err) {
		t.Fatalf("renew after release: %v", err)
	}
}

func TestAGrantWhoseAnswerIsLostIsRetriedWithItsIdempotencyKey(t *testing.T) {
	srv := startServer(t)
	px := startProxy(t, srv.addr)
	// No idle connection to reuse: each attempt dials anew through the proxy.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	c, err := leasehold.New(px.url(), leasehold.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 20*time.Second)
	key := uniqueKey(t)
	px.loseAnswers(1)
	l, err := c.Acquire(ctx, key, leasehold.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !l.Replayed {
		t.Fatal("the retry was granted a second lease instead of the first one's replay")
	}
	held, err := srv.client(t).Inspect(ctx, key)
	if err != nil || held.FencingToken != l.FencingToken {
		t.Fatalf("the key holds %+v (%v), the client has fencing token %d", held, err, l.FencingToken)
	}
	// The same for a reservation.
	if _, err := c.PutPool(ctx, "lost", "10.0.0.0/16", nil); err != nil {
		t.Fatal(err)
	}
	px.loseAnswers(1)
	r, err := c.Reserve(ctx, "lost", 24)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListReservations(ctx, "lost", leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Replayed || len(page.Items) != 1 || page.Items[0].ID != r.ID {
		t.Fatalf("after a lost answer: replayed %v, %d reservations", r.Replayed, len(page.Items))
	}
	// And a Mutex's Lock: one lease, the one it holds.
	px.loseAnswers(1)
	m := c.NewMutex(key+"/m", leasehold.WithTTL(10*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if !m.Lease().Replayed {
		t.Fatal("Lock after a lost answer took a second lease")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAZeroMutexOrReservationIsAnErrorNotAPanic(t *testing.T) {
	ctx := ctxT(t, 5*time.Second)
	var m leasehold.Mutex
	if err := m.Lock(ctx); err == nil {
		t.Fatal("Lock of a Mutex made without a client")
	}
	if err := m.Unlock(ctx); !errors.Is(err, leasehold.ErrNotLocked) {
		t.Fatalf("Unlock of a zero Mutex: %v", err)
	}
	c, err := leasehold.New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Confirm(ctx, nil); err == nil {
		t.Fatal("Confirm(nil)")
	}
	if err := c.ReleaseReservation(ctx, nil); err == nil {
		t.Fatal("ReleaseReservation(nil)")
	}
	if _, err := c.RenewReservation(ctx, nil, 0); err == nil {
		t.Fatal("RenewReservation(nil)")
	}
}
