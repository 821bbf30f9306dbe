package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// The default lost margin of a TTL (TTL/20, 50 ms to 2 s), as the README
// states it.
func marginOf(ttl time.Duration) time.Duration {
	m := ttl / 20
	if m < 50*time.Millisecond {
		m = 50 * time.Millisecond
	}
	if m > 2*time.Second {
		m = 2 * time.Second
	}
	return m
}

// stillHeld fails unless m's lease is live: Lost open, Err nil, and the
// server showing m's fencing token. It returns the life the server has left.
func stillHeld(ctx context.Context, t *testing.T, c *leasehold.Client, m *leasehold.Mutex, since time.Time) time.Duration {
	t.Helper()
	select {
	case <-m.Lost():
		t.Fatalf("reported lost %v after its grant (%v) while held", time.Since(since).Round(time.Millisecond), m.Err())
	default:
	}
	if err := m.Err(); err != nil {
		t.Fatalf("Err while held: %v", err)
	}
	l, err := c.Inspect(ctx, m.Key())
	if err != nil {
		t.Fatalf("the server does not show the lease %v after its grant: %v", time.Since(since).Round(time.Millisecond), err)
	}
	if l.FencingToken != m.FencingToken() {
		t.Fatalf("the server shows fencing token %d, the mutex holds %d", l.FencingToken, m.FencingToken())
	}
	return l.ExpiresIn()
}

