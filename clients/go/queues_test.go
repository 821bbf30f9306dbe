package leasehold_test

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// queuesUntil polls the queues under prefix until they count want waiters.
func queuesUntil(t *testing.T, c *leasehold.Client, prefix string, want int64) *leasehold.Queues {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	var q *leasehold.Queues
	for ctx.Err() == nil {
		var err error
		if q, err = c.Queues(ctx, prefix, 0); err != nil {
			t.Fatal(err)
		}
		if q.Waiters == want {
			return q
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the queues under %s count %+v, want %d waiters", prefix, q, want)
	return nil
}

func TestQueuesRankKeysByTheirWaiters(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	var held []*leasehold.Lease
	for _, key := range []string{"q/busy", "q/quiet"} {
		l, err := c.Acquire(ctx, key, leasehold.WithHolder("owner"), leasehold.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	granted := make(chan *leasehold.Lease, 3)
	for i, key := range []string{"q/busy", "q/busy", "q/quiet"} {
		go func(key, holder string) {
			l, err := c.Acquire(waitCtx, key, leasehold.WithHolder(holder),
				leasehold.WithTTL(time.Minute), leasehold.WithWait(20*time.Second))
			if err == nil {
				granted <- l
			}
		}(key, "w"+string(rune('0'+i)))
	}
	q := queuesUntil(t, c, "q/", 3)
	if q.Keys != 2 || len(q.Items) != 2 || q.Items[0].Key != "q/busy" || q.Items[0].Waiters != 2 ||
		q.Items[1].Key != "q/quiet" || q.Items[1].Waiters != 1 {
		t.Fatalf("queues %+v", q)
	}
	if q.Items[0].LongestWaitMS < 0 || q.Items[0].WaitingSince.IsZero() {
		t.Fatalf("queue %+v", q.Items[0])
	}
	top, err := c.Queues(ctx, "q/", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Items) != 1 || top.Items[0].Key != "q/busy" || top.Waiters != 3 || top.Keys != 2 {
		t.Fatalf("the first queue %+v", top)
	}
	if none, err := c.Queues(ctx, "elsewhere/", 0); err != nil || len(none.Items) != 0 || none.Waiters != 0 {
		t.Fatalf("queues elsewhere: %+v, %v", none, err)
	}
	var p *leasehold.Problem
	if _, err := c.Queues(ctx, "q/", 5000); !errors.As(err, &p) || p.Status != 400 {
		t.Fatalf("a limit of 5000: %v", err)
	}
	for _, l := range held {
		if err := c.Release(ctx, l.Key, l.Token); err != nil {
			t.Fatal(err)
		}
	}
	var holders []string
	for i := 0; i < 2; i++ {
		holders = append(holders, (<-granted).Holder)
	}
	sort.Strings(holders)
	if holders[1] != "w2" || (holders[0] != "w0" && holders[0] != "w1") {
		t.Fatalf("granted %v", holders)
	}
	queuesUntil(t, c, "q/", 1)
}

func TestPrefixesCountLockActivityByFirstSegment(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	first, err := c.Acquire(ctx, "jobs/a", leasehold.WithHolder("a"), leasehold.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "jobs/a", leasehold.WithHolder("b"), leasehold.WithTTL(time.Minute)); err == nil {
		t.Fatal("a held key was granted")
	}
	if err := c.Release(ctx, first.Key, first.Token); err != nil {
		t.Fatal(err)
	}
	web, err := c.Acquire(ctx, "web/x", leasehold.WithHolder("a"), leasehold.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, web.Key, web.Token); err != nil {
		t.Fatal(err)
	}
	// Grants and releases are counted from the change log, and the last
	// minute in complete five-second slots: both come within seconds.
	var names []string
	byName := map[string]leasehold.PrefixActivity{}
	for ctx.Err() == nil {
		items, err := c.Prefixes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, p := range items {
			byName[p.Prefix] = p
			names = append(names, p.Prefix)
		}
		if byName["web/"].LastMinute.Releases == 1 && byName["jobs/"].LastMinute.Releases == 1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !sort.StringsAreSorted(names) {
		t.Fatalf("prefixes out of order: %v", names)
	}
	jobs, webs := byName["jobs/"], byName["web/"]
	if jobs.Total != (leasehold.Counts{Grants: 1, Releases: 1, Refusals: 1}) ||
		jobs.LastMinute != jobs.Total || jobs.Waiters != 0 {
		t.Fatalf("jobs/: %+v", jobs)
	}
	if webs.Total != (leasehold.Counts{Grants: 1, Releases: 1}) || webs.WaitP50MS != nil {
		t.Fatalf("web/: %+v", webs)
	}
}
