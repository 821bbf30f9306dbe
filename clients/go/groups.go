package leasehold

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Group is a named set of members, durable until deleted.
type Group struct {
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
	// Members is how many members are live in it.
	Members   int64     `json:"members"`
	CreatedAt time.Time `json:"created_at"`
}

// GroupPage is one page of groups.
type GroupPage struct {
	Items      []Group `json:"items"`
	NextCursor *string `json:"next_cursor"`
	// Revision is the change-log revision the page reflects (Watch Since).
	Revision int64 `json:"revision"`
}

// MemberInfo is a live member of a group as the server shows it.
type MemberInfo struct {
	Member string `json:"member"`
	// Capabilities is the member's JSON value, as stored (null when none).
	Capabilities json.RawMessage `json:"capabilities"`
	// Session is the session the member is bound to (empty: its own TTL).
	Session     string    `json:"session,omitempty"`
	JoinedAt    time.Time `json:"joined_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	ExpiresInMS int64     `json:"expires_in_ms"`
	// EndsBy is the end of its tenure (WithMaxLifetime, or the server's
	// ceiling): no renewal keeps it past this. Nil without a cap.
	EndsBy *time.Time `json:"ends_by"`
	// LifetimeLeftMS is how long its tenure has left; nil without a cap.
	LifetimeLeftMS *int64 `json:"lifetime_left_ms"`
	// Token renews the member and makes it leave; only in the answer to
	// the join of a member with a TTL of its own.
	Token string `json:"token,omitempty"`
}

// MemberPage is one page of a group's live members.
type MemberPage struct {
	Items      []MemberInfo `json:"items"`
	NextCursor *string      `json:"next_cursor"`
	// Revision is the change-log revision the page reflects: a Watch with
	// Group set and Since set to it sees every later join and leave once.
	Revision int64 `json:"revision"`
}

func groupPath(group string) string { return "/v1/groups/" + escape(group) }

func memberPath(group, member string) string {
	return groupPath(group) + "/members/" + escape(member)
}

// CreateGroup creates group, or finds it already there: created says which
// (201 or 200). metadata (may be nil) is stored only by the call that
// creates it.
func (c *Client) CreateGroup(ctx context.Context, group string, metadata map[string]any) (created bool, err error) {
	body := struct {
		Metadata map[string]any `json:"metadata,omitempty"`
	}{metadata}
	status, err := c.do(ctx, &call{method: http.MethodPut, path: groupPath(group), body: body}, nil)
	if err != nil {
		return false, err
	}
	return status == http.StatusCreated, nil
}

// Group reads a group; one that does not exist is IsGroupNotFound.
func (c *Client) Group(ctx context.Context, group string) (*Group, error) {
	var g Group
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: groupPath(group)}, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// ListGroups returns one page of the groups whose names start with prefix
// ("": every group).
func (c *Client) ListGroups(ctx context.Context, prefix string, opts ListOptions) (*GroupPage, error) {
	var p GroupPage
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/groups", query: prefixQuery(prefix, opts)}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteGroup deletes a group without live members (an admin call); one
// with members is IsGroupNotEmpty.
func (c *Client) DeleteGroup(ctx context.Context, group string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: groupPath(group)}, nil)
	return err
}

// ListMembers returns one page of group's live members.
func (c *Client) ListMembers(ctx context.Context, group string, opts ListOptions) (*MemberPage, error) {
	var p MemberPage
	cl := &call{method: http.MethodGet, path: groupPath(group) + "/members", query: opts.query()}
	if _, err := c.do(ctx, cl, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Member reads one live member; one not joined is IsMemberNotFound.
func (c *Client) Member(ctx context.Context, group, member string) (*MemberInfo, error) {
	var m MemberInfo
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: memberPath(group, member)}, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// RemoveMember ends a membership whoever holds it (an admin call).
func (c *Client) RemoveMember(ctx context.Context, group, member string) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, path: memberPath(group, member)}, nil)
	return err
}

// RenewMember renews a member that lives by its own TTL, by ttl from now
// (zero: its own TTL). A capabilities that is not nil replaces the member's
// in the same transaction (one group.member_updated event). A Membership
// does this in the background already.
func (c *Client) RenewMember(ctx context.Context, group, member, token string, ttl time.Duration, capabilities any) (*MemberInfo, time.Time, error) {
	info, deadline, err := c.renewMember(ctx, group, member, token, ttl, capabilities)
	if err != nil {
		return nil, time.Time{}, err
	}
	return info, deadline.Add(-time.Duration(info.ExpiresInMS) * time.Millisecond), nil
}

// renewMember renews as RenewMember does and returns the member's new local
// deadline.
func (c *Client) renewMember(ctx context.Context, group, member, token string, ttl time.Duration, capabilities any) (*MemberInfo, time.Time, error) {
	body := struct {
		Token        string `json:"token"`
		TTL          *int64 `json:"ttl_ms,omitempty"`
		Capabilities any    `json:"capabilities,omitempty"`
	}{token, optMs(ttl), capabilities}
	cl := &call{method: http.MethodPost, path: memberPath(group, member) + "/renew", body: body}
	var m MemberInfo
	if _, err := c.do(ctx, cl, &m); err != nil {
		return nil, time.Time{}, err
	}
	return &m, localDeadline(cl.sent, cl.received, 0, m.ExpiresInMS), nil
}
