package leasehold_test

import (
	"context"
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
