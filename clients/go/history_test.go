package leasehold_test

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// allSessions pages through every live session c may inspect, limit at a
// time; every page but the last is full.
func allSessions(t *testing.T, c *leasehold.Client, limit int) []leasehold.SessionInfo {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	var all []leasehold.SessionInfo
	opts := leasehold.ListOptions{Limit: limit}
	for {
		page, err := c.Sessions(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Items...)
		if page.Revision <= 0 {
			t.Fatalf("a page without its revision: %+v", page)
		}
		if page.NextCursor == nil {
			return all
		}
		if len(page.Items) != limit {
			t.Fatalf("a page before the last holds %d of %d", len(page.Items), limit)
		}
		opts.Cursor = *page.NextCursor
	}
}

func ids(sessions []leasehold.SessionInfo) []string {
	var out []string
	for _, s := range sessions {
		out = append(out, s.ID)
	}
	return out
}

func TestSessionsListsTheLiveSessionsPageByPage(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	var opened []string
	var bound *leasehold.Session
	for i := 0; i < 5; i++ {
		s, err := c.NewSession(ctx, leasehold.WithTTL(time.Minute), leasehold.WithHolder("lister"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		opened = append(opened, s.ID())
		bound = s
	}
	if _, err := c.Acquire(ctx, "svc/bound", leasehold.WithSession(bound)); err != nil {
		t.Fatal(err)
	}
	listed := allSessions(t, c, 2)
	sort.Strings(opened)
	if got := ids(listed); strings.Join(got, ",") != strings.Join(opened, ",") {
		t.Fatalf("listed %v, opened %v (in id order)", got, opened)
	}
	for _, s := range listed {
		if s.Token != "" || s.Holder != "lister" || s.Locks == nil || s.Reservations == nil || s.Members == nil {
			t.Fatalf("a listed session %+v", s)
		}
		want := int64(0)
		if s.ID == bound.ID() {
			want = 1
		}
		if *s.Locks != want || s.TTLMS != 60000 || s.ExpiresAt.IsZero() {
			t.Fatalf("session %s: %d locks (want %d), %+v", s.ID, *s.Locks, want, s)
		}
	}
	// A closed session leaves the list at once.
	if err := bound.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := allSessions(t, c, 100); len(got) != 4 {
		t.Fatalf("after a close: %v", ids(got))
	}
	var p *leasehold.Problem
	if _, err := c.Sessions(ctx, leasehold.ListOptions{Limit: 5000}); !errors.As(err, &p) || p.Status != 400 || p.Field != "limit" {
		t.Fatalf("a limit of 5000: %v", err)
	}
	if _, err := c.Sessions(ctx, leasehold.ListOptions{Cursor: "zz"}); !errors.As(err, &p) || p.Field != "cursor" {
		t.Fatalf("a cursor of zz: %v", err)
	}
}

func TestSessionsOfAnotherTokenAreNotListed(t *testing.T) {
	srv, secrets := startServerWithTokens(t,
		[]string{"--name", "a", "--lock-prefix", "a/"}, []string{"--name", "b", "--lock-prefix", "b/"})
	a, b := secrets[0], secrets[1]
	ctx := ctxT(t, 30*time.Second)
	mine := map[string][]string{}
	for i := 0; i < 3; i++ {
		for name, token := range map[string]string{"a": a, "b": b} {
			s, err := srv.client(t, leasehold.WithToken(token)).NewSession(ctx, leasehold.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			mine[name] = append(mine[name], s.ID())
		}
	}
	for name, token := range map[string]string{"a": a, "b": b} {
		sort.Strings(mine[name])
		got := ids(allSessions(t, srv.client(t, leasehold.WithToken(token)), 1))
		if strings.Join(got, ",") != strings.Join(mine[name], ",") {
			t.Fatalf("%s lists %v, its own are %v", name, got, mine[name])
		}
	}
}

// historyOf reads key's history until it holds n events (a moment after the
// writes on PostgreSQL).
func historyOf(t *testing.T, c *leasehold.Client, key string, n int) *leasehold.KeyHistory {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	for {
		h, err := c.LockHistory(ctx, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Items) >= n || ctx.Err() != nil {
			return h
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLockHistoryIsTheKeysOwnEventsNewestFirst(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	var tokens []int64
	for _, key := range []string{"a/b", "a/bc", "a/b"} {
		l, err := c.Acquire(ctx, key, leasehold.WithTTL(time.Minute), leasehold.WithHolder("h-"+key))
		if err != nil {
			t.Fatal(err)
		}
		if key == "a/b" {
			tokens = append(tokens, l.FencingToken)
		}
		if err := c.Release(ctx, key, l.Token); err != nil {
			t.Fatal(err)
		}
	}
	h := historyOf(t, c, "a/b", 4)
	var kinds []string
	for i, e := range h.Items {
		kinds = append(kinds, e.Type)
		if e.Key != "a/b" || e.Holder != "h-a/b" {
			t.Fatalf("an event of another key: %+v", e)
		}
		if i > 0 && e.Revision >= h.Items[i-1].Revision {
			t.Fatalf("not newest first: %+v", h.Items)
		}
	}
	want := []string{leasehold.EventLockReleased, leasehold.EventLockAcquired, leasehold.EventLockReleased, leasehold.EventLockAcquired}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("history %v, want %v", kinds, want)
	}
	if h.Items[0].Reason != "released" || h.Items[1].FencingToken != tokens[1] || h.Items[3].FencingToken != tokens[0] {
		t.Fatalf("history %+v, fencing tokens %v", h.Items, tokens)
	}
	if h.Revision < h.Items[0].Revision {
		t.Fatalf("revision %d before the newest event %d", h.Revision, h.Items[0].Revision)
	}
	newest, err := c.LockHistory(ctx, "a/b", 1)
	if err != nil || len(newest.Items) != 1 || newest.Items[0].Revision != h.Items[0].Revision {
		t.Fatalf("the newest event: %+v, %v", newest, err)
	}
	none, err := c.LockHistory(ctx, "never/held", 0)
	if err != nil || none.Items == nil || len(none.Items) != 0 {
		t.Fatalf("a key without history: %+v, %v", none, err)
	}
	var p *leasehold.Problem
	if _, err := c.LockHistory(ctx, "a/b", 501); !errors.As(err, &p) || p.Status != 400 || p.Field != "limit" {
		t.Fatalf("a limit of 501: %v", err)
	}
}
