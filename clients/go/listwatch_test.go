package leasehold_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// churn joins and leaves member ids of its own, reusing them, with a TTL of
// their own or bound to a session, and counts what it changed.
type churn struct {
	joins, updates, leaves atomic.Int64
}

func (ch *churn) run(ctx context.Context, t *testing.T, c *leasehold.Client, group string, worker, rounds int) {
	for i := 0; i < rounds; i++ {
		member := fmt.Sprintf("w%d-m%d", worker, i%3)
		var s *leasehold.Session
		opts := []leasehold.Option{leasehold.WithCapabilities(map[string]int{"round": i})}
		if i%2 == 1 {
			var err error
			if s, err = c.NewSession(ctx, leasehold.WithTTL(5*time.Second)); err != nil {
				t.Error(err)
				return
			}
			opts = append(opts, leasehold.WithSession(s))
		} else {
			opts = append(opts, leasehold.WithTTL(5*time.Second))
		}
		m, err := c.Join(ctx, group, member, opts...)
		if err != nil {
			t.Errorf("join %s: %v", member, err)
			return
		}
		ch.joins.Add(1)
		if i%3 == 0 {
			if err := m.UpdateCapabilities(ctx, map[string]int{"round": -i}); err != nil {
				t.Error(err)
				return
			}
			ch.updates.Add(1)
		}
		if s != nil {
			err = s.Close(ctx)
		} else {
			err = m.Leave(ctx)
		}
		if err != nil {
			t.Errorf("leave %s: %v", member, err)
			return
		}
		ch.leaves.Add(1)
	}
}

// listAll lists every member of group in one page.
func listAll(ctx context.Context, t *testing.T, c *leasehold.Client, group string) (map[string]bool, int64) {
	t.Helper()
	page, err := c.ListMembers(ctx, group, leasehold.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if page.NextCursor != nil {
		t.Fatal("more than one page")
	}
	set := map[string]bool{}
	for _, m := range page.Items {
		set[m.Member] = true
	}
	return set, page.Revision
}

// apply plays one member event onto a listing, failing on a change the
// listing already showed (seen twice) or one that contradicts it (missed).
func apply(t *testing.T, set map[string]bool, e leasehold.Event) {
	t.Helper()
	switch e.Type {
	case leasehold.EventMemberJoined:
		if set[e.Member] {
			t.Fatalf("revision %d: %s joined, but it is in the listing already", e.Revision, e.Member)
		}
		set[e.Member] = true
	case leasehold.EventMemberUpdated:
		if !set[e.Member] {
			t.Fatalf("revision %d: %s updated, but it is not in the listing", e.Revision, e.Member)
		}
	case leasehold.EventMemberLeft:
		if !set[e.Member] {
			t.Fatalf("revision %d: %s left, but it is not in the listing", e.Revision, e.Member)
		}
		delete(set, e.Member)
	default:
		t.Fatalf("revision %d: unexpected event %s in a group watch", e.Revision, e.Type)
	}
}

func TestListThenWatchMembersUnderConcurrentChurn(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			listThenWatchUnderChurn(t, stream)
		})
	}
}

