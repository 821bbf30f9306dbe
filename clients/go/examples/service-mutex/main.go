// Command service-mutex is a cloud controller's per-service lock across
// processes: two processes, each with goroutines racing EnsureLoadBalancer and
// UpdateLoadBalancer for the same services, serialised per service by a
// leasehold KeyedMutex. It checks that no two ever run at once for one
// service (every critical section is recorded with its fencing token and
// the recordings of both processes are compared), that fencing tokens only
// grow per service, and that memory stays flat as N services come and go
// (the KeyedMutex keeps nothing per service once it is unlocked).
//
//	service-mutex -server http://127.0.0.1:8474 -services 100000
//
// It exits 1 when an invariant fails.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func main() {
	server := flag.String("server", envOr("LEASEHOLD_URL", leasehold.DefaultURL), "leasehold server URL")
	services := flag.Int("services", 100000, "how many services come and go")
	workers := flag.Int("workers", 8, "goroutines per process (each races Ensure and Update)")
	processes := flag.Int("processes", 2, "controller processes")
	maxGrowth := flag.Int64("max-heap-growth", 2<<20, "bytes a process's live heap may grow between 10% and 100% of the services")
	child := flag.String("child", "", "(internal) run as one controller process, recording to this file")
	flag.Parse()
	if *child != "" {
		if err := controller(*server, *services, *workers, *child, *maxGrowth); err != nil {
			fmt.Fprintln(os.Stderr, "controller:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*server, *services, *workers, *processes, *maxGrowth); err != nil {
		fmt.Fprintln(os.Stderr, "service-mutex: FAILED:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// run starts the controller processes, then checks their recordings.
func run(server string, services, workers, processes int, maxGrowth int64) error {
	dir, err := os.MkdirTemp("", "service-mutex")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, processes)
	files := make([]string, processes)
	for p := 0; p < processes; p++ {
		files[p] = filepath.Join(dir, fmt.Sprintf("controller-%d.log", p))
		cmd := exec.Command(self, "-server", server, "-services", fmt.Sprint(services),
			"-workers", fmt.Sprint(workers), "-max-heap-growth", fmt.Sprint(maxGrowth), "-child", files[p])
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		wg.Add(1)
		go func(p int) { defer wg.Done(); errs[p] = cmd.Run() }(p)
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			return fmt.Errorf("controller process %d: %w", p, err)
		}
	}
	n, err := checkRecordings(files)
	if err != nil {
		return err
	}
	c, err := leasehold.New(server)
	if err != nil {
		return err
	}
	page, err := c.ListLocks(context.Background(), "svc/", leasehold.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if len(page.Items) != 0 {
		return fmt.Errorf("locks left on the server after every service went: %s", page.Items[0].Key)
	}
	fmt.Printf("service-mutex: OK: %d processes, %d services, %d reconciles, never two at once per service, fencing tokens growing, in %v\n",
		processes, services, n, time.Since(start).Round(time.Millisecond))
	return nil
}

type section struct {
	token      int64
	start, end int64
}

// checkRecordings merges every process's critical sections per service and
// fails on an overlap or a fencing token that did not grow.
func checkRecordings(files []string) (int, error) {
	bySvc := map[int][]section{}
	total := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var svc int
			var s section
			if _, err := fmt.Sscanf(sc.Text(), "%d %d %d %d", &svc, &s.token, &s.start, &s.end); err != nil {
				fh.Close()
				return 0, fmt.Errorf("%s: %q: %w", f, sc.Text(), err)
			}
			bySvc[svc] = append(bySvc[svc], s)
			total++
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return 0, err
		}
	}
	for svc, ss := range bySvc {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			if ss[i].start < ss[i-1].end {
				return 0, fmt.Errorf("service %d: two reconciles at once (fencing tokens %d and %d)", svc, ss[i-1].token, ss[i].token)
			}
			if ss[i].token <= ss[i-1].token {
				return 0, fmt.Errorf("service %d: fencing token %d after %d", svc, ss[i].token, ss[i-1].token)
			}
		}
	}
	return total, nil
}

// controller is one process: its workers take services in order (so the
// processes race on the same ones) and run Ensure and Update concurrently
// on each, under the service's lock.
func controller(server string, services, workers int, out string, maxGrowth int64) error {
	c, err := leasehold.New(server)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	rec := &recorder{w: bufio.NewWriterSize(f, 1<<16)}
	km := c.NewKeyedMutex("svc/", leasehold.WithTTL(10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	var next int64 = -1
	var failed atomic.Value
	var baseline uint64
	var wg sync.WaitGroup
	checkpoint := services / 10
	var mark sync.Once
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for failed.Load() == nil {
				svc := int(atomic.AddInt64(&next, 1))
				if svc >= services {
					return
				}
				if svc == checkpoint {
					mark.Do(func() { baseline = liveHeap() })
				}
				var both sync.WaitGroup
				for _, op := range []string{"ensure", "update"} {
					both.Add(1)
					go func(op string) {
						defer both.Done()
						if err := reconcile(ctx, km, c, rec, svc); err != nil {
							failed.Store(fmt.Errorf("%s service %d: %w", op, svc, err))
						}
					}(op)
				}
				both.Wait()
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	if err := rec.flush(); err != nil {
		return err
	}
	after := liveHeap()
	growth := int64(after) - int64(baseline)
	fmt.Printf("controller %d: live heap %.2f MiB after %d services, %.2f MiB after %d (growth %+d bytes)\n",
		os.Getpid(), mib(baseline), checkpoint, mib(after), services, growth)
	if growth > maxGrowth {
		return fmt.Errorf("memory grew by %d bytes as services came and went (bound %d)", growth, maxGrowth)
	}
	return nil
}

// reconcile is EnsureLoadBalancer or UpdateLoadBalancer: under the service's
// lock, with its fencing token, checked still current before the lock is
// given back.
func reconcile(ctx context.Context, km *leasehold.KeyedMutex, c *leasehold.Client, rec *recorder, svc int) error {
	key := fmt.Sprint(svc)
	m, err := km.Lock(ctx, key)
	if err != nil {
		return err
	}
	start := time.Now().UnixNano()
	token := m.FencingToken()
	runtime.Gosched() // the cloud API call
	select {
	case <-m.Lost():
		return fmt.Errorf("lock lost mid-reconcile")
	default:
	}
	end := time.Now().UnixNano()
	rec.add(svc, token, start, end)
	return m.Unlock(ctx)
}

type recorder struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (r *recorder) add(svc int, token, start, end int64) {
	r.mu.Lock()
	fmt.Fprintf(r.w, "%d %d %d %d\n", svc, token, start, end)
	r.mu.Unlock()
}

func (r *recorder) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.Flush()
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
