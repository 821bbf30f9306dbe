package leasehold_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// whenClosed records when ch closes.
func whenClosed(ch <-chan struct{}) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() { <-ch; out <- time.Now() }()
	return out
}

// The holder's link fails while the server is up for everyone else (its
// connections stall, or are refused), or the server hangs (SIGSTOP): Lost
// closes, with ErrExpired, at least about the margin before the lease's end
// on the server, and before a client waiting on the server is granted it.
func TestTheHolderCutOffIsToldBeforeAnotherIsGranted(t *testing.T) {
	for _, fault := range []string{"stall", "refuse", "sigstop"} {
		fault := fault
		t.Run(fault, func(t *testing.T) { holderCutOff(t, fault) })
	}
}

func holderCutOff(t *testing.T, fault string) {
	const ttl = 3 * time.Second // margin 150 ms: half of it is room for a loaded machine's timers
	margin := marginOf(ttl)
	srv := startServer(t)
	px := startProxy(t, srv.addr)
	far, err := leasehold.New(px.url(), leasehold.WithHolder("far"))
	if err != nil {
		t.Fatal(err)
	}
	near := srv.client(t, leasehold.WithHolder("near"))
	ctx := ctxT(t, 30*time.Second)
	key := uniqueKey(t)
	m := far.NewMutex(key, leasehold.WithTTL(ttl))
	lostAt := whenClosed(m.Lost())
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl * 3 / 4) // renewals go through while the link lets them
	stillHeld(ctx, t, near, m, time.Now())

	faultAt := time.Now()
	switch fault {
	case "stall":
		px.stall()
	case "refuse":
		px.refuse()
	case "sigstop":
		srv.pause()
		t.Cleanup(srv.resume)
	}
	// The server heard the holder last then: the lease lives on the server
	// until that plus its TTL at least.
	serverEnd := px.lastUp(faultAt).Add(ttl)
	grantedAt := make(chan time.Time, 1)
	go func() {
		if _, err := near.Acquire(ctx, key, leasehold.WithWait(20*time.Second), leasehold.WithTTL(ttl)); err != nil {
			t.Error(err)
			close(grantedAt)
			return
		}
		grantedAt <- time.Now()
	}()
	var lost time.Time
	select {
	case lost = <-lostAt:
	case <-time.After(2 * ttl):
		t.Fatalf("Lost still open %v after the %s", 2*ttl, fault)
	}
	if fault == "sigstop" {
		// The hung server comes back once the lease has certainly ended.
		time.Sleep(time.Until(serverEnd.Add(200 * time.Millisecond)))
		srv.resume()
	}
	granted, ok := <-grantedAt
	if !ok {
		t.FailNow()
	}
	lead, ahead := serverEnd.Sub(lost), granted.Sub(lost)
	t.Logf("%s: Lost fired %v after the fault, %v before the lease's end on the server (at least; margin %v), %v before another was granted the key",
		fault, lost.Sub(faultAt).Round(time.Millisecond), lead.Round(time.Millisecond), margin, ahead.Round(time.Millisecond))
	if !errors.Is(m.Err(), leasehold.ErrExpired) {
		t.Fatalf("Err: %v, want ErrExpired", m.Err())
	}
	if lead < margin/2 {
		t.Fatalf("Lost fired only %v before the lease's end on the server; the margin is %v", lead, margin)
	}
	if ahead < margin/2 {
		t.Fatalf("Lost fired only %v before another was granted the key; the margin is %v", ahead, margin)
	}
	// Unlock after the loss: bounded, whatever the link does.
	start := time.Now()
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock after a loss: %v", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("Unlock after a loss took %v", d)
	}
	t.Logf("%s: Unlock after the loss returned in %v", fault, time.Since(start).Round(time.Millisecond))
}

