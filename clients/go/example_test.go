package leasehold_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// A controller serialises reconciles per service across processes.
func ExampleClient_NewKeyedMutex() {
	c, err := leasehold.New("127.0.0.1:8474")
	if err != nil {
		log.Fatal(err)
	}
	services := c.NewKeyedMutex("svc/", leasehold.WithTTL(15*time.Second))
	ensure := func(ctx context.Context, uid string) error {
		m, err := services.Lock(ctx, uid)
		if err != nil {
			return err
		}
		defer m.Unlock(context.Background())
		select {
		case <-m.Lost():
			return errors.New("lost the service's lock")
		default:
		}
		fmt.Println("reconciling", uid, "with fencing token", m.FencingToken())
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ensure(ctx, "3f2a"); err != nil {
		log.Print(err)
	}
}

// A network creator takes a free /24 that skips this host's own networks,
// and confirms it once the network exists.
func ExampleClient_Reserve() {
	c, err := leasehold.New("http://127.0.0.1:8474")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	r, err := c.Reserve(ctx, "docker", 24, leasehold.ExcludeLocal(), leasehold.WithTTL(time.Minute))
	if leasehold.IsPoolExhausted(err) {
		log.Fatal("no /24 left")
	} else if err != nil {
		log.Fatal(err)
	}
	if err := createNetwork(r.Subnet); err != nil {
		_ = c.ReleaseReservation(ctx, r)
		log.Fatal(err)
	}
	if _, err := c.Confirm(ctx, r); err != nil {
		log.Fatal(err)
	}
}

func createNetwork(subnet string) error { return nil }

// A refusal carries the problem's fields.
func ExampleProblem() {
	c, _ := leasehold.New("http://127.0.0.1:8474")
	_, err := c.Acquire(context.Background(), "jobs/backup")
	var p *leasehold.Problem
	if errors.As(err, &p) && p.Type == leasehold.TypeLockHeld {
		fmt.Printf("held by %s; retry in %v\n", p.Holder, p.RetryAfter)
	}
}

// A worker joins a group with what it can do, kept alive in the background;
// a scheduler lists the group, then watches it from the page's revision:
// every later join, update and leave arrives once, none the listing shows.
func ExampleClient_Join() {
	c, err := leasehold.New("127.0.0.1:8474")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.CreateGroup(ctx, "workers", nil); err != nil {
		log.Fatal(err)
	}
	m, err := c.Join(ctx, "workers", "node-7", leasehold.WithTTL(30*time.Second),
		leasehold.WithCapabilities(map[string]int{"gpus": 2}))
	if err != nil {
		log.Fatal(err) // IsMemberExists: another holder is node-7
	}
	defer m.Leave(context.Background())

	page, err := c.ListMembers(ctx, "workers", leasehold.ListOptions{Limit: 1000})
	if err != nil {
		log.Fatal(err)
	}
	live := map[string]json.RawMessage{}
	for _, it := range page.Items {
		live[it.Member] = it.Capabilities
	}
	w := c.Watch(ctx, leasehold.WatchOptions{Group: "workers", Since: page.Revision})
	for ev := range w.Events() {
		switch ev.Type {
		case leasehold.EventMemberJoined, leasehold.EventMemberUpdated:
			info, err := c.Member(ctx, "workers", ev.Member)
			if err == nil {
				live[ev.Member] = info.Capabilities
			}
		case leasehold.EventMemberLeft:
			delete(live, ev.Member)
		}
		fmt.Println(ev.Revision, ev.Type, ev.Member, ev.Reason, len(live))
	}
}
