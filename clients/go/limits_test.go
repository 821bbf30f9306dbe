package leasehold_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func TestLimitRoutesAndTypedErrors(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 30*time.Second)
	if _, err := c.Limit(ctx, "api/github"); !leasehold.IsLimitNotFound(err) {
		t.Fatalf("a limit before it is defined: %v", err)
	}
	info, created, err := c.DefineLimit(ctx, "api/github", 4, time.Minute, 0)
	if err != nil || !created || info.Burst != 4 || info.Available != 4 || info.PeriodMS != 60000 {
		t.Fatalf("define: %+v, created %v, %v", info, created, err)
	}
	if _, created, err := c.DefineLimit(ctx, "api/github", 4, time.Minute, 0); err != nil || created {
		t.Fatalf("define again: created %v, %v (want 200, not created)", created, err)
	}
	page, err := c.ListLimits(ctx, "api/", leasehold.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Name != "api/github" {
		t.Fatalf("list: %+v, %v", page, err)
	}
	l := c.NewLimiter("api/github")
	if ok, err := l.AllowN(ctx, 3); !ok || err != nil {
		t.Fatalf("a take of 3 of 4: %v, %v", ok, err)
	}
	if ok, err := l.AllowN(ctx, 2); ok || err != nil {
		t.Fatalf("a take of 2 with 1 left: %v, %v (want a denial)", ok, err)
	}
	if info, err := c.Limit(ctx, "api/github"); err != nil || info.Available != 1 {
		t.Fatalf("a denial took something: %+v, %v", info, err)
	}
	_, err = c.TakeLimit(ctx, "api/github", 2, 0)
	if !leasehold.IsRateLimited(err) {
		t.Fatalf("a denied take: %v", err)
	}
	// One token comes back every 15 s: the second is at most 15 s away.
	if ms := leasehold.RetryAfterMS(err); ms <= 0 || ms > 15000 {
		t.Fatalf("retry_after_ms %d", ms)
	}
	if p := leasehold.AsProblem(err); p.RetryAfter < time.Second {
		t.Fatalf("Retry-After %v", p.RetryAfter)
	}
	if _, err := c.TakeLimit(ctx, "api/github", 5, 0); !leasehold.IsCostExceedsBurst(err) {
		t.Fatalf("a take above the burst: %v", err)
	}
	if err := l.Wait(ctx, 5); !leasehold.IsCostExceedsBurst(err) {
		t.Fatalf("a wait above the burst: %v", err)
	}
	if info, err := c.RefundLimit(ctx, "api/github", 10); err != nil || info.Available != 4 {
		t.Fatalf("refund: %+v, %v (never above the burst)", info, err)
	}
	if err := c.DeleteLimit(ctx, "api/github"); err != nil {
		t.Fatal(err)
	}
	if l.Allow(ctx) {
		t.Fatal("a deleted limit admitted a take")
	}
	if _, err := l.AllowN(ctx, 1); !leasehold.IsLimitNotFound(err) {
		t.Fatalf("a take of a deleted limit: %v", err)
	}
}

// Wait admits at the limit's rate and no faster, shared by every goroutine,
// and a wait past the context's deadline takes nothing.
func TestLimiterWaitKeepsTheRate(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 60*time.Second)
	if _, _, err := c.DefineLimit(ctx, "paced", 20, time.Second, 1); err != nil {
		t.Fatal(err)
	}
	l := c.NewLimiter("paced")
	started := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if err := l.Wait(ctx, 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// 40 takes, one at a time, 50 ms apart: at least 39 intervals.
	if took := time.Since(started); took < 39*50*time.Millisecond {
		t.Fatalf("40 takes at 20 a second in %v", took)
	}

	if _, _, err := c.DefineLimit(ctx, "hourly", 1, time.Hour, 1); err != nil {
		t.Fatal(err)
	}
	h := c.NewLimiter("hourly")
	if !h.Allow(ctx) {
		t.Fatal("a full limit denied its first take")
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := h.Wait(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait past its deadline: %v", err)
	}
	if info, err := c.Limit(ctx, "hourly"); err != nil || info.Available != 0 || info.FullInMS <= 0 {
		t.Fatalf("after a wait that ended: %+v, %v", info, err)
	}
}