// A hung server (SIGSTOP): once the loss is known, Unlock, Resign, Leave and
// Close return within their stated bound (1 s), and before it is known,
// Unlock waits no longer than the lease's own life.
func TestOnAHungServerUnlockIsBounded(t *testing.T) {
	const ttl = time.Second
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	m := c.NewMutex(uniqueKey(t)+"/m", leasehold.WithTTL(ttl))
	e := c.NewElection(uniqueKey(t)+"/e", leasehold.WithTTL(ttl))
	early := c.NewMutex(uniqueKey(t)+"/early", leasehold.WithTTL(ttl))
	s, err := c.NewSession(ctx, leasehold.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	bound := c.NewMutex(uniqueKey(t)+"/bound", leasehold.WithSession(s))
	for _, lock := range []func(context.Context) error{m.Lock, e.Campaign, early.Lock, bound.Lock} {
		if err := lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateGroup(ctx, "hung", nil); err != nil {
		t.Fatal(err)
	}
	member, err := c.Join(ctx, "hung", "m1", leasehold.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	srv.pause()
	t.Cleanup(srv.resume)

	start := time.Now()
	if err := early.Unlock(context.Background()); err == nil {
		t.Fatal("Unlock on a hung server, before the loss, says it released the lease")
	}
	took := time.Since(start)
	t.Logf("Unlock on the hung server before the loss was known returned in %v (the lease's life: %v)", took.Round(time.Millisecond), ttl)
	if took > ttl+time.Second+500*time.Millisecond {
		t.Fatalf("Unlock before the loss took %v, more than the lease's life plus 1 s", took)
	}

	for _, ch := range []<-chan struct{}{m.Lost(), e.Lost(), s.Done(), bound.Lost(), member.Lost()} {
		select {
		case <-ch:
		case <-time.After(2 * ttl):
			t.Fatal("still not lost two TTLs into the hang")
		}
	}
	if !errors.Is(bound.Err(), leasehold.ErrSessionEnded) || !errors.Is(s.Err(), leasehold.ErrExpired) {
		t.Fatalf("a session-bound lock ended with %v, its session with %v", bound.Err(), s.Err())
	}
	for _, end := range []struct {
		name string
		f    func(context.Context) error
	}{{"Unlock", m.Unlock}, {"Resign", e.Resign}, {"Unlock of a session-bound lock", bound.Unlock},
		{"Close", s.Close}, {"Leave", member.Leave}} {
		start := time.Now()
		if err := end.f(context.Background()); err != nil {
			t.Errorf("%s after a known loss: %v, want nil (the loss was told already)", end.name, err)
		}
		took := time.Since(start)
		t.Logf("%s after a known loss on the hung server returned in %v", end.name, took.Round(time.Millisecond))
		if took > 1500*time.Millisecond {
			t.Fatalf("%s after a known loss took %v; the bound is 1 s", end.name, took)
		}
	}
}

// The server refuses a renewal: the lease was force-released (409
// lease-lost), its session was force-closed, or the renewal is forbidden
// (403). Lost closes at the next renewal with the reason, and the server's
// answer is reachable with errors.As.
func TestARefusedRenewalSaysWhy(t *testing.T) {
	const ttl = 900 * time.Millisecond
	srv := startServer(t)
	ctx := ctxT(t, 30*time.Second)
	admin := srv.client(t)

	t.Run("force-released", func(t *testing.T) {
		m := srv.client(t).NewMutex(uniqueKey(t), leasehold.WithTTL(ttl))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		lostAt := whenClosed(m.Lost())
		at := time.Now()
		if err := admin.ForceRelease(ctx, m.Key()); err != nil {
			t.Fatal(err)
		}
		told(t, lostAt, at, ttl)
		var p *leasehold.Problem
		if !errors.Is(m.Err(), leasehold.ErrReleasedElsewhere) || !errors.As(m.Err(), &p) || p.Status != 409 {
			t.Fatalf("Err: %v", m.Err())
		}
		start := time.Now()
		if err := m.Unlock(context.Background()); err != nil || time.Since(start) > 50*time.Millisecond {
			t.Fatalf("Unlock of a lease the server said is gone: %v after %v", err, time.Since(start))
		}
	})

	t.Run("session force-closed", func(t *testing.T) {
		c := srv.client(t)
		s, err := c.NewSession(ctx, leasehold.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		m := c.NewMutex(uniqueKey(t), leasehold.WithSession(s))
		e := c.NewElection(uniqueKey(t)+"/office", leasehold.WithSession(s))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		lostAt, resignedAt := whenClosed(m.Lost()), whenClosed(e.Lost())
		at := time.Now()
		if err := admin.ForceCloseSession(ctx, s.ID()); err != nil {
			t.Fatal(err)
		}
		told(t, lostAt, at, ttl)
		told(t, resignedAt, at, ttl)
		for _, err := range []error{m.Err(), e.Err()} {
			var p *leasehold.Problem
			if !errors.Is(err, leasehold.ErrSessionEnded) || errors.Is(err, leasehold.ErrReleasedElsewhere) ||
				!errors.As(err, &p) || p.Status != 409 {
				t.Fatalf("Err of a lease bound to a force-closed session: %v", err)
			}
		}
		if !errors.Is(s.Err(), leasehold.ErrReleasedElsewhere) {
			t.Fatalf("the session's Err: %v", s.Err())
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		// An HTTP proxy that answers 403 to renewals once told to.
		target, _ := url.Parse(srv.url())
		rp := httputil.NewSingleHostReverseProxy(target)
		var forbid atomic.Bool
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if forbid.Load() && strings.HasSuffix(r.URL.Path, "/renew") {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"type":"/problems/forbidden","title":"Forbidden","status":403,"detail":"the token's scope does not cover this key"}`))
				return
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		c, err := leasehold.New(front.URL)
		if err != nil {
			t.Fatal(err)
		}
		m := c.NewMutex(uniqueKey(t), leasehold.WithTTL(ttl))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		lostAt := whenClosed(m.Lost())
		at := time.Now()
		forbid.Store(true)
		told(t, lostAt, at, ttl)
		var p *leasehold.Problem
		if !errors.Is(m.Err(), leasehold.ErrRefused) || !errors.As(m.Err(), &p) || p.Status != 403 {
			t.Fatalf("Err: %v", m.Err())
		}
		_ = m.Unlock(ctx)
	})
}

// told fails unless lostAt fires within a renewal interval (TTL/3) and a
// generous round trip of at.
func told(t *testing.T, lostAt <-chan time.Time, at time.Time, ttl time.Duration) {
	t.Helper()
	select {
	case lost := <-lostAt:
		t.Logf("told %v after the refusal began (renewals every %v)", lost.Sub(at).Round(time.Millisecond), ttl/3)
	case <-time.After(ttl/3 + 500*time.Millisecond):
		t.Fatalf("not told %v after the refusal began", ttl/3+500*time.Millisecond)
	}
}
