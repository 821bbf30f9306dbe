// Command network-create is minikube's Docker network creation over
// leasehold: eight creator processes each reserve a free /24 out of one pool,
// skipping this host's own networks (ExcludeLocal), "create" the network,
// and confirm the reservation on success or release it on failure; one more
// creator is killed after reserving, and its reservation lapses by itself.
// It checks that every creator got a distinct /24, that none overlaps this
// host's networks, that every surviving /24 is confirmed and no failed one
// is held, and that the killed creator's /24 is free again after its TTL.
//
//	network-create -server http://127.0.0.1:8474
//
// It exits 1 when an invariant fails.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

func main() {
	server := flag.String("server", envOr("LEASEHOLD_URL", leasehold.DefaultURL), "leasehold server URL")
	pool := flag.String("pool", "", "pool name (default: a fresh one)")
	cidr := flag.String("cidr", "", "pool CIDR (default: the /20 holding this host's first IPv4 network, so that ExcludeLocal has something to skip, else 192.168.48.0/20)")
	creators := flag.Int("creators", 8, "concurrent creators")
	crashTTL := flag.Duration("crash-ttl", 2*time.Second, "reservation TTL of the creator that is killed")
	role := flag.String("role", "", "(internal) creator or crasher")
	index := flag.Int("index", 0, "(internal) creator number")
	flag.Parse()
	var err error
	switch *role {
	case "creator":
		err = creator(*server, *pool, *index)
	case "crasher":
		err = crasher(*server, *pool, *crashTTL)
	default:
		err = run(*server, *pool, *cidr, *creators, *crashTTL)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "network-create:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func client(server string, holder string) (*leasehold.Client, error) {
	return leasehold.New(server, leasehold.WithHolder(holder))
}

// creator reserves a /24 and creates its network; creators of an odd
// number fail their first creation (the Docker daemon refused it, say), give
// the /24 back and try again. It prints the subnet it ended with.
func creator(server, pool string, index int) error {
	c, err := client(server, fmt.Sprintf("creator-%d/pid-%d", index, os.Getpid()))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for attempt := 0; ; attempt++ {
		r, err := c.Reserve(ctx, pool, 24, leasehold.ExcludeLocal(), leasehold.WithTTL(time.Minute),
			leasehold.WithMetadata(map[string]any{"network": fmt.Sprintf("net-%d", index)}))
		if err != nil {
			return err
		}
		if attempt == 0 && index%2 == 1 {
			fmt.Printf("FAILED %s\n", r.Subnet)
			if err := c.ReleaseReservation(ctx, r); err != nil {
				return err
			}
			continue
		}
		if _, err := c.Confirm(ctx, r); err != nil {
			return err
		}
		fmt.Printf("CREATED %s %s\n", r.Subnet, r.ID)
		return nil
	}
}

// crasher reserves a /24, says which, and waits to be killed.
func crasher(server, pool string, ttl time.Duration) error {
	c, err := client(server, fmt.Sprintf("crasher/pid-%d", os.Getpid()))
	if err != nil {
		return err
	}
	r, err := c.Reserve(context.Background(), pool, 24, leasehold.ExcludeLocal(), leasehold.WithTTL(ttl))
	if err != nil {
		return err
	}
	fmt.Printf("RESERVED %s %s\n", r.Subnet, r.ID)
	time.Sleep(time.Hour)
	return nil
}

func defaultCIDR() string {
	locals, _ := leasehold.LocalNetworks()
	for _, s := range locals {
		_, n, err := net.ParseCIDR(s)
		if err != nil || n.IP.To4() == nil || n.IP.IsLoopback() {
			continue
		}
		if ones, _ := n.Mask.Size(); ones >= 20 && ones <= 24 {
			super := net.IPNet{IP: n.IP.Mask(net.CIDRMask(20, 32)), Mask: net.CIDRMask(20, 32)}
			return super.String()
		}
	}
	return "192.168.48.0/20"
}

func run(server, pool, cidr string, creators int, crashTTL time.Duration) error {
	if pool == "" {
		pool = fmt.Sprintf("docker-%d", time.Now().UnixNano()%1e9)
	}
	if cidr == "" {
		cidr = defaultCIDR()
	}
	c, err := client(server, "network-create")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.PutPool(ctx, pool, cidr, nil); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	// The crasher reserves first and is killed before it confirms.
	crash := exec.Command(self, "-server", server, "-pool", pool, "-role", "crasher", "-crash-ttl", crashTTL.String())
	crash.Stderr = os.Stderr
	crashOut, err := crash.StdoutPipe()
	if err != nil {
		return err
	}
	if err := crash.Start(); err != nil {
		return err
	}
	line, err := bufio.NewReader(crashOut).ReadString('\n')
	if err != nil {
		_ = crash.Process.Kill()
		return fmt.Errorf("the crasher reserved nothing: %w", err)
	}
	var crashedSubnet, crashedID string
	if _, err := fmt.Sscanf(line, "RESERVED %s %s", &crashedSubnet, &crashedID); err != nil {
		_ = crash.Process.Kill()
		return fmt.Errorf("crasher said %q", line)
	}
	_ = crash.Process.Kill()
	_ = crash.Wait()
	killedAt := time.Now()

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created = map[string]string{}
		failed  []string
		errs    []error
	)
	for i := 0; i < creators; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(self, "-server", server, "-pool", pool, "-role", "creator", "-index", fmt.Sprint(i))
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("creator %d: %w", i, err))
				return
			}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var subnet, id string
				switch {
				case strings.HasPrefix(l, "CREATED "):
					fmt.Sscanf(l, "CREATED %s %s", &subnet, &id)
					if other, dup := created[subnet]; dup {
						errs = append(errs, fmt.Errorf("creators %s and %d both created %s", other, i, subnet))
					}
					created[subnet] = fmt.Sprint(i)
				case strings.HasPrefix(l, "FAILED "):
					fmt.Sscanf(l, "FAILED %s", &subnet)
					failed = append(failed, subnet)
				}
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, "network-create:", err)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	if len(created) != creators {
		return fmt.Errorf("%d distinct networks created by %d creators", len(created), creators)
	}
	locals, err := leasehold.LocalNetworks()
	if err != nil {
		return err
	}
	for subnet := range created {
		_, n, _ := net.ParseCIDR(subnet)
		for _, l := range locals {
			_, ln, _ := net.ParseCIDR(l)
			if n.Contains(ln.IP) || ln.Contains(n.IP) {
				return fmt.Errorf("%s overlaps this host's network %s", subnet, l)
			}
		}
		if subnet == crashedSubnet {
			return fmt.Errorf("%s handed out while the crashed creator's reservation was live", subnet)
		}
	}
	// The server agrees: every created network is allocated, nothing else
	// but the crashed creator's reservation is held.
	page, err := c.ListReservations(ctx, pool, leasehold.ListOptions{})
	if err != nil {
		return err
	}
	for _, r := range page.Items {
		switch {
		case created[r.Subnet] != "":
			if r.State != leasehold.StateAllocated {
				return fmt.Errorf("%s is %s, not allocated", r.Subnet, r.State)
			}
			delete(created, r.Subnet)
		case r.ID == crashedID:
		default:
			return fmt.Errorf("%s is held (%s by %s) though no creator kept it", r.Subnet, r.State, r.Holder)
		}
	}
	if len(created) != 0 {
		return fmt.Errorf("created networks the server does not hold: %v", created)
	}
	// The killed creator's reservation lapses at its TTL.
	deadline := killedAt.Add(crashTTL + 5*time.Second)
	for {
		_, err := c.GetReservation(ctx, pool, crashedID)
		if leasehold.IsNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the killed creator's %s is still reserved %v after its TTL", crashedSubnet, time.Since(killedAt)-crashTTL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	again, err := c.ReserveSubnet(ctx, pool, crashedSubnet, leasehold.WithTTL(time.Second))
	if err != nil {
		return fmt.Errorf("the killed creator's %s is not free again: %w", crashedSubnet, err)
	}
	_ = c.ReleaseReservation(ctx, again)
	fmt.Printf("network-create: OK: pool %s (%s), %d creators got distinct /24s avoiding this host's networks %v, %d failed creations released, the killed creator's %s lapsed after %v\n",
		pool, cidr, creators, locals, len(failed), crashedSubnet, time.Since(killedAt).Round(10*time.Millisecond))
	return nil
}
