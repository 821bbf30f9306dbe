// Command bench measures the Go client against the same server, side by
// side in one run, and prints (never asserts) what it finds:
//
//   - Mutex Lock+Unlock pairs/s against raw HTTP acquire+release pairs/s
//     sent from Go with the same transport (the client's cost over the wire
//     protocol; the target is at least 0.9×);
//
//   - a KeyedMutex over 100,000 keys: the live heap after every key was
//     locked and unlocked, against before (the target is within 1 MiB).
//
//     bench -server http://127.0.0.1:8474 -clients 16 -duration 5s -keys 100000
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func main() {
	server := flag.String("server", leasehold.DefaultURL, "leasehold server URL")
	clients := flag.Int("clients", 16, "concurrent goroutines, each on a key of its own")
	duration := flag.Duration("duration", 5*time.Second, "how long each measurement runs")
	rounds := flag.Int("rounds", 3, "alternating rounds of each measurement (the median is reported)")
	keys := flag.Int("keys", 100000, "distinct keys for the KeyedMutex memory measurement")
	flag.Parse()
	if err := run(*server, *clients, *duration, *rounds, *keys); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(server string, clients int, d time.Duration, rounds, keys int) error {
	transport := leasehold.NewHTTPTransport()
	hc := &http.Client{Transport: transport}
	c, err := leasehold.New(server, leasehold.WithHTTPClient(hc))
	if err != nil {
		return err
	}
	base := c.URL()
	var raw, mutex []float64
	for r := 0; r < rounds; r++ {
		n, err := measure(clients, d, func(g, i int) error { return rawPair(hc, base, fmt.Sprintf("bench/raw/%d", g)) })
		if err != nil {
			return fmt.Errorf("raw HTTP: %w", err)
		}
		raw = append(raw, n)
		ms := make([]*leasehold.Mutex, clients)
		for g := range ms {
			ms[g] = c.NewMutex(fmt.Sprintf("bench/mutex/%d", g), leasehold.WithTTL(30*time.Second))
		}
		n, err = measure(clients, d, func(g, i int) error {
			ctx := context.Background()
			if err := ms[g].Lock(ctx); err != nil {
				return err
			}
			return ms[g].Unlock(ctx)
		})
		if err != nil {
			return fmt.Errorf("Mutex: %w", err)
		}
		mutex = append(mutex, n)
		fmt.Printf("round %d: raw HTTP %.0f pairs/s, Mutex %.0f pairs/s\n", r+1, raw[r], mutex[r])
	}
	rm, mm := median(raw), median(mutex)
	fmt.Printf("%d clients, %v a measurement, median of %d rounds:\n", clients, d, rounds)
	fmt.Printf("  raw HTTP acquire+release: %8.0f pairs/s\n", rm)
	fmt.Printf("  Mutex Lock+Unlock:        %8.0f pairs/s (%.2f× raw; target ≥ 0.90×)\n", mm, mm/rm)

	before := liveHeap()
	km := c.NewKeyedMutex("bench/keyed/", leasehold.WithTTL(30*time.Second))
	var next int64 = -1
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for {
				i := atomic.AddInt64(&next, 1)
				if i >= int64(keys) {
					return
				}
				m, err := km.Lock(ctx, fmt.Sprint(i))
				if err != nil {
					errs <- err
					return
				}
				if err := m.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return fmt.Errorf("KeyedMutex: %w", err)
	}
	elapsed := time.Since(start)
	after := liveHeap()
	fmt.Printf("KeyedMutex over %d keys (%.0f Lock+Unlock/s): live heap %.3f MiB before, %.3f MiB after unlock (%+.3f MiB; target within 1 MiB)\n",
		keys, float64(keys)/elapsed.Seconds(), mib(before), mib(after), mib(after)-mib(before))
	return nil
}

// measure runs f in clients goroutines for d and returns calls per second.
func measure(clients int, d time.Duration, f func(g, i int) error) (float64, error) {
	var count int64
	var first atomic.Value
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				if err := f(g, i); err != nil {
					first.Store(err)
					return
				}
				atomic.AddInt64(&count, 1)
			}
		}(g)
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		return 0, err
	}
	return float64(count) / time.Since(start).Seconds(), nil
}

// rawPair is one acquire and one release as plain HTTP requests.
func rawPair(hc *http.Client, base, key string) error {
	body, _ := json.Marshal(map[string]any{"holder": "bench", "ttl_ms": 30000})
	resp, err := hc.Post(base+"/v1/locks/"+escapeKey(key)+"/acquire", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	var grant struct {
		Token string `json:"token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&grant)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("acquire: %d %v", resp.StatusCode, err)
	}
	body, _ = json.Marshal(map[string]string{"token": grant.Token})
	resp, err = hc.Post(base+"/v1/locks/"+escapeKey(key)+"/release", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("release: %d", resp.StatusCode)
	}
	return nil
}

func escapeKey(k string) string {
	var b bytes.Buffer
	for _, r := range []byte(k) {
		if r == '/' {
			b.WriteString("%2F")
		} else {
			b.WriteByte(r)
		}
	}
	return b.String()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
