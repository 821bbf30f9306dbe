package leasehold_test

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func TestSessionEndFreesEveryKey(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	s, err := c.NewSession(ctx, leasehold.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ms []*leasehold.Mutex
	for i := 0; i < 10; i++ {
		m := c.NewMutex(fmt.Sprintf("sess/%d", i), leasehold.WithSession(s))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	sets, err := c.AcquireSet(ctx, []string{"sess/x", "sess/y"}, leasehold.WithSession(s))
	if err != nil || len(sets) != 2 {
		t.Fatalf("lock set: %v %v", sets, err)
	}
	// The keep-alive outlives the TTL.
	time.Sleep(3 * time.Second)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Locks == nil || *info.Locks != 12 {
		t.Fatalf("the session holds %v locks, want 12", info.Locks)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done is open after Close")
	}
	for _, m := range ms {
		select {
		case <-m.Lost():
		case <-time.After(time.Second):
			t.Fatalf("%s: Lost open after its session closed", m.Key())
		}
	}
	page, err := c.ListLocks(ctx, "sess/", leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 {
		t.Fatalf("%d keys still held after the session ended", len(page.Items))
	}
	other := srv.client(t, leasehold.WithHolder("other"))
	if _, err := other.Acquire(ctx, "sess/3"); err != nil {
		t.Fatal(err)
	}
}

func TestSessionLostClosesDone(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	s, err := c.NewSession(ctx, leasehold.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ForceCloseSession(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("Done still open after the session was closed by another")
	}
	if !leasehold.IsLeaseLost(s.Err()) {
		t.Fatalf("why the session ended: %v", s.Err())
	}
}

func TestWatchResumesAcrossRestart(t *testing.T) {
	t.Run("long polls", func(t *testing.T) { watchAcrossRestart(t, false) })
	t.Run("event stream", func(t *testing.T) { watchAcrossRestart(t, true) })
}

func watchAcrossRestart(t *testing.T, stream bool) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 60*time.Second)
	if _, err := c.Acquire(ctx, "w/before"); err != nil {
		t.Fatal(err)
	}
	rev, err := c.Revision(ctx)
	if err != nil || rev == 0 {
		t.Fatalf("revision %d: %v", rev, err)
	}
	w := c.Watch(ctx, leasehold.WatchOptions{Prefix: "w/", Since: rev, PollWait: 2 * time.Second, Stream: stream})
	next := func() leasehold.Event {
		t.Helper()
		select {
		case e, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event")
		}
		return leasehold.Event{}
	}
	l, err := c.Acquire(ctx, "w/one")
	if err != nil {
		t.Fatal(err)
	}
	e1 := next()
	if e1.Type != leasehold.EventLockAcquired || e1.Key != "w/one" || e1.FencingToken != l.FencingToken {
		t.Fatalf("first event %+v", e1)
	}
	srv.stop()
	time.Sleep(300 * time.Millisecond)
	srv.start()
	if err := c.Release(ctx, "w/one", l.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "w/two"); err != nil {
		t.Fatal(err)
	}
	e2, e3 := next(), next()
	if e2.Type != leasehold.EventLockReleased || e2.Key != "w/one" || e2.Reason != "released" {
		t.Fatalf("after the restart: %+v", e2)
	}
	if e3.Type != leasehold.EventLockAcquired || e3.Key != "w/two" {
		t.Fatalf("after the restart: %+v", e3)
	}
	if !(e1.Revision < e2.Revision && e2.Revision < e3.Revision) {
		t.Fatalf("revisions out of order: %d %d %d", e1.Revision, e2.Revision, e3.Revision)
	}
}

func TestWatchOfCompactedHistoryIsTyped410(t *testing.T) {
	srv := startServer(t, "--event-retention", "1s", "--event-retention-count", "1")
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	for i := 0; i < 5; i++ {
		l, err := c.Acquire(ctx, "h/k")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Release(ctx, "h/k", l.Token); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		w := c.Watch(ctx, leasehold.WatchOptions{PollWait: 100 * time.Millisecond})
		for range w.Events() {
			break
		}
		if err := w.Err(); leasehold.IsHistoryCompacted(err) {
			if p := leasehold.AsProblem(err); p.Status != 410 || p.OldestRevision <= 1 {
				t.Fatalf("410 problem %+v", p)
			}
			// The event stream says the same.
			sw := c.Watch(ctx, leasehold.WatchOptions{Stream: true})
			for range sw.Events() {
				t.Fatal("an event from a compacted history")
			}
			if !leasehold.IsHistoryCompacted(sw.Err()) {
				t.Fatalf("the stream of a compacted history: %v", sw.Err())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("history never compacted")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestElection(t *testing.T) {
	srv := startServer(t)
	ctx := ctxT(t, 30*time.Second)
	a := srv.client(t, leasehold.WithHolder("a")).NewElection("leader/x", leasehold.WithTTL(3*time.Second))
	b := srv.client(t, leasehold.WithHolder("b")).NewElection("leader/x", leasehold.WithTTL(3*time.Second))
	if _, err := a.Leader(ctx); !errors.Is(err, leasehold.ErrNoLeader) {
		t.Fatalf("leader of an empty election: %v", err)
	}
	obs := a.Observe(ctx)
	if l := <-obs; l != nil {
		t.Fatalf("first observation %+v", l)
	}
	if err := a.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	if l := <-obs; l == nil || l.Holder != "a" {
		t.Fatalf("observed %+v, want a", l)
	}
	won := make(chan error, 1)
	go func() { won <- b.Campaign(ctx) }()
	time.Sleep(200 * time.Millisecond)
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatal(err)
	}
	for l := range obs {
		if l != nil && l.Holder == "b" {
			if l.FencingToken != b.FencingToken() {
				t.Fatalf("observed token %d, b holds %d", l.FencingToken, b.FencingToken())
			}
			return
		}
	}
	t.Fatal("observation ended before b led")
}

func overlaps(a, b *net.IPNet) bool { return a.Contains(b.IP) || b.Contains(a.IP) }

// contains says whether one of the networks overlaps n.
func contains(networks []string, n *net.IPNet) bool {
	for _, s := range networks {
		if _, m, err := net.ParseCIDR(s); err == nil && overlaps(m, n) {
			return true
		}
	}
	return false
}

func TestExcludeLocalSkipsThisHostsNetworks(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	locals, err := leasehold.LocalNetworks()
	if err != nil {
		t.Fatal(err)
	}
	// A pool of four blocks the size of one of this host's IPv4 networks,
	// that network among them.
	var local *net.IPNet
	for _, s := range locals {
		_, n, _ := net.ParseCIDR(s)
		ones, bits := n.Mask.Size()
		if bits == 32 && ones >= 4 && (local == nil || local.IP.IsLoopback()) {
			local = n
		}
	}
	if local == nil {
		t.Fatalf("this host has no IPv4 network: %v", locals)
	}
	ones, _ := local.Mask.Size()
	pool := net.IPNet{IP: local.IP.Mask(net.CIDRMask(ones-2, 32)), Mask: net.CIDRMask(ones-2, 32)}
	if _, err := c.PutPool(ctx, "local", pool.String(), nil); err != nil {
		t.Fatal(err)
	}
	pools, err := c.ListPools(ctx, leasehold.ListOptions{})
	if err != nil || len(pools.Items) != 1 || pools.Items[0].Family != "ipv4" || pools.Items[0].CIDR != pool.String() {
		t.Fatalf("pools: %+v %v", pools, err)
	}
	var got []*leasehold.Reservation
	for {
		r, err := c.Reserve(ctx, "local", ones, leasehold.ExcludeLocal(), leasehold.WithTTL(10*time.Second))
		if leasehold.IsPoolExhausted(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n, err := r.Network()
		if err != nil {
			t.Fatal(err)
		}
		if overlaps(n, local) {
			t.Fatalf("reserved %s, this host's network %s", r.Subnet, local)
		}
		got = append(got, r)
	}
	// Every block of the pool that none of this host's networks overlaps.
	free := 0
	for i := 0; i < 4; i++ {
		ip := make(net.IP, 4)
		copy(ip, pool.IP.To4())
		v := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
		v += uint32(i) << (32 - ones)
		block := &net.IPNet{IP: net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4(), Mask: net.CIDRMask(ones, 32)}
		taken := false
		for _, s := range locals {
			_, n, _ := net.ParseCIDR(s)
			if n.IP.To4() != nil && overlaps(n, block) {
				taken = true
			}
		}
		if !taken {
			free++
		}
	}
	if len(got) != free || free > 3 {
		t.Fatalf("%d blocks of %s reserved beside this host's %v, want %d", len(got), pool.String(), locals, free)
	}
	// Without the exclusion, this host's networks are what is left.
	r, err := c.Reserve(ctx, "local", ones)
	if err != nil {
		t.Fatalf("without ExcludeLocal: %v", err)
	}
	if n, _ := r.Network(); !overlaps(n, local) && !contains(locals, n) {
		t.Fatalf("without ExcludeLocal: %s, none of this host's %v", r.Subnet, locals)
	}
	confirmed, err := c.Confirm(ctx, got[0])
	if err != nil || confirmed.State != leasehold.StateAllocated || confirmed.ExpiresAt != nil {
		t.Fatalf("confirm: %+v %v", confirmed, err)
	}
	if _, err := c.RenewReservation(ctx, got[1], 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseReservation(ctx, got[1]); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseReservation(ctx, got[1]); !leasehold.IsLeaseLost(err) {
		t.Fatalf("second release: %v", err)
	}
	again, err := c.ReserveSubnet(ctx, "local", got[1].Subnet)
	if err != nil || again.Subnet != got[1].Subnet {
		t.Fatalf("the released subnet by name: %+v %v", again, err)
	}
	_, err = c.ReserveSubnet(ctx, "local", got[2].Subnet)
	if !leasehold.IsSubnetUnavailable(err) || len(leasehold.AsProblem(err).Conflicts) != 1 {
		t.Fatalf("a taken subnet by name: %v", err)
	}
}

func TestBadInputIsATypedError(t *testing.T) {
	srv := startServer(t)
	// A URL without a scheme is http.
	c, err := leasehold.New(srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 20*time.Second)
	if _, err := leasehold.New("ftp://example.org"); err == nil {
		t.Fatal("an ftp URL was accepted")
	}
	if _, err := leasehold.New("http://"); err == nil {
		t.Fatal("a URL without a host was accepted")
	}
	refused := func(what string, err error, status int) {
		t.Helper()
		var p *leasehold.Problem
		if !errors.As(err, &p) {
			t.Fatalf("%s: %v, want a *Problem", what, err)
		}
		if p.Status != status || p.Type == "" || p.Detail == "" {
			t.Fatalf("%s: %+v, want status %d", what, p, status)
		}
	}
	_, err = c.Acquire(ctx, "k", leasehold.WithTTL(time.Millisecond))
	refused("a 1 ms TTL", err, 400)
	if !leasehold.IsInvalid(err) {
		t.Fatal("IsInvalid of a 400")
	}
	_, err = c.Acquire(ctx, string(make([]byte, 300)))
	refused("a 300-byte key of NULs", err, 400)
	_, err = c.Acquire(ctx, "k", leasehold.WithMetadata(map[string]any{"x": string(make([]byte, 70000))}))
	refused("70 kB of metadata", err, 413)
	_, err = c.Inspect(ctx, "nobody/holds/this")
	refused("inspect of a free key", err, 404)
	if !leasehold.IsNotFound(err) {
		t.Fatal("IsNotFound of a 404")
	}
	_, err = c.Reserve(ctx, "no-such-pool", 24)
	refused("a pool that does not exist", err, 404)
	if _, err := c.PutPool(ctx, "p", "10.0.0.0/8", nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.Reserve(ctx, "p", 99)
	refused("prefix length 99", err, 400)
	_, err = c.ReserveSubnet(ctx, "p", "10.1.2.5/24")
	refused("an unaligned subnet", err, 400)
	_, err = c.PutPool(ctx, "p", "not a cidr", nil)
	refused("a pool without a cidr", err, 400)
	_, err = c.PutPool(ctx, "Bad Name!", "10.0.0.0/8", nil)
	refused("a bad pool name", err, 400)
	_, err = c.Renew(ctx, "k", "not-a-token", 0)
	if err == nil {
		t.Fatal("renew with a made-up token")
	}
	_, err = c.CheckFencing(ctx, "k", -1)
	refused("a negative fencing token", err, 400)
	// A port nobody listens on: a transport error, after the retries.
	dead, _ := leasehold.New(freePort(t), leasehold.WithRetry(leasehold.RetryPolicy{Attempts: 2, First: time.Millisecond, Max: time.Millisecond}))
	if _, err := dead.Acquire(ctx, "k"); !leasehold.IsUnreachable(err) {
		t.Fatalf("an unreachable server: %v", err)
	}
}

func TestAn503IsRetriedAfterItsRetryAfter(t *testing.T) {
	// One waiting acquire at a time: a second one is refused with 503
	// overloaded and Retry-After until the first is served.
	srv := startServer(t, "--max-waiters", "1")
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	first, err := c.Acquire(ctx, "busy/1", leasehold.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Acquire(ctx, "busy/2", leasehold.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, "busy/1", leasehold.WithWait(10*time.Second))
		waiting <- err
	}()
	time.Sleep(300 * time.Millisecond) // the one waiter slot is taken
	// Without retries the refusal is a typed 503.
	once := srv.client(t, leasehold.WithRetry(leasehold.RetryPolicy{Attempts: 1}))
	_, err = once.Acquire(ctx, "busy/2", leasehold.WithWait(10*time.Second))
	p := leasehold.AsProblem(err)
	if p == nil || p.Status != 503 || p.RetryAfter <= 0 {
		t.Fatalf("a second waiter without retries: %v", err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = c.Release(ctx, "busy/1", first.Token)
		time.Sleep(300 * time.Millisecond)
		_ = c.Release(ctx, "busy/2", second.Token)
	}()
	start := time.Now()
	l, err := c.Acquire(ctx, "busy/2", leasehold.WithWait(10*time.Second))
	if err != nil {
		t.Fatalf("the retried waiter: %v", err)
	}
	if time.Since(start) < 500*time.Millisecond || l.Key != "busy/2" {
		t.Fatalf("granted %+v after %v", l, time.Since(start))
	}
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
}

func TestStreamWatchRefusedAtItsStartEnds(t *testing.T) {
	// A server that asks for API tokens, watched without one: the revision
	// the stream would start from is refused 401, and the watch ends with
	// that refusal instead of retrying it.
	srv, _ := startServerWithTokens(t, []string{"--name", "w", "--lock-prefix", "", "--admin"})
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	started := time.Now()
	w := c.Watch(ctx, leasehold.WatchOptions{Stream: true})
	for range w.Events() {
		t.Fatal("an event without a token")
	}
	if p := leasehold.AsProblem(w.Err()); p == nil || p.Status != 401 {
		t.Fatalf("the watch ended with %v, not a 401 problem", w.Err())
	}
	if ctx.Err() != nil {
		t.Fatalf("the watch ended only with its context, after %v", time.Since(started))
	}
}
