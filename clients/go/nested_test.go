package leasehold_test

import (
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func intp(n int) *int { return &n }

func TestNestedPoolsNameTheirParentChildrenAndRules(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	top := leasehold.PoolOptions{Rules: &leasehold.PoolRules{MaxPrefixLen: intp(28)}}
	if _, err := c.PutPoolWith(ctx, "plan", "10.0.0.0/16", top); err != nil {
		t.Fatal(err)
	}
	eu := leasehold.PoolOptions{Parent: "plan", Labels: map[string]string{"region": "eu"},
		Rules: &leasehold.PoolRules{DefaultPrefixLen: intp(24), RequiredLabels: []string{"env"}}}
	child, err := c.PutPoolWith(ctx, "eu", "10.0.4.0/22", eu)
	if err != nil {
		t.Fatal(err)
	}
	if child.Parent == nil || *child.Parent != "plan" || child.Depth != 1 || child.Labels["region"] != "eu" {
		t.Fatalf("%+v", child)
	}
	r := child.Rules
	if r == nil || r.MaxPrefixLen == nil || *r.MaxPrefixLen != 28 || *r.DefaultPrefixLen != 24 ||
		len(r.RequiredLabels) != 1 || r.RequiredLabels[0] != "env" {
		t.Fatalf("effective rules: %+v", r)
	}
	parent, err := c.GetPool(ctx, "plan")
	if err != nil {
		t.Fatal(err)
	}
	want := []leasehold.PoolChild{{Name: "eu", CIDR: "10.0.4.0/22"}}
	if parent.Parent != nil || parent.Depth != 0 || len(parent.Children) != 1 || parent.Children[0] != want[0] ||
		parent.AllocatedCount != 1 {
		t.Fatalf("%+v", parent)
	}
	page, err := c.ListPools(ctx, leasehold.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].Name != "eu" || page.Items[0].Depth != 1 {
		t.Fatalf("%+v", page.Items)
	}
}

func TestNestedPoolsRefuseWithTypedErrors(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	top := leasehold.PoolOptions{Rules: &leasehold.PoolRules{MaxPrefixLen: intp(26), RequiredLabels: []string{"env"}}}
	if _, err := c.PutPoolWith(ctx, "plan", "10.0.0.0/16", top); err != nil {
		t.Fatal(err)
	}
	wider := leasehold.PoolOptions{Parent: "plan", Rules: &leasehold.PoolRules{MaxPrefixLen: intp(28)}}
	_, err := c.PutPoolWith(ctx, "eu", "10.0.4.0/22", wider)
	if !leasehold.IsRuleConflict(err) || leasehold.AsProblem(err).Rule != "max_prefix_len" {
		t.Fatalf("a wider rule: %v", err)
	}
	_, err = c.Reserve(ctx, "plan", 24)
	if !leasehold.IsRuleViolated(err) || leasehold.AsProblem(err).Rule != "required_labels" {
		t.Fatalf("a missing label: %v", err)
	}
	_, err = c.Reserve(ctx, "plan", 28, leasehold.WithLabels(map[string]string{"env": "prod"}))
	if !leasehold.IsRuleViolated(err) || leasehold.AsProblem(err).Rule != "max_prefix_len" {
		t.Fatalf("a longer prefix: %v", err)
	}
	if _, err := c.PutPoolWith(ctx, "eu", "10.0.4.0/22", leasehold.PoolOptions{Parent: "plan"}); err != nil {
		t.Fatal(err)
	}
	err = c.DeletePool(ctx, "plan")
	if !leasehold.IsPoolInUse(err) {
		t.Fatalf("a parent deleted: %v", err)
	}
}

func TestReserveBatchTakesAllOrNoneAndReplaysWhole(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	rules := &leasehold.PoolRules{DefaultPrefixLen: intp(24)}
	if _, err := c.PutPoolWith(ctx, "lab", "10.0.0.0/22", leasehold.PoolOptions{Rules: rules}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"env": "test"}
	key := leasehold.WithIdempotencyKey("batch-" + uniqueKey(t))
	items, err := c.ReserveBatch(ctx, "lab", 0, 3, key, leasehold.WithLabels(labels))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || items[0].Subnet != "10.0.0.0/24" || items[2].Subnet != "10.0.2.0/24" ||
		items[1].Labels["env"] != "test" || items[0].Token == "" || items[0].Replayed {
		t.Fatalf("%+v", items)
	}
	again, err := c.ReserveBatch(ctx, "lab", 0, 3, key, leasehold.WithLabels(labels))
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 3 || !again[0].Replayed {
		t.Fatalf("replay: %+v", again)
	}
	for i := range items {
		if again[i].ID != items[i].ID || again[i].Subnet != items[i].Subnet || again[i].Token != items[i].Token {
			t.Fatalf("replay %d: %+v against %+v", i, again[i], items[i])
		}
	}
	_, err = c.ReserveBatch(ctx, "lab", 24, 2)
	if !leasehold.IsPoolExhausted(err) {
		t.Fatalf("two blocks where one is left: %v", err)
	}
	page, err := c.ListReservations(ctx, "lab", leasehold.ListOptions{})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("all or none: %v %+v", err, page)
	}
	if _, err := c.ReserveBatch(ctx, "lab", 24, 257); err == nil {
		t.Fatal("a batch past 256")
	}
}

func TestPoolFreeNamesTheBlocksReservesTakeNext(t *testing.T) {
	srv := startServer(t)
	c := srv.client(t)
	ctx := ctxT(t, 20*time.Second)
	rules := &leasehold.PoolRules{DefaultPrefixLen: intp(24)}
	if _, err := c.PutPoolWith(ctx, "lab", "10.0.0.0/16", leasehold.PoolOptions{Rules: rules}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, "lab", 24); err != nil {
		t.Fatal(err)
	}
	free, err := c.PoolFree(ctx, "lab", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if free.PrefixLen != 24 || len(free.Blocks) != 2 || free.Blocks[0] != "10.0.1.0/24" {
		t.Fatalf("%+v", free)
	}
	next, err := c.Reserve(ctx, "lab", 24)
	if err != nil || next.Subnet != free.Blocks[0] {
		t.Fatalf("the next reserve took %v: %v", next, err)
	}
	if _, err := c.PoolFree(ctx, "nowhere", 24, 1); !leasehold.IsNotFound(err) {
		t.Fatalf("an unknown pool: %v", err)
	}
}
