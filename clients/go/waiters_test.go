package leasehold_test

import (
	"context"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// holdersOf polls key's queue until its holders are want.
func holdersOf(t *testing.T, c *leasehold.Client, key string, want ...string) []leasehold.Waiter {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	var got []string
	for ctx.Err() == nil {
		ws, err := c.Waiters(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, w := range ws {
			got = append(got, w.Holder)
		}
		if equal(got, want) {
			return ws
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the queue of %s is %v, want %v", key, got, want)
	return nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWaitersListsTheQueueInOrder(t *testing.T) {
	srv := startServer(t, "--name", "go-test")
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	held, err := c.Acquire(ctx, "q/key", leasehold.WithHolder("holder"), leasehold.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	holdersOf(t, c, "q/key")
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	granted := make(chan *leasehold.Lease, 2)
	for _, holder := range []string{"w1", "w2"} {
		go func(holder string) {
			l, err := c.Acquire(waitCtx, "q/key", leasehold.WithHolder(holder),
				leasehold.WithTTL(time.Minute), leasehold.WithWait(15*time.Second))
			if err == nil {
				granted <- l
			}
		}(holder)
		if holder == "w1" {
			holdersOf(t, c, "q/key", "w1")
		}
	}
	ws := holdersOf(t, c, "q/key", "w1", "w2")
	for i, w := range ws {
		if w.Position != i+1 || w.Mode != "exclusive" || w.Keys != 1 || w.Replica != "go-test" {
			t.Fatalf("waiter %d: %+v", i, w)
		}
		if w.WaitingUntil.Sub(w.WaitingSince) != 15*time.Second || w.WaitLeftMS > 15000 {
			t.Fatalf("waiter %d: %+v", i, w)
		}
	}
	if err := c.Release(ctx, "q/key", held.Token); err != nil {
		t.Fatal(err)
	}
	if l := <-granted; l.Holder != "w1" {
		t.Fatalf("granted %s first, want w1", l.Holder)
	}
	holdersOf(t, c, "q/key", "w2")
}