func listThenWatchUnderChurn(t *testing.T, stream bool) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 60*time.Second)
	const group, workers, rounds = "fleet", 6, 12
	if _, err := c.CreateGroup(ctx, group, nil); err != nil {
		t.Fatal(err)
	}
	// Members that stay throughout, and events of another group that the
	// group's watch must not show.
	for i := 0; i < 3; i++ {
		if _, err := c.Join(ctx, group, fmt.Sprintf("stay-%d", i), leasehold.WithTTL(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateGroup(ctx, "elsewhere", nil); err != nil {
		t.Fatal(err)
	}

	before, beforeRev := listAll(ctx, t, c, group)
	fromStart := c.Watch(ctx, leasehold.WatchOptions{Group: group, Since: beforeRev, Stream: stream})

	var ch churn
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ch.run(ctx, t, c, group, w, rounds)
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 10; i++ {
			if _, err := c.Join(ctx, "elsewhere", fmt.Sprintf("x%d", i), leasehold.WithTTL(10*time.Second)); err != nil {
				t.Error(err)
			}
		}
	}()
	// A listing in the middle of the churn, and a watch from its revision.
	time.Sleep(50 * time.Millisecond)
	middle, middleRev := listAll(ctx, t, c, group)
	fromMiddle := c.Watch(ctx, leasehold.WatchOptions{Group: group, Since: middleRev, Stream: stream})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The last change of the group: a watch has seen everything once it
	// sees this join.
	if _, err := c.Join(ctx, group, "sentinel", leasehold.WithTTL(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	after, afterRev := listAll(ctx, t, c, group)
	if len(after) != 4 {
		t.Fatalf("members after the churn: %v", after)
	}

	for _, run := range []struct {
		name  string
		w     *leasehold.Watcher
		set   map[string]bool
		since int64
	}{{"from the first listing", fromStart, before, beforeRev}, {"from the middle listing", fromMiddle, middle, middleRev}} {
		var joined, updated, left int64
		last := run.since
		for !run.set["sentinel"] {
			e := next(t, run.w, 10*time.Second)
			if e.Revision <= last {
				t.Fatalf("%s: revision %d after %d", run.name, e.Revision, last)
			}
			if e.Group != group {
				t.Fatalf("%s: event of another group: %+v", run.name, e)
			}
			last = e.Revision
			apply(t, run.set, e)
			switch {
			case e.Member == "sentinel":
			case e.Type == leasehold.EventMemberJoined:
				joined++
			case e.Type == leasehold.EventMemberUpdated:
				updated++
			case e.Type == leasehold.EventMemberLeft:
				left++
			}
		}
		if last > afterRev {
			t.Fatalf("%s: watched up to %d, past the final listing at %d", run.name, last, afterRev)
		}
		if fmt.Sprint(run.set) != fmt.Sprint(after) {
			t.Fatalf("%s: listing plus events %v, final listing %v", run.name, run.set, after)
		}
		if run.since == beforeRev &&
			(joined != ch.joins.Load() || updated != ch.updates.Load() || left != ch.leaves.Load()) {
			t.Fatalf("%s: saw %d joins, %d updates, %d leaves; made %d, %d, %d", run.name,
				joined, updated, left, ch.joins.Load(), ch.updates.Load(), ch.leaves.Load())
		}
		t.Logf("%s (revision %d): %d joins, %d updates, %d leaves", run.name, run.since, joined, updated, left)
	}
	// Nothing more arrives: every change was seen once.
	select {
	case e := <-fromStart.Events():
		t.Fatalf("an event after the final listing: %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestEveryListPageCarriesItsRevisionAndUpdatesAreEvents(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	l, err := c.Acquire(ctx, "svc/a", leasehold.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutPool(ctx, "docker", "10.9.0.0/16", nil); err != nil {
		t.Fatal(err)
	}
	r, err := c.Reserve(ctx, "docker", 24, leasehold.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateGroup(ctx, "workers", nil); err != nil {
		t.Fatal(err)
	}
	now, err := c.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := c.ListLocks(ctx, "svc/", leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pools, err := c.ListPools(ctx, leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reservations, err := c.ListReservations(ctx, "docker", leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := c.ListGroups(ctx, "", leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	members, err := c.ListMembers(ctx, "workers", leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing changed in between: every page reflects the same revision.
	for name, rev := range map[string]int64{"locks": locks.Revision, "pools": pools.Revision,
		"reservations": reservations.Revision, "groups": groups.Revision, "members": members.Revision} {
		if rev != now {
			t.Errorf("%s page at revision %d, the server at %d", name, rev, now)
		}
	}

	lw := c.Watch(ctx, leasehold.WatchOptions{Prefix: "svc/", Since: locks.Revision})
	rw := c.Watch(ctx, leasehold.WatchOptions{Pool: "docker", Since: reservations.Revision, Stream: true})
	if _, err := c.RenewWithMetadata(ctx, "svc/a", l.Token, 0, map[string]any{"owner": "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Renew(ctx, "svc/a", l.Token, 0); err != nil { // no event
		t.Fatal(err)
	}
	if err := c.Release(ctx, "svc/a", l.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewReservationWithMetadata(ctx, r, 0, map[string]any{"network": "br-1"}); err != nil {
		t.Fatal(err)
	}
	if e := next(t, lw, 5*time.Second); e.Type != leasehold.EventLockUpdated || e.Key != "svc/a" ||
		e.FencingToken != l.FencingToken || e.Revision != now+1 {
		t.Fatalf("first lock event: %+v", e)
	}
	if e := next(t, lw, 5*time.Second); e.Type != leasehold.EventLockReleased || e.Reason != "released" {
		t.Fatalf("second lock event: %+v", e)
	}
	if e := next(t, rw, 5*time.Second); e.Type != leasehold.EventReservationUpdated || e.Pool != "docker" ||
		e.ID != r.ID || e.Subnet != r.Subnet {
		t.Fatalf("reservation event: %+v", e)
	}
	if got, err := c.GetReservation(ctx, "docker", r.ID); err != nil || got.Metadata["network"] != "br-1" {
		t.Fatalf("reservation after the update: %+v, %v", got, err)
	}
}
