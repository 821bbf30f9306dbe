package leasehold_test

// The examples of README.md, of the repository's README.md and of its
// docs/clients.md, character for character
// (TestReadmeGoBlocksAreTheseExamples checks it). go test runs
// each against a fresh server (TestMain starts it and sets LEASEHOLD_URL)
// and compares what it prints with its Output comment.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func ExampleNew() {
	hc := &http.Client{Transport: leasehold.NewHTTPTransport()} // no Timeout: Lock long-polls
	// LEASEHOLD_URL names the server, as it does for the command line;
	// unset, the client reaches http://127.0.0.1:8474.
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"),
		leasehold.WithToken(os.Getenv("LEASEHOLD_API_TOKEN")), // Authorization: Bearer, when set
		leasehold.WithHolder("controller-1"),                  // default: host/pid-N
		leasehold.WithHTTPClient(hc))                          // default: its own transport
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Holder())
	// Output: controller-1
}

func ExampleProblem() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Acquire(ctx, "jobs/report", leasehold.WithHolder("nightly")); err != nil {
		log.Fatal(err)
	}
	_, err = c.Acquire(ctx, "jobs/report") // held: a lock-held *Problem
	var p *leasehold.Problem
	if errors.As(err, &p) && p.Type == leasehold.TypeLockHeld {
		fmt.Println("held by", p.Holder, "- retry after", p.RetryAfter > 0) // p.ExpiresAt says until when
	}
	// Output: held by nightly - retry after true
}

func ExampleMutex() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	m := c.NewMutex("jobs/backup", leasehold.WithTTL(15*time.Second))
	if err := m.Lock(ctx); err != nil { // waits; ctx.Err() when ctx ends
		log.Fatal(err)
	}
	defer m.Unlock(context.Background()) // bounded by the lease's life, 1 s after a loss
	for _, chunk := range []string{"a", "b", "c"} {
		select {
		case <-m.Lost(): // closed the lost margin before the lease can end
			fmt.Println("stopped writing:", m.Err()) // errors.Is(err, leasehold.ErrExpired), …
			return
		default:
		}
		fmt.Println("wrote", chunk) // with m.FencingToken(), for the store to check
	}
	// Output:
	// wrote a
	// wrote b
	// wrote c
}

// Controller reconciles services: one reconcile of a service at a time,
// across every goroutine of every replica of the controller.
type Controller struct {
	services *leasehold.KeyedMutex
}

func (ctl *Controller) EnsureLoadBalancer(ctx context.Context, uid string) error {
	m, err := ctl.services.Lock(ctx, uid) // waits; gives up when ctx ends
	if err != nil {
		return err
	}
	defer m.Unlock(context.Background()) // nothing of the key is kept after this
	select {
	case <-m.Lost(): // closed before another can be granted the key
		return m.Err()
	default:
	}
	fmt.Println("ensuring the load balancer of", uid) // with m.FencingToken()
	return nil
}

func ExampleKeyedMutex() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL")) // "": http://127.0.0.1:8474
	if err != nil {
		log.Fatal(err)
	}
	ctl := &Controller{services: c.NewKeyedMutex("svc/", leasehold.WithTTL(15*time.Second))}
	if err := ctl.EnsureLoadBalancer(context.Background(), "3f2a"); err != nil {
		log.Fatal(err)
	}
	// Output: ensuring the load balancer of 3f2a
}

func ExampleSession() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	s, err := c.NewSession(ctx, leasehold.WithTTL(30*time.Second)) // kept alive in the background
	if err != nil {
		log.Fatal(err)
	}
	for _, vol := range []string{"vol-1", "vol-2", "vol-3"} {
		m := c.NewMutex("volumes/"+vol, leasehold.WithSession(s)) // no keep-alive of its own
		if err := m.Lock(ctx); err != nil {
			log.Fatal(err)
		}
	}
	info, err := s.Info(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(*info.Locks, "locks, one keep-alive")
	if err := s.Close(ctx); err != nil { // releases every lease bound to it
		log.Fatal(err)
	}
	<-s.Done() // closed when the session ends: closed, or lost (s.Err() says why)
	fmt.Println("closed here:", errors.Is(s.Err(), leasehold.ErrUnlocked))
	// Output:
	// 3 locks, one keep-alive
	// closed here: true
}

func ExampleElection() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	show := func(leader *leasehold.Lease) {
		if leader == nil {
			fmt.Println("no leader")
		} else {
			fmt.Println("leader:", leader.Holder)
		}
	}
	leaders := c.NewElection("jobs/scheduler").Observe(ctx) // the leader at start and at each change
	show(<-leaders)

	e := c.NewElection("jobs/scheduler", leasehold.WithTTL(10*time.Second), leasehold.WithHolder("scheduler-1"))
	lost := e.Lost()                        // valid before Campaign: the leadership it wins
	if err := e.Campaign(ctx); err != nil { // waits until this one leads
		log.Fatal(err)
	}
	show(<-leaders)
	if err := e.Resign(ctx); err != nil { // the next campaigner leads at once
		log.Fatal(err)
	}
	<-lost // closed when leadership ends: lost, or resigned
	fmt.Println("resigned:", errors.Is(e.Err(), leasehold.ErrUnlocked))
	show(<-leaders)
	// Output:
	// no leader
	// leader: scheduler-1
	// resigned: true
	// no leader
}

