#!/usr/bin/env python3
"""Pages a commit writes to SQLite's write-ahead log, by the change log's
secondary index: why an index on events ordered by key costs the writer.

The server commits up to 256 writes at a time (group commit), and every page
a commit changes is written whole to the WAL and synced. Entries appended at
the end of an index (ordered by revision, or by a column that is the same
in every row) land on one page per commit; entries ordered by key land where
each key sorts, one leaf page per key that the batch touches.

A table shaped like `events` (the columns that matter), PRELOAD events of
CLIENTS keys already in it, then BATCHES commits of CLIENTS acquire +
release pairs of new keys `bench-{client}-{i}` (loadgen's uncontended
workload), with each index variant. Prints the pages written per commit.

usage: bench/event_index_pages.py [PRELOAD] [CLIENTS] [BATCHES]
(Python's sqlite3 only; a few seconds.)
"""
import os
import sqlite3
import sys
import tempfile

VARIANTS = {
    "no secondary index": None,
    "(key, revision), as events_by_key": "CREATE INDEX ix ON events (key, revision) WHERE key IS NOT NULL",
    "(revision, key)": "CREATE INDEX ix ON events (revision, key)",
    "(a NULL column, revision)": "CREATE INDEX ix ON events (unused, revision)",
}
PRELOAD = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
CLIENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 64
BATCHES = int(sys.argv[3]) if len(sys.argv) > 3 else 300


def insert(db, kind, at, key):
    db.execute("INSERT INTO events (type, at, key, holder) VALUES (?, ?, ?, 'h')", (kind, at, key))


def pages_per_commit(folder, ddl):
    path = os.path.join(folder, f"{abs(hash(ddl))}.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE events (revision INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL,"
               " at INTEGER NOT NULL, key TEXT, holder TEXT NOT NULL, unused TEXT)")
    db.execute("CREATE INDEX events_by_at ON events (at)")
    if ddl:
        db.execute(ddl)
    db.execute("BEGIN")
    for n in range(PRELOAD):
        insert(db, "lock.acquired", n, f"bench-{n % CLIENTS}-{n // CLIENTS}")
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA wal_autocheckpoint=0")
    page = db.execute("PRAGMA page_size").fetchone()[0]
    first = PRELOAD // CLIENTS
    before = os.path.getsize(path + "-wal")
    for b in range(BATCHES):
        db.execute("BEGIN")
        for c in range(CLIENTS):
            for kind in ("lock.acquired", "lock.released"):
                insert(db, kind, PRELOAD + b, f"bench-{c}-{first + b}")
        db.execute("COMMIT")
    frames = (os.path.getsize(path + "-wal") - before) / (page + 24)
    db.close()
    return frames / BATCHES


with tempfile.TemporaryDirectory() as folder:
    print(f"{PRELOAD} events in the log, commits of {CLIENTS} acquire + release pairs of new keys:")
    for name, ddl in VARIANTS.items():
        print(f"  {name:36} {pages_per_commit(folder, ddl):6.1f} pages written per commit")
