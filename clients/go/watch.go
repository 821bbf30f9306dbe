package leasehold

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Event is one change: a lease granted, updated or ended, a reservation
// confirmed, a session opened or ended, a group created or deleted, a member
// joined, updated or left.
type Event struct {
	Revision int64     `json:"revision"`
	Type     string    `json:"type"`
	At       time.Time `json:"at"`
	Key      string    `json:"key,omitempty"`
	Pool     string    `json:"pool,omitempty"`
	ID       string    `json:"id,omitempty"`
	Subnet   string    `json:"subnet,omitempty"`
	// Group is the group of a group.* event.
	Group string `json:"group,omitempty"`
	// Member is the member of a group.member_* event.
	Member       string `json:"member,omitempty"`
	Holder       string `json:"holder"`
	FencingToken int64  `json:"fencing_token,omitempty"`
	Session      string `json:"session,omitempty"`
	// Reason says why a lease, session or membership ended: released,
	// expired, force_released, session_closed, session_expired, and for a
	// member left or removed.
	Reason string `json:"reason,omitempty"`
}

// Event types.
const (
	EventLockAcquired         = "lock.acquired"
	EventLockReleased         = "lock.released"
	EventReservationReserved  = "reservation.reserved"
	EventReservationConfirmed = "reservation.confirmed"
	EventReservationReleased  = "reservation.released"
	EventSessionOpened        = "session.opened"
	EventSessionEnded         = "session.ended"
	EventLockUpdated          = "lock.updated"
	EventReservationUpdated   = "reservation.updated"
	EventGroupCreated         = "group.created"
	EventGroupDeleted         = "group.deleted"
	EventMemberJoined         = "group.member_joined"
	EventMemberUpdated        = "group.member_updated"
	EventMemberLeft           = "group.member_left"
)

// Reasons a member left (Event.Reason of group.member_left), besides
// expired, session_closed and session_expired.
const (
	ReasonLeft    = "left"
	ReasonRemoved = "removed"
)

// WatchOptions selects the events of a Watch.
type WatchOptions struct {
	// Prefix: only lock events of keys that start with it.
	Prefix string
	// Pool: only reservation events of this pool.
	Pool string
	// Group: only the events of this group and its members.
	Group string
	// Since: every event after this revision: the Revision of a list page
	// (list, then watch: nothing missed, nothing twice), or the last event
	// seen. Zero means after revision 0: from the beginning, every event the
	// server keeps (a fresh server's list pages are at revision 0, so a
	// watch from such a page misses nothing). On a server that has
	// compacted its history, the watch ends with a history-compacted
	// *Problem naming the oldest revision it keeps.
	Since int64
	// FromNow ignores Since and starts at the server's newest revision when
	// the watch starts: only the changes made after that.
	FromNow bool
	// PollWait bounds one long poll (default 25 s).
	PollWait time.Duration
	// Stream receives the events as one server-sent-event stream
	// (text/event-stream) instead of long polls; a dropped stream is
	// reopened with Last-Event-ID naming the last revision delivered.
	Stream bool
}

// Watcher delivers events in revision order, across reconnects: after a
// dropped connection or a server restart it resumes after the last revision
// it delivered, so no event is lost or repeated.
type Watcher struct {
	events chan Event
	mu     sync.Mutex
	err    error
	last   int64
}

// Events is closed when the watch ends; Err then says why.
func (w *Watcher) Events() <-chan Event { return w.events }

// Err is why the watch ended: ctx's error, or a refusal such as a
// history-compacted *Problem (IsHistoryCompacted) when Since is older than
// the server keeps.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Revision is the last revision delivered (or the starting point).
func (w *Watcher) Revision() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Revision is the newest event revision the server has: "now", for a Watch
// that is to start from this moment. To watch after a listing, use the
// Revision of the list page instead: it is read in the same snapshot as the
// items, so a Watch from it sees each later change exactly once, while a
// revision taken before the listing sees again the changes the listing
// already shows.
func (c *Client) Revision(ctx context.Context) (int64, error) {
	q := url.Values{}
	q.Set("limit", "1")
	var page struct {
		NextRevision int64 `json:"next_revision"`
	}
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/events", query: q}, &page); err != nil {
		return 0, err
	}
	return page.NextRevision, nil
}

// Watch follows the changes opts selects until ctx ends. The server is asked
// in long polls of JSON pages, each naming the last revision seen.
func (c *Client) Watch(ctx context.Context, opts WatchOptions) *Watcher {
	w := &Watcher{events: make(chan Event, 64), last: opts.Since}
	go w.run(ctx, c, opts)
	return w
}

func (w *Watcher) run(ctx context.Context, c *Client, opts WatchOptions) {
	defer close(w.events)
	if opts.Stream {
		w.stream(ctx, c, opts)
		return
	}
	wait := opts.PollWait
	if wait <= 0 {
		wait = 25 * time.Second
	}
	started := !opts.FromNow
	since := opts.Since
	failures := 0
	for {
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
		if started {
			q.Set("since", strconv.FormatInt(since, 10))
		}
		q.Set("wait_ms", strconv.FormatInt(ms(wait), 10))
		var page struct {
			Items        []Event `json:"items"`
			NextRevision int64   `json:"next_revision"`
		}
		_, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/events", query: q}, &page)
		if err != nil {
			failures++
			if !w.retryOrFinish(ctx, c, err, failures) {
				return
			}
			continue
		}
		failures = 0
		for _, e := range page.Items {
			if started && e.Revision <= since {
				continue
			}
			if !w.deliver(ctx, e) {
				return
			}
			since = e.Revision
		}
		if !started || page.NextRevision > since {
			since = page.NextRevision
			started = true
			w.setLast(since)
		}
	}
}

// deliver sends e, or ends the watch when ctx ends first.
func (w *Watcher) deliver(ctx context.Context, e Event) bool {
	select {
	case w.events <- e:
		w.setLast(e.Revision)
		return true
	case <-ctx.Done():
		w.finish(ctx.Err())
		return false
	}
}

func (w *Watcher) setLast(r int64) {
	w.mu.Lock()
	w.last = r
	w.mu.Unlock()
}

func (w *Watcher) finish(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// retryOrFinish decides, after the failures-th failed attempt in a row of a
// watch (err nil: nothing could be asked yet), whether it goes on. When ctx
// has ended, or the server refused with anything but 503 or 429, it ends the
// watch with that error and returns false. Otherwise (unreachable, or
// unavailable past the client's retries) it waits the client's backoff for
// that attempt, the revision kept, and returns true; or false if ctx ends
// first, the watch then ended with ctx's error.
func (w *Watcher) retryOrFinish(ctx context.Context, c *Client, err error, failures int) bool {
	if ctx.Err() != nil {
		w.finish(ctx.Err())
		return false
	}
	if p := AsProblem(err); p != nil && p.Status != 503 && p.Status != 429 {
		w.finish(err)
		return false
	}
	if !sleepCtx(ctx, c.backoff(failures)) {
		w.finish(ctx.Err())
		return false
	}
	return true
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