func ExampleClient_Join() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CreateGroup(ctx, "workers", map[string]any{"team": "net"}); err != nil {
		log.Fatal(err)
	}
	page, err := c.ListMembers(ctx, "workers", leasehold.ListOptions{Limit: 100}) // who is there
	if err != nil {
		log.Fatal(err)
	}
	w := c.Watch(ctx, leasehold.WatchOptions{Group: "workers", Since: page.Revision}) // and each change after

	m, err := c.Join(ctx, "workers", "node-7",
		leasehold.WithTTL(30*time.Second),                     // or leasehold.WithSession(s)
		leasehold.WithCapabilities(map[string]int{"gpus": 2})) // any JSON value
	if leasehold.IsMemberExists(err) {
		log.Fatal("another session or holder is node-7")
	} else if err != nil {
		log.Fatal(err)
	}
	if err := m.UpdateCapabilities(ctx, map[string]int{"gpus": 4}); err != nil {
		log.Fatal(err)
	}
	if err := m.Leave(ctx); err != nil { // m.Lost() closes, m.Err() is ErrUnlocked
		log.Fatal(err)
	}
	for ev := range w.Events() {
		fmt.Println(ev.Type, ev.Member)
		if ev.Type == leasehold.EventMemberLeft {
			break
		}
	}
	// Output:
	// group.member_joined node-7
	// group.member_updated node-7
	// group.member_left node-7
}

func ExampleClient_Watch() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := c.ListLocks(ctx, "deploy/", leasehold.ListOptions{}) // what is held now
	if err != nil {
		log.Fatal(err)
	}
	w := c.Watch(ctx, leasehold.WatchOptions{Prefix: "deploy/", Since: page.Revision}) // what changes after

	l, err := c.Acquire(ctx, "deploy/web")
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Release(ctx, "deploy/web", l.Token); err != nil {
		log.Fatal(err)
	}
	for ev := range w.Events() {
		fmt.Printf("%s %s reason=%q\n", ev.Type, ev.Key, ev.Reason)
		if ev.Type == leasehold.EventLockReleased {
			break
		}
	}
	if leasehold.IsHistoryCompacted(w.Err()) { // 410: list again, then watch from the new page
		log.Fatal(w.Err())
	}
	// Output:
	// lock.acquired deploy/web reason=""
	// lock.released deploy/web reason="released"
}

// createNetwork stands for the real work: docker network create --subnet ….
func createNetwork(ctx context.Context, name, subnet string) error { return nil }

func ExampleClient_Reserve() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.PutPool(ctx, "docker", "192.168.0.0/16", nil); err != nil { // or finds it as it is
		log.Fatal(err)
	}
	r, err := c.Reserve(ctx, "docker", 24, leasehold.ExcludeLocal(), leasehold.WithTTL(time.Minute))
	if err != nil {
		log.Fatal(err) // leasehold.IsPoolExhausted(err) when no /24 is left
	}
	if err := createNetwork(ctx, "minikube", r.Subnet); err != nil {
		_ = c.ReleaseReservation(ctx, r) // or let it lapse
		log.Fatal(err)
	}
	if r, err = c.Confirm(ctx, r); err != nil { // allocated: no longer expires
		log.Fatal(err)
	}
	fmt.Println(r.State)
	// Output: allocated
}

func ExampleLimiter() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	// 5,000 calls an hour to an upstream API, at most 100 at once, shared
	// by every process and replica that takes from it.
	if _, _, err := c.DefineLimit(ctx, "api/upstream", 5000, time.Hour, 100); err != nil {
		log.Fatal(err)
	}
	limiter := c.NewLimiter("api/upstream")
	if err := limiter.Wait(ctx, 10); err != nil { // a batch of 10 calls
		log.Fatal(err)
	}
	if !limiter.Allow(ctx) { // one more, now or not at all
		log.Fatal("denied")
	}
	info, err := c.Limit(ctx, "api/upstream")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Available)
	// Output: 89
}

func ExampleSemaphore() {
	c, err := leasehold.New(os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	// 8 GPUs, shared by every process and host that acquires gpu/pool.
	if _, _, err := c.SetCapacity(ctx, "gpu/pool", 8); err != nil {
		log.Fatal(err)
	}
	gpus := c.NewSemaphore("gpu/pool")
	if err := gpus.Acquire(ctx, 6); err != nil { // waits, strictly in turn
		log.Fatal(err)
	}
	fmt.Println(gpus.TryAcquire(4), gpus.TryAcquire(2)) // 4 do not fit now, 2 do
	gpus.Release(8)
	cp, err := c.Capacity(ctx, "gpu/pool")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cp.Permits, cp.Held)
	// Output:
	// false true
	// 8 0
}
