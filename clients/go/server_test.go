package leasehold_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// server is a real leasehold server from this checkout's binary, on a random
// port with a fresh database file.
type server struct {
	t    *testing.T
	bin  string
	db   string
	addr string
	cmd  *exec.Cmd
	log  *os.File
}

func binary(t testing.TB) string {
	bin := os.Getenv("LEASEHOLD_BIN")
	if bin == "" {
		bin = filepath.Join("..", "..", "target", "debug", "leasehold")
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("no leasehold binary at %s (build it with `cargo build`, or set LEASEHOLD_BIN): %v", abs, err)
	}
	return abs
}

func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	dir := t.TempDir()
	s := &server{t: t, bin: binary(t), db: filepath.Join(dir, "leasehold.db"), addr: freePort(t)}
	s.start(args...)
	t.Cleanup(s.stop)
	return s
}

func (s *server) start(args ...string) {
	s.t.Helper()
	logPath := s.db + ".log"
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	s.log = f
	s.cmd = exec.Command(s.bin, append([]string{"serve", "--listen", s.addr, "--db", s.db}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = f, f
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + s.addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, _ := os.ReadFile(logPath)
	s.t.Fatalf("the server did not become ready on %s:\n%s", s.addr, data)
}

func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
	s.log.Close()
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) client(t testing.TB, opts ...leasehold.ClientOption) *leasehold.Client {
	c, err := leasehold.New(s.url(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// proxy forwards TCP to a server until cut: then every connection is closed
// and new ones are refused, as when the server is unreachable.
type proxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	// lose is how many of the next connections lose their answer: the
	// request reaches the server, the connection is cut as the answer
	// starts back.
	lose int
}

func startProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) url() string { return "http://" + p.l.Addr().String() }

func (p *proxy) serve() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.mu.Lock()
		lose := p.lose > 0
		if lose {
			p.lose--
		}
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		if lose {
			go func() {
				var b [1]byte
				_, _ = out.Read(b[:])
				in.Close()
				out.Close()
			}()
			continue
		}
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

// loseAnswers makes the next n connections lose their answers.
func (p *proxy) loseAnswers(n int) {
	p.mu.Lock()
	p.lose = n
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.l.Close()
	for c := range p.conns {
		c.Close()
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func uniqueKey(t testing.TB) string {
	return fmt.Sprintf("test/%s/%d", t.Name(), time.Now().UnixNano())
}

// TestMain runs the tests, or, in a child process started by a test, that
// child's part.
func TestMain(m *testing.M) {
	if url := os.Getenv("LEASEHOLD_HELPER_URL"); url != "" {
		n, _ := strconv.Atoi(os.Getenv("LEASEHOLD_HELPER_N"))
		if err := lockingChild(url, os.Getenv("LEASEHOLD_HELPER_KEY"), n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
