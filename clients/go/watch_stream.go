package leasehold

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// stream follows the events as server-sent events, reopening the stream
// after the last revision delivered whenever it drops.
func (w *Watcher) stream(ctx context.Context, c *Client, opts WatchOptions) {
	since, started := opts.Since, !opts.FromNow
	failures := 0
	for {
		var err error
		if !started {
			// From now on: pin "now" to a revision, so that a reconnect
			// misses nothing that happened in between. A refusal of it ends
			// the watch as a refusal of the stream would.
			var rev int64
			if rev, err = c.Revision(ctx); err == nil {
				since, started = rev, true
			}
		}
		if started {
			var delivered bool
			delivered, err = w.streamOnce(ctx, c, opts, &since)
			if delivered {
				failures = 0
			}
		}
		failures++
		if !w.retryOrFinish(ctx, c, err, failures) {
			return
		}
	}
}

// streamOnce reads one stream until it ends. It reports whether it got an
// answer of 200, and a refusal as a *Problem.
func (w *Watcher) streamOnce(ctx context.Context, c *Client, opts WatchOptions, since *int64) (bool, error) {
	q := url.Values{}
	if opts.Prefix != "" {
		q.Set("prefix", opts.Prefix)
	}
	if opts.Pool != "" {
		q.Set("pool", opts.Pool)
	}
	if opts.Group != "" {
		q.Set("group", opts.Group)
	}
	h := http.Header{}
	h.Set("Accept", "text/event-stream")
	h.Set("Last-Event-ID", strconv.FormatInt(*since, 10))
	req, err := c.request(ctx, &call{method: http.MethodGet, path: "/v1/events", query: q, header: h}, nil)
	if err != nil {
		return false, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, &TransportError{Op: "GET /v1/events", Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return false, parseProblem(resp, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() == 0 {
				continue
			}
			var e Event
			err := json.Unmarshal([]byte(data.String()), &e)
			data.Reset()
			if err != nil || e.Revision <= *since {
				continue
			}
			if !w.deliver(ctx, e) {
				return true, ctx.Err()
			}
			*since = e.Revision
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return true, &TransportError{Op: "GET /v1/events", Err: io.ErrUnexpectedEOF}
}
