package leasehold_test

import (
	"fmt"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func TestGroupRoutesAndTypedErrors(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	if _, err := c.Group(ctx, "workers"); !leasehold.IsGroupNotFound(err) {
		t.Fatalf("group before it is created: %v", err)
	}
	if _, err := c.Join(ctx, "workers", "node-1"); !leasehold.IsGroupNotFound(err) {
		t.Fatalf("join of a group that does not exist: %v", err)
	}
	created, err := c.CreateGroup(ctx, "workers", map[string]any{"team": "net"})
	if err != nil || !created {
		t.Fatalf("create: %v, created %v", err, created)
	}
	if created, err := c.CreateGroup(ctx, "workers", nil); err != nil || created {
		t.Fatalf("create again: %v, created %v (want 200, not created)", err, created)
	}
	g, err := c.Group(ctx, "workers")
	if err != nil || g.Name != "workers" || g.Metadata["team"] != "net" || g.Members != 0 {
		t.Fatalf("group: %+v, %v", g, err)
	}
	if _, err := c.CreateGroup(ctx, "other", nil); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListGroups(ctx, "work", leasehold.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Name != "workers" || page.Revision < 2 {
		t.Fatalf("list: %+v, %v", page, err)
	}

	m, err := c.Join(ctx, "workers", "node-1", leasehold.WithTTL(2*time.Second),
		leasehold.WithCapabilities(map[string]int{"gpus": 2}))
	if err != nil || !m.Joined || m.Token() == "" {
		t.Fatalf("join: %+v, %v", m, err)
	}
	info, err := c.Member(ctx, "workers", "node-1")
	if err != nil || string(info.Capabilities) != `{"gpus":2}` || info.Session != "" {
		t.Fatalf("member: %+v, %v", info, err)
	}
	other := srv.client(t, leasehold.WithHolder("someone-else"))
	if _, err := other.Join(ctx, "workers", "node-1", leasehold.WithTTL(2*time.Second)); !leasehold.IsMemberExists(err) {
		t.Fatalf("join of a taken member id: %v", err)
	}
	if err := c.DeleteGroup(ctx, "workers"); !leasehold.IsGroupNotEmpty(err) {
		t.Fatalf("delete of a group with a member: %v", err)
	} else if string(leasehold.AsProblem(err).Extensions["members"]) != "1" {
		t.Fatalf("members of the refusal: %s", leasehold.AsProblem(err).Extensions["members"])
	}
	if err := m.UpdateCapabilities(ctx, map[string]int{"gpus": 4}); err != nil {
		t.Fatal(err)
	}
	members, err := c.ListMembers(ctx, "workers", leasehold.ListOptions{})
	if err != nil || len(members.Items) != 1 || string(members.Items[0].Capabilities) != `{"gpus":4}` ||
		members.Revision <= page.Revision {
		t.Fatalf("members: %+v, %v", members, err)
	}
	if _, err := c.ListMembers(ctx, "nobody", leasehold.ListOptions{}); !leasehold.IsGroupNotFound(err) {
		t.Fatalf("members of a group that does not exist: %v", err)
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
	default:
		t.Fatal("Lost still open after Leave")
	}
	if _, err := c.Member(ctx, "workers", "node-1"); !leasehold.IsMemberNotFound(err) {
		t.Fatalf("member after leaving: %v", err)
	}
	if err := c.RemoveMember(ctx, "workers", "node-1"); !leasehold.IsMemberNotFound(err) {
		t.Fatalf("remove of a member not joined: %v", err)
	}

	// Removed by an admin: the background renewal is refused, Lost closes.
	m, err = c.Join(ctx, "workers", "node-2", leasehold.WithTTL(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveMember(ctx, "workers", "node-2"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
		if !leasehold.IsLeaseLost(m.Err()) {
			t.Fatalf("why the membership ended: %v", m.Err())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Lost still open after the member was removed")
	}
	if err := c.DeleteGroup(ctx, "workers"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Group(ctx, "workers"); !leasehold.IsGroupNotFound(err) {
		t.Fatalf("group after delete: %v", err)
	}
}

// next reads the next event of w, failing the test after d.
func next(t *testing.T, w *leasehold.Watcher, d time.Duration) leasehold.Event {
	t.Helper()
	select {
	case e, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return e
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
	}
	return leasehold.Event{}
}

func TestSessionBoundMemberLeavesWhenItsSessionCloses(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := startServer(t)
			c := srv.client(t)
			ctx := ctxT(t, 30*time.Second)
			if _, err := c.CreateGroup(ctx, "svc", nil); err != nil {
				t.Fatal(err)
			}
			page, err := c.ListMembers(ctx, "svc", leasehold.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w := c.Watch(ctx, leasehold.WatchOptions{Group: "svc", Since: page.Revision, Stream: stream})
			s, err := c.NewSession(ctx, leasehold.WithTTL(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			m, err := c.Join(ctx, "svc", "api-1", leasehold.WithSession(s),
				leasehold.WithCapabilities([]string{"read"}))
			if err != nil || m.Token() != "" {
				t.Fatalf("join: %v (token %q)", err, m.Token())
			}
			if err := m.UpdateCapabilities(ctx, []string{"read", "write"}); err != nil {
				t.Fatal(err)
			}
			info, err := c.Member(ctx, "svc", "api-1")
			if err != nil || info.Session != s.ID() || string(info.Capabilities) != `["read","write"]` {
				t.Fatalf("member: %+v, %v", info, err)
			}
			// Another member of the same session leaves on its own; the
			// session and its first member stay.
			m2, err := c.Join(ctx, "svc", "api-2", leasehold.WithSession(s))
			if err != nil {
				t.Fatal(err)
			}
			if err := m2.Leave(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-m.Lost():
				t.Fatal("the first member lost when the second left")
			default:
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-m.Lost():
			case <-time.After(3 * time.Second):
				t.Fatal("Lost still open after the session closed")
			}
			want := []struct{ typ, member, reason string }{
				{leasehold.EventMemberJoined, "api-1", ""},
				{leasehold.EventMemberUpdated, "api-1", ""},
				{leasehold.EventMemberJoined, "api-2", ""},
				{leasehold.EventMemberLeft, "api-2", leasehold.ReasonLeft},
				{leasehold.EventMemberLeft, "api-1", "session_closed"},
			}
			for _, wnt := range want {
				e := next(t, w, 5*time.Second)
				if e.Type != wnt.typ || e.Reason != wnt.reason || e.Group != "svc" || e.Member != wnt.member ||
					e.Session != s.ID() {
					t.Fatalf("event %+v, want %s %q", e, wnt.typ, wnt.reason)
				}
			}
			if _, err := c.Member(ctx, "svc", "api-1"); !leasehold.IsMemberNotFound(err) {
				t.Fatalf("member after its session closed: %v", err)
			}
		})
	}
}

func TestTTLMemberIsKeptAlivePastItsTTLThenLeaves(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	if _, err := c.CreateGroup(ctx, "svc", nil); err != nil {
		t.Fatal(err)
	}
	groups, err := c.ListGroups(ctx, "", leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := c.Watch(ctx, leasehold.WatchOptions{Group: "svc", Since: groups.Revision})
	m, err := c.Join(ctx, "svc", "worker", leasehold.WithTTL(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
		t.Fatalf("membership lost while kept alive: %v", m.Err())
	case <-time.After(2500 * time.Millisecond): // five TTLs
	}
	info, err := c.Member(ctx, "svc", "worker")
	if err != nil || info.Token != "" {
		t.Fatalf("member after five TTLs: %+v, %v", info, err)
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if e := next(t, w, 5*time.Second); e.Type != leasehold.EventMemberJoined || e.Member != "worker" {
		t.Fatalf("first event: %+v", e)
	}
	// Renewals are no events: the next is the leave.
	if e := next(t, w, 5*time.Second); e.Type != leasehold.EventMemberLeft || e.Reason != leasehold.ReasonLeft {
		t.Fatalf("second event: %+v", e)
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatalf("leaving twice: %v", err)
	}
}

func TestUnreachableTTLMemberIsLostBeforeTheServerSaysItExpired(t *testing.T) {
	srv := startServer(t)
	direct := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	if _, err := direct.CreateGroup(ctx, "svc", nil); err != nil {
		t.Fatal(err)
	}
	px := startProxy(t, srv.addr)
	c, err := leasehold.New(px.url(), leasehold.WithRetry(leasehold.RetryPolicy{Attempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "svc", "worker", leasehold.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	page, err := direct.ListMembers(ctx, "svc", leasehold.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("members: %+v, %v", page, err)
	}
	w := direct.Watch(ctx, leasehold.WatchOptions{Group: "svc", Since: page.Revision})
	px.cut()
	select {
	case <-m.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("Lost still open with the server unreachable past the TTL")
	}
	lostAt := time.Now()
	if end := m.Info().ExpiresAt; !lostAt.Before(end) {
		t.Fatalf("the member ended at %v on the server, the client noticed only at %v", end, lostAt)
	}
	e := next(t, w, 5*time.Second)
	if e.Type != leasehold.EventMemberLeft || e.Member != "worker" || e.Reason != "expired" {
		t.Fatalf("event: %+v", e)
	}
}
