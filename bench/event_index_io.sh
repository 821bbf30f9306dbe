#!/usr/bin/env bash
# What the change log's key index (events_by_key) costs the real server's
# writes on SQLite: uncontended acquire + release pairs from loadgen against a
# fresh file with the index and one without it (dropped after the server
# migrated the file), alternating, with the bytes the server process wrote
# (/proc/PID/io) per pair.
# usage: bench/event_index_io.sh BINARY LOADGEN [SECONDS (8)] [ROUNDS (2)]
# (BINARY: a release `leasehold`; LOADGEN: the loadgen bench's executable,
# see bench/console_paint.sh for how to find it.) Linux only.
set -euo pipefail
bin=${1:?a release leasehold}
loadgen=${2:?the loadgen executable}
seconds=${3:-8}
rounds=${4:-2}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ready() { for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return; sleep 0.1; done; return 1; }
for round in $(seq "$rounds"); do
  for variant in with without; do
    dir=$(mktemp -d)
    port=$(free_port)
    "$bin" serve --listen "127.0.0.1:$port" --db "$dir/l.db" >/dev/null 2>&1 &
    pid=$!
    ready "$port"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    if [ "$variant" = without ]; then
      python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('DROP INDEX events_by_key'); c.commit()" "$dir/l.db"
    fi
    "$bin" serve --listen "127.0.0.1:$port" --db "$dir/l.db" >/dev/null 2>&1 &
    pid=$!
    ready "$port"
    before=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io")
    line=$("$loadgen" leasehold "127.0.0.1:$port" uncontended 64 "$seconds" | tail -1)
    after=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io")
    ops=$(sed -n 's/.* ops=\([0-9]*\).*/\1/p' <<<"$line")
    echo "round $round, $variant the index: $line; $(( (after - before) / ops )) bytes written a pair"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
  done
done
