package leasehold_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// metric reads one counter of the server's /metrics.
func metric(t testing.TB, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// The keep-alive of one Mutex held for 10 TTLs: how many renewals per TTL
// reach the server. Renewing every third of the TTL is three; fewer than two
// would leave no second try before the lease ends, many more is waste.
func TestKeepAliveTrafficPerLease(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	const ttl = time.Second
	ctx := ctxT(t, 30*time.Second)
	m := c.NewMutex(uniqueKey(t), leasehold.WithTTL(ttl))
	before := metric(t, srv.url(), "leasehold_lock_renewals_total")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * ttl)
	select {
	case <-m.Lost():
		t.Fatal("lost while the server was reachable")
	default:
	}
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	renewals := metric(t, srv.url(), "leasehold_lock_renewals_total") - before
	perTTL := renewals / 10
	t.Logf("keep-alive traffic: %.0f renewals in 10 TTLs of %v: %.2f per lease per TTL", renewals, ttl, perTTL)
	if perTTL < 2 || perTTL > 4 {
		t.Fatalf("%.2f renewals per TTL, want 2 to 4", perTTL)
	}
}
