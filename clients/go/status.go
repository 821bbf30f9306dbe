package leasehold

import (
	"context"
	"net/http"
	"time"
)

// StatusCounts is what the client's token may read, counted: live lock
// leases (holders) under its key prefixes, acquires waiting for those keys
// on every server sharing the store, live sessions it may inspect, groups
// under its prefixes and their live members, live reservations (reserved
// and allocated) in its pools.
type StatusCounts struct {
	Locks        int64 `json:"locks"`
	Waiters      int64 `json:"waiters"`
	Sessions     int64 `json:"sessions"`
	Groups       int64 `json:"groups"`
	Members      int64 `json:"members"`
	Reservations int64 `json:"reservations"`
}

// SQLiteStatus is a SQLite database's figures.
type SQLiteStatus struct {
	// FileBytes is the database file's size.
	FileBytes int64 `json:"file_bytes"`
	// WALBytes is its write-ahead log's size (0 when there is none).
	WALBytes int64 `json:"wal_bytes"`
	// LastCheckpointAt is when the server last checkpointed the log into
	// the file; nil before its first.
	LastCheckpointAt *time.Time `json:"last_checkpoint_at"`
}

// Replica is a server seen alive lately on a PostgreSQL database.
type Replica struct {
	// ID is its id among the servers on the database.
	ID string `json:"replica"`
	// Name is the name it gives itself (serve --name), "" until it has
	// said it.
	Name       string    `json:"name"`
	LastSeenAt time.Time `json:"last_seen_at"`
	// Self is whether it is the server that answered.
	Self bool `json:"self"`
}

// PostgresStatus is a PostgreSQL database's figures: the servers on it.
type PostgresStatus struct {
	Replicas []Replica `json:"replicas"`
}

// DatabaseStatus names the database ("sqlite" or "postgres") and holds the
// figures of that one; the other is nil.
type DatabaseStatus struct {
	Backend  string          `json:"backend"`
	SQLite   *SQLiteStatus   `json:"sqlite"`
	Postgres *PostgresStatus `json:"postgres"`
}

// CallerStatus is what the client's token is.
type CallerStatus struct {
	// Admin is whether it may use the admin operations (force release,
	// force close, member removal, pool delete) in its scope; true on a
	// server without an auth file.
	Admin bool `json:"admin"`
}

// Status is the client's overview (GET /v1/status): the counts, the
// change-log revision they reflect (a Watch with it as WatchOptions.Since
// continues exactly after them), the database, and whether the token is an
// admin.
type Status struct {
	Revision int64          `json:"revision"`
	Counts   StatusCounts   `json:"counts"`
	Database DatabaseStatus `json:"database"`
	Caller   CallerStatus   `json:"caller"`
}

// Status returns what the client's token may read, counted in one snapshot,
// the database the server runs on, and whether the token is an admin.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var out Status
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/v1/status"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
