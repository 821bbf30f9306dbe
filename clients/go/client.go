// Package leasehold is a client of the leasehold lease service: keyed locks
// with fencing tokens, sessions, elections, groups of members, a watch of
// every change, and subnet reservations.
//
// The patterns follow etcd's clientv3/concurrency and Consul's api: a Mutex
// whose lease is kept alive in the background and whose Lost channel closes
// when the lease is lost, a Session with a Done channel, and errors that are
// inspected with errors.As (a *Problem) or with helpers such as IsHeld.
//
// Every call takes a context.Context. Requests that fail to reach the server,
// and answers of 503 (and 429), are retried with jittered exponential backoff,
// honouring Retry-After. A grant (acquire, reserve) is only ever retried with
// an Idempotency-Key, so a retry returns the lease an earlier attempt was
// granted instead of a second one; the client draws one for every grant that
// names none.
package leasehold

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the server a client reaches when it is given no URL.
const DefaultURL = "http://127.0.0.1:8474"

// Client talks to one leasehold server. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	token  string
	hc     *http.Client
	holder string
	retry  RetryPolicy
}

// RetryPolicy says how often, and how patiently, a request is retried after a
// connection error, a 503 or a 429.
type RetryPolicy struct {
	// Attempts is the most attempts of one request (1: never retried).
	Attempts int
	// First is the backoff before the second attempt; it doubles each time.
	First time.Duration
	// Max bounds one backoff (and a Retry-After the server asks for).
	Max time.Duration
}

// DefaultRetry is the policy of a client made without WithRetry.
var DefaultRetry = RetryPolicy{Attempts: 8, First: 50 * time.Millisecond, Max: 2 * time.Second}

// New returns a client of the server at server ("http://host:port"; a URL
// without a scheme gets "http://"; empty: DefaultURL).
func New(server string, opts ...ClientOption) (*Client, error) {
	server = strings.TrimSpace(server)
	if server == "" {
		server = DefaultURL
	}
	lower := strings.ToLower(server)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		if strings.Contains(server, "://") {
			return nil, fmt.Errorf("leasehold: server URL %q: only http and https are spoken", server)
		}
		server = "http://" + server
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("leasehold: server URL %q: %w", server, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("leasehold: server URL %q names no host", server)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	c := &Client{base: u, hc: defaultHTTPClient(), holder: defaultHolder(), retry: DefaultRetry}
	for _, o := range opts {
		if o != nil {
			o.applyClient(c)
		}
	}
	if c.retry.Attempts < 1 {
		c.retry.Attempts = 1
	}
	return c, nil
}

// NewHTTPTransport is the transport a client uses unless given another: it
// keeps enough idle connections for many goroutines sharing one server.
func NewHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return t
}

func defaultHTTPClient() *http.Client { return &http.Client{Transport: NewHTTPTransport()} }

func defaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "go-client"
	}
	return fmt.Sprintf("%s/pid-%d", host, os.Getpid())
}

// Holder is the name this client gives its leases.
func (c *Client) Holder() string { return c.holder }

// URL is the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// newIdempotencyKey draws a fresh Idempotency-Key (128 random bits).
func newIdempotencyKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a time-derived
		// key still never repeats within this process.
		return strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.FormatInt(mrand.Int63(), 36)
	}
	return hex.EncodeToString(b[:])
}

// call is one request to the API.
type call struct {
	method string
	path   string // already escaped
	query  url.Values
	body   any
	header http.Header
	// grant marks a request that creates a lease: it is retried only when it
	// carries an Idempotency-Key.
	grant bool
	// sent is set to the moment the last attempt was sent, received to when
	// its answer arrived (both with their monotonic readings).
	sent, received time.Time
	// retried says whether an earlier attempt may have reached the server.
	retried bool
	// denialIsFinal returns a 429 to the caller instead of retrying it: a
	// rate limit's denial is the answer, not a fault.
	denialIsFinal bool
}

// do sends c (retrying as the policy says) and decodes a 2xx JSON answer into
// out (when out is not nil). It returns the status of the answer.
func (c *Client) do(ctx context.Context, cl *call, out any) (int, error) {
	var payload []byte
	if cl.body != nil {
		var err error
		if payload, err = json.Marshal(cl.body); err != nil {
			return 0, fmt.Errorf("leasehold: encoding the request: %w", err)
		}
	}
	retryable := !cl.grant || cl.header.Get("Idempotency-Key") != ""
	for attempt := 1; ; attempt++ {
		status, wait, err := c.once(ctx, cl, payload, out)
		if err == nil || !retryable || attempt >= c.retry.Attempts || wait < 0 {
			return status, err
		}
		cl.retried = true
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		if wait > c.retry.Max && c.retry.Max > 0 {
			wait = c.retry.Max
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return status, err
		case <-t.C:
		}
	}
}

// backoff is the jittered wait before attempt+1: a random time up to
// First·2^(attempt-1), at most Max ("full jitter").
func (c *Client) backoff(attempt int) time.Duration {
	d := c.retry.First << (attempt - 1)
	if d <= 0 || (c.retry.Max > 0 && d > c.retry.Max) {
		d = c.retry.Max
	}
	if d <= 0 {
		return 0
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(d)))
	if err != nil {
		return d / 2
	}
	return time.Duration(n.Int64()) + time.Millisecond
}

// once sends one attempt. wait is -1 when the error is final, 0 when it may
// be retried after a backoff, or the server's Retry-After.
func (c *Client) once(ctx context.Context, cl *call, payload []byte, out any) (int, time.Duration, error) {
	req, err := c.request(ctx, cl, payload)
	if err != nil {
		return 0, -1, err
	}
	cl.sent = time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, -1, ctx.Err()
		}
		return 0, 0, &TransportError{Op: cl.method + " " + cl.path, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	cl.received = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return resp.StatusCode, -1, ctx.Err()
		}
		return resp.StatusCode, 0, &TransportError{Op: cl.method + " " + cl.path, Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out != nil && len(data) > 0 {
			if err := json.Unmarshal(data, out); err != nil {
				return resp.StatusCode, -1, fmt.Errorf("leasehold: decoding the answer to %s %s: %w", cl.method, cl.path, err)
			}
		}
		return resp.StatusCode, -1, nil
	}
	p := parseProblem(resp, data)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests && cl.denialIsFinal:
		return resp.StatusCode, -1, p
	case resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusTooManyRequests:
		return resp.StatusCode, p.RetryAfter, p
	}
	return resp.StatusCode, -1, p
}

// request builds the HTTP request of cl.
func (c *Client) request(ctx context.Context, cl *call, payload []byte) (*http.Request, error) {
	u := *c.base
	u.RawPath = c.base.Path + cl.path
	u.Path, _ = url.PathUnescape(u.RawPath)
	if len(cl.query) > 0 {
		u.RawQuery = cl.query.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("leasehold: %w", err)
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, application/problem+json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// TransportError is a request that got no answer from the server (connection
// refused, reset, or cut), after every retry.
type TransportError struct {
	Op  string
	Err error
}

func (e *TransportError) Error() string { return "leasehold: " + e.Op + ": " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// IsUnreachable reports whether err is a request that got no answer.
func IsUnreachable(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

func escape(segment string) string { return url.PathEscape(segment) }

func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }
