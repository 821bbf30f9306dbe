package leasehold

import (
	"net/url"
	"strconv"
)

// ListOptions pages a list. Every list call takes one after what it lists
// (ListLocks and ListGroups a key prefix, ListReservations a pool,
// ListMembers a group; Sessions nothing): ListOptions{} is the first page
// of the server's default size; pass a page's NextCursor as Cursor for the
// next.
type ListOptions struct {
	// Limit is the most items on one page (0: the server's default).
	Limit int
	// Cursor continues after the page whose NextCursor it is ("": first).
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

func prefixQuery(prefix string, o ListOptions) url.Values {
	q := o.query()
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return q
}
