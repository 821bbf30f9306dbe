package leasehold_test

import (
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func TestSessionLeasesListsWhatTheSessionWouldRelease(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	s, err := c.NewSession(ctx, leasehold.WithTTL(time.Minute), leasehold.WithHolder("ctl"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	b, err := c.Acquire(ctx, "held/b", leasehold.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "held/a", leasehold.WithSession(s)); err != nil {
		t.Fatal(err)
	}
	// The same holder's lock with a TTL of its own is not the session's.
	own, err := c.Acquire(ctx, "held/c", leasehold.WithHolder("ctl"), leasehold.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(ctx, "held/c", own.Token)
	if _, err := c.PutPool(ctx, "nets", "10.0.0.0/16", nil); err != nil {
		t.Fatal(err)
	}
	r, err := c.Reserve(ctx, "nets", 24, leasehold.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	confirmed, err := c.Reserve(ctx, "nets", 24, leasehold.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Confirm(ctx, confirmed); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateGroup(ctx, "workers", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, "workers", "w1", leasehold.WithSession(s)); err != nil {
		t.Fatal(err)
	}

	got, err := c.SessionLeases(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Locks) != 2 || got.Locks[0].Key != "held/a" || got.Locks[1].Key != "held/b" {
		t.Fatalf("locks %+v", got.Locks)
	}
	for _, l := range got.Locks {
		if l.Session != s.ID() || l.Token != "" || l.ExpiresAt.IsZero() {
			t.Fatalf("a bound lock %+v", l)
		}
	}
	if len(got.Reservations) != 1 || got.Reservations[0].ID != r.ID || got.Reservations[0].State != leasehold.StateReserved {
		t.Fatalf("reservations %+v (the confirmed one is no longer bound)", got.Reservations)
	}
	if len(got.Members) != 1 || got.Members[0].Group != "workers" || got.Members[0].Member != "w1" || got.Members[0].Session != s.ID() {
		t.Fatalf("members %+v", got.Members)
	}
	if got.Truncated || got.Revision <= 0 {
		t.Fatalf("truncated %v, revision %d", got.Truncated, got.Revision)
	}

	// A released lock is gone from it at once.
	if err := c.Release(ctx, "held/b", b.Token); err != nil {
		t.Fatal(err)
	}
	got, err = c.SessionLeases(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Locks) != 1 || got.Locks[0].Key != "held/a" {
		t.Fatalf("after a release: %+v", got.Locks)
	}
	// An ended session is not found.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SessionLeases(ctx, s.ID()); !leasehold.IsNotFound(err) {
		t.Fatalf("an ended session: %v", err)
	}
}

func TestSessionLeasesOfAnotherTokenAreNotFound(t *testing.T) {
	srv, secrets := startServerWithTokens(t,
		[]string{"--name", "a", "--lock-prefix", "a/"}, []string{"--name", "b", "--lock-prefix", "b/"})
	a, b := secrets[0], secrets[1]
	ctx := ctxT(t, 30*time.Second)
	ca := srv.client(t, leasehold.WithToken(a))
	s, err := ca.NewSession(ctx, leasehold.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if _, err := ca.Acquire(ctx, "a/x", leasehold.WithSession(s)); err != nil {
		t.Fatal(err)
	}
	if got, err := ca.SessionLeases(ctx, s.ID()); err != nil || len(got.Locks) != 1 {
		t.Fatalf("its opener reads %+v, %v", got, err)
	}
	_, err = srv.client(t, leasehold.WithToken(b)).SessionLeases(ctx, s.ID())
	if p := leasehold.AsProblem(err); p == nil || p.Status != 404 || p.Type != leasehold.TypeSessionNotFound {
		t.Fatalf("another token's session: %v", err)
	}
}
