package leasehold

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Problem types the server answers with (the `type` of an RFC 9457 problem).
const (
	TypeInvalidRequest     = "/problems/invalid-request"
	TypeUnauthorized       = "/problems/unauthorized"
	TypeForbidden          = "/problems/forbidden"
	TypeSessionOutOfScope  = "/problems/session-out-of-scope"
	TypeMisdirected        = "/problems/misdirected-request"
	TypeNotFound           = "/problems/not-found"
	TypeLockNotFound       = "/problems/lock-not-found"
	TypePoolNotFound       = "/problems/pool-not-found"
	TypeReservationMissing = "/problems/reservation-not-found"
	TypeSessionNotFound    = "/problems/session-not-found"
	TypeLeaseLost          = "/problems/lease-lost"
	TypeSessionLost        = "/problems/session-lost"
	TypeLockHeld           = "/problems/lock-held"
	TypeLimitMismatch      = "/problems/limit-mismatch"
	TypeCapacityNotFound   = "/problems/capacity-not-found"
	TypeCapacityInUse      = "/problems/capacity-in-use"
	TypePermitsExceed      = "/problems/permits-exceed-capacity"
	TypePoolExhausted      = "/problems/pool-exhausted"
	TypeSubnetUnavailable  = "/problems/subnet-unavailable"
	TypePoolConflict       = "/problems/pool-conflict"
	TypePoolInUse          = "/problems/pool-in-use"
	TypeRuleViolated       = "/problems/rule-violated"
	TypeRuleConflict       = "/problems/rule-conflict"
	TypeHistoryCompacted   = "/problems/history-compacted"
	TypeQuotaExceeded      = "/problems/quota-exceeded"
	TypeRateLimited        = "/problems/rate-limited"
	TypeLimitNotFound      = "/problems/limit-not-found"
	TypeCostExceedsBurst   = "/problems/cost-exceeds-burst"
	TypeGroupNotFound      = "/problems/group-not-found"
	TypeGroupNotEmpty      = "/problems/group-not-empty"
	TypeMemberExists       = "/problems/member-exists"
	TypeMemberNotFound     = "/problems/member-not-found"
)

// Problem is a refusal from the server: an RFC 9457 problem document with its
// extension fields. Inspect it with errors.As, or with the Is… helpers.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`

	// Key is the lock key of a lock problem.
	Key string `json:"key,omitempty"`
	// Holder is the current holder on a conflict (empty when unknown).
	Holder string `json:"-"`
	// Holders are every current lease of a shared or semaphore key.
	Holders []ProblemHolder `json:"holders,omitempty"`
	// ExpiresAt is when the conflicting lease expires (nil: never, or unknown).
	ExpiresAt *time.Time `json:"-"`
	// AvailableAt is when the key can be granted at the earliest.
	AvailableAt *time.Time `json:"-"`
	// RetryAfter is the server's Retry-After (zero when it sent none).
	RetryAfter time.Duration `json:"-"`
	// Reason is a finer cause some problems give.
	Reason string `json:"reason,omitempty"`
	// Field names the request field an invalid request got wrong.
	Field string `json:"field,omitempty"`
	// Pool is the pool of a subnet problem.
	Pool string `json:"pool,omitempty"`
	// Rule names the pool rule a rule-violated or rule-conflict refusal
	// is about.
	Rule string `json:"rule,omitempty"`
	// Conflicts are the live reservations a requested subnet overlaps.
	Conflicts []ProblemConflict `json:"conflicts,omitempty"`
	// OldestRevision is the oldest event revision still kept (410).
	OldestRevision int64 `json:"oldest_revision,omitempty"`

	// Extensions holds every member of the document, the ones above included.
	Extensions map[string]json.RawMessage `json:"-"`
}

// ProblemHolder is one current lease named by a conflict.
type ProblemHolder struct {
	Holder       string     `json:"holder"`
	FencingToken int64      `json:"fencing_token"`
	ExpiresAt    *time.Time `json:"expires_at"`
	ExpiresInMS  *int64     `json:"expires_in_ms"`
}

