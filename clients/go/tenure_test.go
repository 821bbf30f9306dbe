package leasehold_test

import (
	"errors"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// A cap on tenure, against the real server: a kept lease renewed well
// inside its TTL is still lost at its cap, with ErrLifetimeEnded, the lost
// margin before EndsBy; the server's ceiling caps a lease that names none.

const (
	tenureTTL    = 400 * time.Millisecond
	tenureCap    = 900 * time.Millisecond
	tenureMargin = 100 * time.Millisecond
)

// assertEndedByTenure waits for lost and checks that err says the tenure
// ended, before endsBy by about the margin, after the lease had lived
// most of its cap.
func assertEndedByTenure(t *testing.T, lost <-chan struct{}, err func() error, granted, endsBy time.Time) {
	t.Helper()
	select {
	case <-lost:
	case <-time.After(5 * tenureCap):
		t.Fatal("not lost at its cap")
	}
	at := time.Now()
	if !errors.Is(err(), leasehold.ErrLifetimeEnded) {
		t.Fatalf("lost with %v, want ErrLifetimeEnded", err())
	}
	if errors.Is(err(), leasehold.ErrExpired) {
		t.Fatalf("%v matches ErrExpired too", err())
	}
	if !at.Before(endsBy) {
		t.Fatalf("lost at %v, not before ends_by %v", at, endsBy)
	}
	if lived := at.Sub(granted); lived < tenureCap-tenureTTL {
		t.Fatalf("lost after %v, long before its cap", lived)
	}
}

func TestAMutexIsLostWithErrLifetimeEndedBeforeItsEndsBy(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	m := c.NewMutex(uniqueKey(t), leasehold.WithTTL(tenureTTL),
		leasehold.WithMaxLifetime(tenureCap), leasehold.WithLostMargin(tenureMargin))
	granted := time.Now()
	if err := m.Lock(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	l := m.Lease()
	if l.EndsBy == nil || l.LifetimeLeftMS == nil {
		t.Fatalf("no ends_by in %+v", l)
	}
	if got := l.EndsBy.Sub(l.AcquiredAt); got != tenureCap {
		t.Fatalf("ends_by is %v after acquired_at, want %v", got, tenureCap)
	}
	endsBy := granted.Add(time.Duration(*l.LifetimeLeftMS) * time.Millisecond).Add(50 * time.Millisecond)
	assertEndedByTenure(t, m.Lost(), m.Err, granted, endsBy)
}

func TestASessionIsLostWithErrLifetimeEndedAndItsLeasesWithIt(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	granted := time.Now()
	sess, err := c.NewSession(ctxT(t, 5*time.Second), leasehold.WithTTL(tenureTTL),
		leasehold.WithMaxLifetime(tenureCap), leasehold.WithLostMargin(tenureMargin))
	if err != nil {
		t.Fatal(err)
	}
	info, err := sess.Info(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if info.EndsBy == nil {
		t.Fatalf("no ends_by in %+v", info)
	}
	m := c.NewMutex(uniqueKey(t), leasehold.WithSession(sess))
	if err := m.Lock(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	assertEndedByTenure(t, sess.Done(), sess.Err, granted, granted.Add(tenureCap+50*time.Millisecond))
	<-m.Lost()
	if !errors.Is(m.Err(), leasehold.ErrSessionEnded) {
		t.Fatalf("bound lease lost with %v, want ErrSessionEnded", m.Err())
	}
}

func TestAMembershipIsLostWithErrLifetimeEnded(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := ctxT(t, 5*time.Second)
	if _, err := c.CreateGroup(ctx, "tenure", nil); err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	mb, err := c.Join(ctx, "tenure", "m1", leasehold.WithTTL(tenureTTL),
		leasehold.WithMaxLifetime(tenureCap), leasehold.WithLostMargin(tenureMargin))
	if err != nil {
		t.Fatal(err)
	}
	if mb.Info().EndsBy == nil {
		t.Fatalf("no ends_by in %+v", mb.Info())
	}
	assertEndedByTenure(t, mb.Lost(), mb.Err, granted, granted.Add(tenureCap+50*time.Millisecond))
}

func TestTheServersCeilingCapsALeaseThatNamesNone(t *testing.T) {
	s := startServer(t, "--max-lease-lifetime", "2s")
	c := s.client(t)
	l, err := c.Acquire(ctxT(t, 5*time.Second), uniqueKey(t), leasehold.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l.EndsBy == nil || l.EndsBy.Sub(l.AcquiredAt) != 2*time.Second {
		t.Fatalf("ends_by %v, acquired_at %v", l.EndsBy, l.AcquiredAt)
	}
	_, err = c.Acquire(ctxT(t, 5*time.Second), uniqueKey(t), leasehold.WithTTL(time.Second),
		leasehold.WithMaxLifetime(3*time.Second))
	if p := leasehold.AsProblem(err); p == nil || p.Status != 400 {
		t.Fatalf("a cap above the ceiling: %v", err)
	}
	plain, err := startServer(t).client(t).Acquire(ctxT(t, 5*time.Second), uniqueKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if plain.EndsBy != nil || plain.LifetimeLeftMS != nil || plain.Capped() {
		t.Fatalf("a lease without a cap shows one: %+v", plain)
	}
}

func TestAReservationShowsItsCapUntilConfirmed(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := ctxT(t, 5*time.Second)
	if _, err := c.PutPool(ctx, "tenure", "10.9.0.0/16", nil); err != nil {
		t.Fatal(err)
	}
	r, err := c.Reserve(ctx, "tenure", 24, leasehold.WithTTL(time.Minute), leasehold.WithMaxLifetime(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.EndsBy == nil || r.EndsBy.Sub(r.AcquiredAt) != time.Hour {
		t.Fatalf("ends_by %v, acquired_at %v", r.EndsBy, r.AcquiredAt)
	}
	confirmed, err := c.Confirm(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if confirmed.EndsBy != nil || confirmed.LifetimeLeftMS != nil {
		t.Fatalf("a confirmed reservation shows a cap: %+v", confirmed)
	}
}
