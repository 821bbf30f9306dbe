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
	"strings"
	"syscall"
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
	bin, err := binaryPath()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func binaryPath() (string, error) {
	bin := os.Getenv("LEASEHOLD_BIN")
	if bin == "" {
		bin = filepath.Join("..", "..", "target", "debug", "leasehold")
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("no leasehold binary at %s (build it with `cargo build`, or set LEASEHOLD_BIN): %v", abs, err)
	}
	return abs, nil
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

// startServerWithTokens starts a server that requires API tokens: one made
// by the binary for each of tokens (each the arguments of `token new`). It
// returns the server and the tokens' secrets, in order.
func startServerWithTokens(t *testing.T, tokens ...[]string) (*server, []string) {
	t.Helper()
	var secrets, entries []string
	for _, args := range tokens {
		out, err := exec.Command(binary(t), append([]string{"token", "new"}, args...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		secrets = append(secrets, lines[0])
		entries = append(entries, lines[len(lines)-1])
	}
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"tokens": [`+strings.Join(entries, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServer(t, "--auth-file", auth), secrets
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
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot stop
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

// pause stops the server process (SIGSTOP): it keeps its connections and
// accepts new ones in the kernel's backlog, and answers nothing, as a hung
// server does. resume (SIGCONT) lets it go on.
func (s *server) pause() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
}

func (s *server) resume() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) client(t testing.TB, opts ...leasehold.ClientOption) *leasehold.Client {
	c, err := leasehold.New(s.url(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
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
// child's part. The examples share one server of their own, named to them
// by LEASEHOLD_URL as it would be to a program.
func TestMain(m *testing.M) {
	if url := os.Getenv("LEASEHOLD_HELPER_URL"); url != "" {
		n, _ := strconv.Atoi(os.Getenv("LEASEHOLD_HELPER_N"))
		if err := lockingChild(url, os.Getenv("LEASEHOLD_HELPER_KEY"), n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	stop, err := exampleServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// exampleServer starts a server on a free port with a fresh database and
// sets LEASEHOLD_URL to it.
func exampleServer() (stop func(), err error) {
	bin, err := binaryPath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "leasehold-examples")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--db", filepath.Join(dir, "leasehold.db"))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				os.Setenv("LEASEHOLD_URL", "http://"+addr)
				return stop, nil
			}
		}
	}
	stop()
	return nil, fmt.Errorf("the examples' server did not become ready on %s", addr)
}