// A Lock that waited half, one and two TTLs for its key keeps its lease for
// five TTLs after the grant: not reported lost, renewed, shown by the server.
// The waiter talks through a link that adds 20 ms each way.
func TestALockThatWaitedKeepsItsLease(t *testing.T) {
	const ttl = 2 * time.Second
	for _, f := range []float64{0.5, 1, 2} {
		f := f
		t.Run(fmt.Sprintf("waited %.1f TTL", f), func(t *testing.T) {
			t.Parallel()
			srv := startServer(t)
			px := startProxy(t, srv.addr)
			px.delay(20 * time.Millisecond)
			c := srv.client(t)
			far, err := leasehold.New(px.url(), leasehold.WithHolder("waiter"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 60*time.Second)
			key := uniqueKey(t)
			first, err := c.Acquire(ctx, key, leasehold.WithTTL(time.Minute), leasehold.WithHolder("first"))
			if err != nil {
				t.Fatal(err)
			}
			wait := time.Duration(f * float64(ttl))
			go func() {
				time.Sleep(wait)
				_ = c.Release(ctx, key, first.Token)
			}()
			m := far.NewMutex(key, leasehold.WithTTL(ttl))
			start := time.Now()
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			granted := time.Now()
			if granted.Sub(start) < wait*9/10 || m.Lease().WaitedMS < wait.Milliseconds()*9/10 {
				t.Fatalf("Lock returned after %v (waited_ms %d), before the key was released at %v",
					granted.Sub(start), m.Lease().WaitedMS, wait)
			}
			// The grant's own deadline counts from the grant, not from when
			// the waiting began, and falls before the server's end.
			l, err := c.Inspect(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			serverEnd := time.Now().Add(l.ExpiresIn())
			deadline := m.Lease().Deadline()
			if deadline.After(serverEnd) || deadline.Before(granted.Add(ttl-250*time.Millisecond)) {
				t.Fatalf("the grant's local deadline is %v after its grant; the server's end is %v after it",
					deadline.Sub(granted), serverEnd.Sub(granted))
			}
			renewals := metric(t, srv.url(), "leasehold_lock_renewals_total")
			least := ttl
			for i := 0; i < 5; i++ {
				time.Sleep(ttl)
				if left := stillHeld(ctx, t, c, m, granted); left < least {
					least = left
				}
			}
			renewals = metric(t, srv.url(), "leasehold_lock_renewals_total") - renewals
			if renewals < 10 {
				t.Fatalf("%.0f renewals in 5 TTLs", renewals)
			}
			t.Logf("waited %v (%.1f TTL, waited_ms %d): local deadline %v after the grant (the server's end %v after it); held 5 TTLs, %.0f renewals, the server's remaining life at least %v at each look",
				granted.Sub(start).Round(time.Millisecond), f, m.Lease().WaitedMS, deadline.Sub(granted).Round(time.Millisecond),
				serverEnd.Sub(granted).Round(time.Millisecond), renewals, least)
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(m.Err(), leasehold.ErrUnlocked) {
				t.Fatalf("Err after Unlock: %v", m.Err())
			}
		})
	}
}

type win struct {
	name string
	at   time.Time
	err  error
}

// Three candidates: the leader resigns, the next (who has campaigned longer
// than a TTL) leads within a round trip plus the margin, is not lost on
// winning, and hands over to the third the same way.
func TestElectionHandsOverWithTheOfficeEmptyNoLongerThanARoundTripPlusTheMargin(t *testing.T) {
	const ttl = 2 * time.Second
	margin := marginOf(ttl)
	srv := startServer(t)
	ctx := ctxT(t, 60*time.Second)
	observer := srv.client(t)
	elections := map[string]*leasehold.Election{}
	for _, name := range []string{"a", "b", "c"} {
		elections[name] = srv.client(t, leasehold.WithHolder(name)).NewElection("office", leasehold.WithTTL(ttl))
	}
	if err := elections["a"].Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	wins := make(chan win, 2)
	for _, name := range []string{"b", "c"} {
		name := name
		go func() {
			err := elections[name].Campaign(ctx)
			wins <- win{name, time.Now(), err}
		}()
		time.Sleep(100 * time.Millisecond) // b queues first
	}
	leader := "a"
	for _, next := range []string{"b", "c"} {
		time.Sleep(3 * time.Second) // the waiting campaigns outlast a TTL
		resigned := time.Now()
		if err := elections[leader].Resign(ctx); err != nil {
			t.Fatal(err)
		}
		rtt := time.Since(resigned)
		var w win
		select {
		case w = <-wins:
		case <-time.After(2 * ttl):
			t.Fatalf("nobody led %v after %s resigned", 2*ttl, leader)
		}
		if w.err != nil || w.name != next {
			t.Fatalf("%s won (%v), want %s", w.name, w.err, next)
		}
		empty := w.at.Sub(resigned)
		t.Logf("%s resigned, %s led: office empty %v (the resign's round trip %v, margin %v)",
			leader, next, empty.Round(100*time.Microsecond), rtt.Round(100*time.Microsecond), margin)
		if empty > rtt+margin {
			t.Fatalf("office empty %v, more than a round trip (%v) plus the margin (%v)", empty, rtt, margin)
		}
		e := elections[next]
		select {
		case <-e.Lost():
			t.Fatalf("%s lost its office %v after winning: %v", next, time.Since(w.at), e.Err())
		case <-time.After(ttl * 3 / 2):
		}
		l, err := observer.NewElection("office").Leader(ctx)
		if err != nil || l.Holder != next || l.FencingToken != e.FencingToken() {
			t.Fatalf("leader %+v (%v) %v after %s won", l, err, ttl*3/2, next)
		}
		leader = next
	}
	if err := elections[leader].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := observer.NewElection("office").Leader(ctx); !errors.Is(err, leasehold.ErrNoLeader) {
		t.Fatalf("leader after the last resigned: %v", err)
	}
}

// An election rides on a session, as etcd's concurrency.NewElection does:
// no keep-alive of its own; leadership ends with the session.
func TestAnElectionRidesOnASession(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t, leasehold.WithHolder("s-leader"))
	ctx := ctxT(t, 30*time.Second)
	s, err := c.NewSession(ctx, leasehold.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	e := c.NewElection("office/session", leasehold.WithSession(s))
	lost := e.Lost() // taken before Campaign: the leadership Campaign wins
	if err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	if e.Lost() != lost {
		t.Fatal("Campaign gave Lost a new channel")
	}
	renewals := metric(t, srv.url(), "leasehold_lock_renewals_total")
	time.Sleep(2500 * time.Millisecond) // the session's keep-alive outlives its TTL
	l, err := e.Leader(ctx)
	if err != nil || l.Session != s.ID() || l.FencingToken != e.FencingToken() {
		t.Fatalf("leader %+v (%v), want one bound to session %s", l, err, s.ID())
	}
	if n := metric(t, srv.url(), "leasehold_lock_renewals_total") - renewals; n != 0 {
		t.Fatalf("a session-bound leader renewed its own lease %.0f times", n)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(time.Second):
		t.Fatal("leadership outlived its session")
	}
	if !errors.Is(e.Err(), leasehold.ErrSessionEnded) || errors.Is(e.Err(), leasehold.ErrUnlocked) {
		t.Fatalf("Err after the session closed: %v", e.Err())
	}
	if !errors.Is(s.Err(), leasehold.ErrUnlocked) {
		t.Fatalf("the session's Err after Close: %v", s.Err())
	}
	if _, err := e.Leader(ctx); !errors.Is(err, leasehold.ErrNoLeader) {
		t.Fatalf("leader after the session closed: %v", err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatalf("Resign after the session ended: %v", err)
	}
}
