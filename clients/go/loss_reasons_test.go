package leasehold_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold/clients/go"
)

// The table of loss reasons (README, "A lease's life"): each server answer a
// renewal can get, and the reason a kept lease ends with. The Python
// client's tests (tests/test_loss_reasons.py) hold the same rows.
//
// Each answer is a real server's, recorded by provoking it (a lease released
// elsewhere, a session closed, a token without the right, …); an HTTP front
// between the Mutex and the server answers its next renewals with it.

// answer is one answer of the server, as it came.
type answer struct {
	status     int
	ctype      string
	retryAfter string
	body       []byte
}

// renewalFront passes every request on to the server, except lock renewals
// while an answer is set (or drop: the connection is closed unanswered).
type renewalFront struct {
	*httptest.Server
	mu       sync.Mutex
	answer   *answer
	drop     bool
	answered atomic.Int32
}

func startRenewalFront(t *testing.T, target string) *renewalFront {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	f := &renewalFront{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		a, drop := f.answer, f.drop
		f.mu.Unlock()
		if (a == nil && !drop) || !strings.HasSuffix(r.URL.Path, "/renew") {
			rp.ServeHTTP(w, r)
			return
		}
		f.answered.Add(1)
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if a.ctype != "" {
			w.Header().Set("Content-Type", a.ctype)
		}
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	t.Cleanup(f.Close)
	return f
}

// set makes the front answer renewals with a (nil: pass them on) or, with
// drop, close their connections unanswered.
func (f *renewalFront) set(a *answer, drop bool) {
	f.mu.Lock()
	f.answer, f.drop = a, drop
	f.mu.Unlock()
}

// rowServer is a server that requires API tokens, with the tokens the rows use.
type rowServer struct {
	t                    *testing.T
	srv                  *server
	holder, reader, slow string
}

func startRowServer(t *testing.T) *rowServer {
	srv, secrets := startServerWithTokens(t,
		[]string{"--name", "holder", "--lock-prefix", ""},
		[]string{"--name", "reader", "--lock-prefix", "", "--read-only"},
		[]string{"--name", "slow", "--lock-prefix", "", "--max-writes-per-second", "1"})
	return &rowServer{t: t, srv: srv, holder: secrets[0], reader: secrets[1], slow: secrets[2]}
}

// call sends one request with token and returns the answer as it came.
func (r *rowServer) call(method, path string, body any, token string) answer {
	r.t.Helper()
	var in io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		in = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, r.srv.url()+path, in)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), data}
}

// grant sends one request that must succeed and reads its id and token.
func (r *rowServer) grant(method, path string, body any) (id, token string) {
	r.t.Helper()
	a := r.call(method, path, body, r.holder)
	var out struct{ ID, Token string }
	if a.status >= 300 || json.Unmarshal(a.body, &out) != nil {
		r.t.Fatalf("%s %s: %d %s", method, path, a.status, a.body)
	}
	return out.ID, out.Token
}

func (r *rowServer) closedSession() string {
	id, token := r.grant("POST", "/v1/sessions", map[string]any{"holder": "row", "ttl_ms": 10000})
	if a := r.call("POST", "/v1/sessions/"+id+"/close", map[string]any{"token": token}, r.holder); a.status != 204 {
		r.t.Fatalf("close: %d %s", a.status, a.body)
	}
	return id
}

// reasonRows: row of the table → how a real server gives that answer, and
// the reason it ends a lease with.
var reasonRows = []struct {
	row     string
	provoke func(r *rowServer) answer
	reason  error
}{
	{"409 lease-lost", func(r *rowServer) answer {
		_, token := r.grant("POST", "/v1/locks/rows%2Freleased/acquire", map[string]any{"holder": "row", "ttl_ms": 60000})
		r.call("POST", "/v1/locks/rows%2Freleased/release", map[string]any{"token": token}, r.holder)
		return r.call("POST", "/v1/locks/rows%2Freleased/renew", map[string]any{"token": token}, r.holder)
	}, leasehold.ErrReleasedElsewhere},
	{"409 session-lost", func(r *rowServer) answer {
		id, token := r.grant("POST", "/v1/sessions", map[string]any{"holder": "row", "ttl_ms": 10000})
		r.call("POST", "/v1/sessions/"+id+"/close", map[string]any{"token": token}, r.holder)
		return r.call("POST", "/v1/locks/rows%2Fbound/acquire",
			map[string]any{"holder": "row", "session": map[string]any{"id": id, "token": token}}, r.holder)
	}, leasehold.ErrSessionEnded},
	{"404 lock-not-found", func(r *rowServer) answer {
		return r.call("GET", "/v1/locks/rows%2Fnobody", nil, r.holder)
	}, leasehold.ErrReleasedElsewhere},
	{"404 session-not-found", func(r *rowServer) answer {
		return r.call("GET", "/v1/sessions/"+r.closedSession(), nil, r.holder)
	}, leasehold.ErrReleasedElsewhere},
	{"404 group-not-found", func(r *rowServer) answer {
		return r.call("GET", "/v1/groups/no-such-group", nil, r.holder)
	}, leasehold.ErrReleasedElsewhere},
	{"401 unauthorized", func(r *rowServer) answer {
		return r.call("POST", "/v1/locks/rows%2Fx/renew", map[string]any{"token": "x"}, "revoked")
	}, leasehold.ErrRefused},
	{"403 forbidden", func(r *rowServer) answer {
		return r.call("POST", "/v1/locks/rows%2Fx/renew", map[string]any{"token": "x"}, r.reader)
	}, leasehold.ErrRefused},
	{"400 invalid-request", func(r *rowServer) answer {
		return r.call("POST", "/v1/locks/rows%2Fx/renew", map[string]any{"token": "x", "ttl_ms": -1}, r.holder)
	}, leasehold.ErrRefused},
}

