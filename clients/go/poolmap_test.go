package leasehold_test

import (
	"testing"
	"time"
)

func TestPoolMapTellsReservedBlocksFromFreeOnes(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	if _, err := c.PutPool(ctx, "lab", "10.0.0.0/16", nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Reserve(ctx, "lab", 24); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.PoolMap(ctx, "lab", 24)
	if err != nil {
		t.Fatal(err)
	}
	if m.CIDR != "10.0.0.0/16" || m.PrefixLen != 24 || m.Blocks != "256" || len(m.Runs) != 2 {
		t.Fatalf("%+v", m)
	}
	first, rest := m.Runs[0], m.Runs[1]
	if first.First != "10.0.0.0/24" || first.Count != "3" || first.State != "reserved" || first.Reserved != "256" {
		t.Fatalf("%+v", first)
	}
	if rest.First != "10.0.3.0/24" || rest.Count != "253" || rest.State != "free" {
		t.Fatalf("%+v", rest)
	}
	if _, err := c.PoolMap(ctx, "lab", 8); err == nil {
		t.Fatal("a map coarser than its pool")
	}
}
