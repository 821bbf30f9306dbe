package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Lost is never nil: taken before Lock it is the channel of the lease Lock
// takes; Unlock closes it (ErrUnlocked) and gives Lost a fresh one for the
// next lease; after a loss it stays closed until Unlock.
func TestLostAcrossLockAndUnlock(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	admin := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	m := c.NewMutex(uniqueKey(t), leasehold.WithTTL(600*time.Millisecond))

	first := m.Lost()
	if first == nil || closed(first) || m.Err() != nil {
		t.Fatal("before the first Lock: Lost must be an open channel, Err nil")
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Lost() != first {
		t.Fatal("Lock replaced the channel Lost gave out before it")
	}
	if err := m.Lock(ctx); !errors.Is(err, leasehold.ErrLocked) {
		t.Fatalf("a second Lock of a held mutex: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(first) || !errors.Is(m.Err(), leasehold.ErrUnlocked) {
		t.Fatalf("after Unlock: closed %v, Err %v", closed(first), m.Err())
	}
	second := m.Lost()
	if second == first || closed(second) {
		t.Fatal("after Unlock Lost must be the next lease's open channel")
	}

	// The next lease is lost: its channel (taken before Lock) closes and
	// stays closed, whoever asks, until Unlock.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Err() != nil || m.Lost() != second {
		t.Fatalf("the second lease: Err %v, same channel %v", m.Err(), m.Lost() == second)
	}
	if err := admin.ForceRelease(ctx, m.Key()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second:
	case <-time.After(2 * time.Second):
		t.Fatal("not told of the force-release")
	}
	if m.Lost() != second || !errors.Is(m.Err(), leasehold.ErrReleasedElsewhere) || m.FencingToken() == 0 {
		t.Fatalf("after the loss: same channel %v, Err %v, fencing token %d", m.Lost() == second, m.Err(), m.FencingToken())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(m.Err(), leasehold.ErrReleasedElsewhere) {
		t.Fatalf("Unlock after a loss changed the reason to %v", m.Err())
	}
	if closed(m.Lost()) || m.Lost() == second {
		t.Fatal("after Unlock Lost must be a fresh channel")
	}

	// A lost lease that was never unlocked does not block the next Lock.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := admin.ForceRelease(ctx, m.Key()); err != nil {
		t.Fatal(err)
	}
	<-m.Lost()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock after a loss without Unlock: %v", err)
	}
	if closed(m.Lost()) || m.Err() != nil {
		t.Fatal("the lease after a loss: Lost closed or Err set")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// WithHolder names the client's leases given to New, and one lease given
// to a grant or a mutex.
func TestWithHolderAtBothLevels(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t, leasehold.WithHolder("client-wide"))
	ctx := ctxT(t, 20*time.Second)
	a, err := c.Acquire(ctx, uniqueKey(t)+"/a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx, uniqueKey(t)+"/b", leasehold.WithHolder("this-lease"))
	if err != nil {
		t.Fatal(err)
	}
	m := c.NewMutex(uniqueKey(t)+"/m", leasehold.WithHolder("this-mutex"))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(context.Background())
	if got := fmt.Sprint(a.Holder, " ", b.Holder, " ", m.Lease().Holder); got != "client-wide this-lease this-mutex" {
		t.Fatalf("holders: %s", got)
	}
}

// A watch's Since is a revision; 0 is the beginning, so a list page of a
// fresh server (revision 0) and a watch from it miss nothing. FromNow
// starts at the newest revision instead.
func TestAWatchFromAFreshServersListing(t *testing.T) {
	for _, stream := range []bool{false, true} {
		stream := stream
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := startServer(t)
			c := srv.client(t)
			ctx := ctxT(t, 30*time.Second)
			page, err := c.ListLocks(ctx, "", leasehold.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if page.Revision != 0 || len(page.Items) != 0 {
				t.Fatalf("a fresh server's page: revision %d, %d items", page.Revision, len(page.Items))
			}
			// Changes between the listing and the watch's start. (The
			// server's "now" is the newest revision it has fanned out, a
			// moment behind an acknowledged change.)
			if _, err := c.Acquire(ctx, "fresh/1"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			w := c.Watch(ctx, leasehold.WatchOptions{Since: page.Revision, Stream: stream, PollWait: time.Second})
			now := c.Watch(ctx, leasehold.WatchOptions{FromNow: true, Stream: stream, PollWait: time.Second})
			time.Sleep(300 * time.Millisecond) // the FromNow watch has taken its start
			if _, err := c.Acquire(ctx, "fresh/2"); err != nil {
				t.Fatal(err)
			}
			if e := next(t, w, 5*time.Second); e.Revision != 1 || e.Key != "fresh/1" {
				t.Fatalf("the first event from revision 0: %+v", e)
			}
			if e := next(t, w, 5*time.Second); e.Key != "fresh/2" {
				t.Fatalf("the second event: %+v", e)
			}
			if e := next(t, now, 5*time.Second); e.Key != "fresh/2" {
				t.Fatalf("the first event of a watch from now: %+v", e)
			}
		})
	}
}
