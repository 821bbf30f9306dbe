package leasehold_test

import (
	"context"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// statusUntil polls the client's status until its counts are want.
func statusUntil(t *testing.T, c *leasehold.Client, want leasehold.StatusCounts) *leasehold.Status {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	var s *leasehold.Status
	for ctx.Err() == nil {
		var err error
		if s, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if s.Counts == want {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the status counts %+v, want %+v", s.Counts, want)
	return nil
}

func TestStatusCountsWhatIsHeldAndNamesTheDatabase(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	first := statusUntil(t, c, leasehold.StatusCounts{})
	if !first.Caller.Admin || first.Database.Backend != "sqlite" || first.Database.Postgres != nil ||
		first.Database.SQLite == nil || first.Database.SQLite.FileBytes <= 0 {
		t.Fatalf("the first status %+v", first)
	}
	held, err := c.Acquire(ctx, "st/a", leasehold.WithHolder("owner"), leasehold.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(ctx, leasehold.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "st/b", leasehold.WithSession(s)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateGroup(ctx, "st/g", nil); err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "st/g", "m1", leasehold.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutPool(ctx, "st-pool", "10.0.0.0/16", nil); err != nil {
		t.Fatal(err)
	}
	r, err := c.Reserve(ctx, "st-pool", 24, leasehold.WithHolder("h"))
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	granted := make(chan *leasehold.Lease, 1)
	go func() {
		l, err := c.Acquire(waitCtx, "st/a", leasehold.WithHolder("waiter"),
			leasehold.WithTTL(time.Minute), leasehold.WithWait(20*time.Second))
		if err == nil {
			granted <- l
		}
	}()
	busy := statusUntil(t, c, leasehold.StatusCounts{
		Locks: 2, Waiters: 1, Sessions: 1, Groups: 1, Members: 1, Reservations: 1,
	})
	if busy.Revision <= first.Revision {
		t.Fatalf("the revision went from %d to %d", first.Revision, busy.Revision)
	}
	if err := c.Release(ctx, held.Key, held.Token); err != nil {
		t.Fatal(err)
	}
	next := <-granted
	statusUntil(t, c, leasehold.StatusCounts{
		Locks: 2, Sessions: 1, Groups: 1, Members: 1, Reservations: 1,
	})
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, next.Key, next.Token); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseReservation(ctx, r); err != nil {
		t.Fatal(err)
	}
	last := statusUntil(t, c, leasehold.StatusCounts{Groups: 1})
	// The server checkpoints its log every 100 ms while writes come in.
	for last.Database.SQLite.LastCheckpointAt == nil && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		if last, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
	}
	at := last.Database.SQLite.LastCheckpointAt
	if at == nil || time.Since(*at) > time.Minute || last.Database.SQLite.WALBytes <= 0 {
		t.Fatalf("the database %+v, checkpointed at %v", last.Database.SQLite, at)
	}
}

func TestStatusOfAScopedTokenCountsItsOwnAndSaysItIsNoAdmin(t *testing.T) {
	srv, secrets := startServerWithTokens(t,
		[]string{"--name", "mine", "--lock-prefix", "mine/", "--pool", "mine"},
		[]string{"--name", "root", "--lock-prefix", "", "--pool", "*", "--admin"})
	mine := srv.client(t, leasehold.WithToken(secrets[0]))
	root := srv.client(t, leasehold.WithToken(secrets[1]))
	ctx := ctxT(t, 30*time.Second)
	for _, key := range []string{"mine/a", "other/a", "other/b"} {
		if _, err := root.Acquire(ctx, key, leasehold.WithTTL(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	s := statusUntil(t, mine, leasehold.StatusCounts{Locks: 1})
	if s.Caller.Admin {
		t.Fatalf("a token without admin: %+v", s.Caller)
	}
	if s := statusUntil(t, root, leasehold.StatusCounts{Locks: 3}); !s.Caller.Admin {
		t.Fatalf("the admin token: %+v", s.Caller)
	}
	if _, err := srv.client(t).Status(ctx); leasehold.AsProblem(err) == nil || leasehold.AsProblem(err).Status != 401 {
		t.Fatalf("without a token: %v", err)
	}
}