// ProblemConflict is a live reservation a requested subnet overlaps.
type ProblemConflict struct {
	ID        string     `json:"id"`
	Subnet    string     `json:"subnet"`
	Holder    string     `json:"holder"`
	State     string     `json:"state"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func (p *Problem) Error() string {
	var b strings.Builder
	b.WriteString("leasehold: ")
	if p.Title != "" {
		b.WriteString(p.Title)
	} else {
		b.WriteString(http.StatusText(p.Status))
	}
	fmt.Fprintf(&b, " (%d", p.Status)
	if p.Type != "" {
		b.WriteString(" " + p.Type)
	}
	b.WriteString(")")
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	return b.String()
}

// parseProblem reads a refusal; an answer that is no problem document still
// becomes a Problem with its status.
func parseProblem(resp *http.Response, data []byte) *Problem {
	p := &Problem{Status: resp.StatusCode}
	if err := json.Unmarshal(data, p); err == nil {
		_ = json.Unmarshal(data, &p.Extensions)
		var ext struct {
			Holder      *string `json:"holder"`
			ExpiresAt   *string `json:"expires_at"`
			AvailableAt *string `json:"available_at"`
		}
		_ = json.Unmarshal(data, &ext)
		if ext.Holder != nil {
			p.Holder = *ext.Holder
		}
		p.ExpiresAt = parseTime(ext.ExpiresAt)
		p.AvailableAt = parseTime(ext.AvailableAt)
	} else {
		p.Detail = strings.TrimSpace(string(data))
		if len(p.Detail) > 512 {
			p.Detail = p.Detail[:512]
		}
	}
	if p.Status == 0 {
		p.Status = resp.StatusCode
	}
	if p.Title == "" {
		p.Title = http.StatusText(resp.StatusCode)
	}
	p.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	if p.Holder == "" && len(p.Holders) > 0 {
		p.Holder = p.Holders[0].Holder
	}
	return p
}

func parseTime(s *string) *time.Time {
	if s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil
	}
	return &t
}

// retryAfter reads Retry-After: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// AsProblem returns the *Problem in err's chain, or nil.
func AsProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return nil
}

func isType(err error, types ...string) bool {
	p := AsProblem(err)
	if p == nil {
		return false
	}
	for _, t := range types {
		if p.Type == t {
			return true
		}
	}
	return false
}

// IsHeld reports whether err is a 409 lock-held: another holder has the key.
func IsHeld(err error) bool { return isType(err, TypeLockHeld) }

// IsLeaseLost reports whether err says the token names no live lease (it
// expired, was released, or was taken over), or that a session is gone.
func IsLeaseLost(err error) bool { return isType(err, TypeLeaseLost, TypeSessionLost) }

// IsNotFound reports whether err is any 404.
func IsNotFound(err error) bool {
	p := AsProblem(err)
	return p != nil && p.Status == http.StatusNotFound
}

// IsRateLimited reports whether err is a 429 rate-limited: a rate limit's
// take denied (RetryAfterMS says for how long), or the token's writes
// faster than the server allows.
func IsRateLimited(err error) bool { return isType(err, TypeRateLimited) }

// IsLimitNotFound reports whether err says the rate limit does not exist.
func IsLimitNotFound(err error) bool { return isType(err, TypeLimitNotFound) }

// IsCapacityNotFound reports whether err says no capacity is stored for
// the key.
func IsCapacityNotFound(err error) bool { return isType(err, TypeCapacityNotFound) }

// IsCapacityInUse reports whether err says a capacity cannot be deleted
// while live leases hold permits of it.
func IsCapacityInUse(err error) bool { return isType(err, TypeCapacityInUse) }

// IsPermitsExceedCapacity reports whether err says an acquire asked more
// permits than the key's capacity ever holds.
func IsPermitsExceedCapacity(err error) bool { return isType(err, TypePermitsExceed) }

// IsCostExceedsBurst reports whether err says a take asked for more than
// the limit's burst: it could never be admitted.
func IsCostExceedsBurst(err error) bool { return isType(err, TypeCostExceedsBurst) }

// IsHistoryCompacted reports whether a watch asked for events older than
// the server keeps (410); Problem.OldestRevision says what it still has.
func IsHistoryCompacted(err error) bool { return isType(err, TypeHistoryCompacted) }

// IsPoolExhausted reports whether no free block of the asked size is left.
func IsPoolExhausted(err error) bool { return isType(err, TypePoolExhausted) }

// IsSubnetUnavailable reports whether a named subnet overlaps a live one.
func IsSubnetUnavailable(err error) bool { return isType(err, TypeSubnetUnavailable) }

// IsInvalid reports whether the server refused the request as malformed (400,
// 413, 415, 422 and the like).
func IsInvalid(err error) bool {
	p := AsProblem(err)
	return p != nil && p.Status >= 400 && p.Status < 500 && p.Status != 404 && p.Status != 409 &&
		p.Status != 401 && p.Status != 403 && p.Status != 429
}

// IsUnauthorized reports a missing or unknown API token (401) or one whose
// scope does not cover the resource (403).
func IsUnauthorized(err error) bool {
	p := AsProblem(err)
	return p != nil && (p.Status == http.StatusUnauthorized || p.Status == http.StatusForbidden)
}

// IsGroupNotFound reports whether err is a 404 group-not-found.
func IsGroupNotFound(err error) bool { return isType(err, TypeGroupNotFound) }

// IsGroupNotEmpty reports whether a group could not be deleted because
// members are live in it (409); Problem.Extensions["members"] says how many.
func IsGroupNotEmpty(err error) bool { return isType(err, TypeGroupNotEmpty) }

// IsMemberExists reports whether the member id is live in the group under
// another session or holder (409).
func IsMemberExists(err error) bool { return isType(err, TypeMemberExists) }

// IsMemberNotFound reports whether the group has no such live member (404).
func IsMemberNotFound(err error) bool { return isType(err, TypeMemberNotFound) }