// Every reason a renewal's answer ends a lease with, one row at a time: the
// answer is the server's, its Err matches the row's reason alone, and the
// server's *Problem is there for errors.As.
func TestARenewalAnsweredSoEndsTheLeaseWithItsReason(t *testing.T) {
	rs := startRowServer(t)
	reasons := []error{leasehold.ErrExpired, leasehold.ErrReleasedElsewhere, leasehold.ErrRefused,
		leasehold.ErrSessionEnded, leasehold.ErrUnlocked}
	for _, row := range reasonRows {
		row := row
		t.Run(row.row, func(t *testing.T) {
			rs.t = t
			a := row.provoke(rs)
			status, problem, _ := strings.Cut(row.row, " ")
			var doc struct{ Type string }
			_ = json.Unmarshal(a.body, &doc)
			if want := "/problems/" + problem; status != strconv.Itoa(a.status) || doc.Type != want {
				t.Fatalf("the server answered %d %s, not %s", a.status, a.body, row.row)
			}
			front := startRenewalFront(t, rs.srv.url())
			c, err := leasehold.New(front.URL, leasehold.WithToken(rs.holder))
			if err != nil {
				t.Fatal(err)
			}
			const ttl = 900 * time.Millisecond
			ctx := ctxT(t, 10*time.Second)
			m := c.NewMutex("rows/"+row.row, leasehold.WithTTL(ttl))
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			front.set(&a, false)
			select {
			case <-m.Lost():
			case <-time.After(ttl):
				t.Fatalf("not lost a TTL after the renewals were answered %d", a.status)
			}
			var p *leasehold.Problem
			if !errors.Is(m.Err(), row.reason) || !errors.As(m.Err(), &p) || p.Status != a.status {
				t.Fatalf("Err: %v, want %v", m.Err(), row.reason)
			}
			for _, other := range reasons {
				if other != row.reason && errors.Is(m.Err(), other) {
					t.Fatalf("Err %v also matches %v", m.Err(), other)
				}
			}
			front.set(nil, false)
			_ = m.Unlock(ctx)
		})
	}
}

// The answers that are retried (429, a proxy's 5xx, no answer at all): the
// lease lives on when a later renewal is confirmed, and is lost only at its
// deadline minus the margin, ErrExpired, when none is.
func TestARenewalAnsweredSoIsRetriedUntilTheDeadline(t *testing.T) {
	rs := startRowServer(t)
	rows := []struct {
		row     string
		provoke func() (answer, bool)
	}{
		{"429 rate-limited", func() (answer, bool) {
			for i := 0; i < 5; i++ {
				a := rs.call("POST", "/v1/locks/rows%2Fx/renew", map[string]any{"token": "x"}, rs.slow)
				if a.status == 429 {
					return a, false
				}
			}
			rs.t.Fatal("no 429 after 5 writes at 1 a second")
			return answer{}, false
		}},
		{"502 from a proxy (no problem)", func() (answer, bool) {
			return answer{status: 502, ctype: "text/plain", body: []byte("bad gateway")}, false
		}},
		{"no answer (connection dropped)", func() (answer, bool) { return answer{}, true }},
	}
	for _, row := range rows {
		row := row
		t.Run(row.row, func(t *testing.T) {
			rs.t = t
			a, drop := row.provoke()
			front := startRenewalFront(t, rs.srv.url())
			c, err := leasehold.New(front.URL, leasehold.WithToken(rs.holder),
				leasehold.WithRetry(leasehold.RetryPolicy{Attempts: 1}))
			if err != nil {
				t.Fatal(err)
			}
			const ttl = 1500 * time.Millisecond
			ctx := ctxT(t, 10*time.Second)
			m := c.NewMutex("rows/"+row.row, leasehold.WithTTL(ttl))
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			front.set(&a, drop)
			time.Sleep(ttl/3 + 400*time.Millisecond) // a renewal or two get it
			if front.answered.Load() == 0 {
				t.Fatal("no renewal was answered so")
			}
			front.set(nil, false)
			time.Sleep(ttl/3 + 300*time.Millisecond) // the next renewal is confirmed
			if m.Err() != nil {
				t.Fatalf("lost after a retried answer: %v", m.Err())
			}
			front.set(&a, drop)
			select {
			case <-m.Lost():
			case <-time.After(ttl + 500*time.Millisecond):
				t.Fatal("never said lost")
			}
			if !errors.Is(m.Err(), leasehold.ErrExpired) {
				t.Fatalf("Err: %v, want ErrExpired", m.Err())
			}
			front.set(nil, false)
			_ = m.Unlock(ctx)
		})
	}
}
