#!/usr/bin/env bash
# leasehold on PostgreSQL against another build, and the floors under it, on
# a PostgreSQL of its own (a fresh data dir on loopback, fsync on):
#
#   BASELINE_BIN=PATH [ROUNDS=3] [CLIENTS=64] [BENCH_SECONDS=8] [COUNT_SECONDS=3] \
#     bench/pg_statements.sh
#
# 1. ROUNDS rounds, each the build (target/release/leasehold, or BUILD_BIN) and
#    then BASELINE_BIN, one replica on a fresh database each: uncontended
#    acquire + release pairs from loadgen (`pairs build|baseline ROUND
#    ops_per_s=… p50_ms=… p99_ms=…`), then in the same round pgbench on the
#    bare rows (bench/pgbench_rows.sql) and on the statements the build sends
#    (bench/pgbench_pairs.sql), each on a fresh database the build migrated.
# 2. For each build, one more run with `log_statement = all` on its database
#    (COUNT_SECONDS): the messages (round trips) and statements PostgreSQL
#    received per pair, those that were BEGIN or COMMIT or a key's lock (a
#    transaction sends its BEGIN and its locks in one message), and per
#    1,000 writes (grants and
#    releases) the change log's reads and the announcer's pg_notify
#    statements. Slower than the runs above (the log costs): counts only.
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=${BASELINE_BIN:?BASELINE_BIN: the leasehold binary to compare with}
build=${BUILD_BIN:-${CARGO_TARGET_DIR:-target}/release/leasehold}
rounds=${ROUNDS:-3}; clients=${CLIENTS:-64}; seconds=${BENCH_SECONDS:-8}
count_seconds=${COUNT_SECONDS:-3}
[[ -x $build ]] || { echo "no build at $build: cargo build --release" >&2; exit 2; }
loadgen=$(cargo bench --no-run --quiet --message-format=json --bench loadgen |
  python3 -c 'import json, sys
found = [m["executable"] for m in map(json.loads, sys.stdin.readlines())
         if m.get("executable") and m["target"]["name"] == "loadgen"]
print(found[0])')

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
pg_dir=$(mktemp -d /tmp/leasehold-bench-pg.XXXXXX)
server=
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null || true
  .ci/postgres.sh stop "$pg_dir" >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}
trap cleanup EXIT
admin=$(.ci/postgres.sh start "$pg_dir" "$(free_port)")
base_url=${admin%/postgres}
# Each line of the log names its database, so a count reads one run only.
psql -q "$admin" -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] %d '" -c "SELECT pg_reload_conf()" >/dev/null
# A fresh database each call (called in a subshell: the name counts nothing).
fresh_db() { local db="bench_$(date +%s%N)"; psql -q "$admin" -c "CREATE DATABASE $db"; echo "$base_url/$db"; }

# Serves `url` with binary $1 in the background until `stop_server`.
serve() {
  local port; port=$(free_port)
  "$1" serve --listen "127.0.0.1:$port" --db "$2" --log-format json >"$pg_dir/serve.log" 2>&1 &
  server=$!
  wait_port "$port"
  address="127.0.0.1:$port"
  # Migrated and serving (the port may open first).
  for _ in $(seq 100); do curl -sf "http://$address/readyz" >/dev/null && return 0; sleep 0.1; done
  echo "leasehold on $2 never ready" >&2; return 1
}
stop_server() { kill "$server"; wait "$server" 2>/dev/null || true; server=; }

pairs() { # NAME BINARY ROUND
  local url; url=$(fresh_db)
  serve "$2" "$url"
  "$loadgen" "leasehold-$1" "$address" uncontended "$clients" "$seconds" |
    sed "s/^leasehold-$1 uncontended/pairs $1 $3/"
  stop_server
}

floor() { # FILE ROUND: pgbench on a database the build migrated, leasehold stopped
  local url; url=$(fresh_db)
  serve "$build" "$url"; stop_server
  local tps
  tps=$(pgbench -n -M prepared -c "$clients" -j "$(nproc)" -T "$seconds" -f "bench/$1.sql" "$url" \
    2>"$pg_dir/pgbench.err" | awk '/^tps/ {print int($3)}') || { tail -3 "$pg_dir/pgbench.err" >&2; return 1; }
  echo "pgbench $1 $2 ops_per_s=$tps"
}

for round in $(seq "$rounds"); do
  pairs build "$build" "$round"
  pairs baseline "$baseline" "$round"
  floor pgbench_rows "$round"
  floor pgbench_pairs "$round"
done

count() { # NAME BINARY
  local url db; url=$(fresh_db); db=${url##*/}
  psql -q "$admin" -c "ALTER DATABASE $db SET log_statement = 'all'"
  serve "$2" "$url"
  "$loadgen" "leasehold-$1" "$address" uncontended "$clients" "$count_seconds" >/dev/null
  stop_server
  local writes grants
  writes=$(psql -At "$url" -c "SELECT count(*) FROM events WHERE type IN ('lock.acquired', 'lock.released')")
  grants=$(psql -At "$url" -c "SELECT count(*) FROM events WHERE type = 'lock.acquired'")
  grep -F " $db " "$pg_dir/server.log" | grep -E 'LOG:  (statement|execute [^ ]*):' |
    python3 -c '
import re, sys
name, grants, writes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [re.sub(r"^.*LOG:  (statement|execute [^ ]*): ", "", l) for l in sys.stdin]
def n(pattern): return sum(1 for l in lines if re.search(pattern, l))
# A transaction on keys sends its BEGIN and the locks of its keys in one message.
framing = n(r"^(BEGIN|COMMIT|ROLLBACK)\b")
locks = sum(len(re.findall(r"SELECT pg_advisory_xact_lock\(hashtextextended", l)) for l in lines)
writes_sent = n(r"(INSERT INTO lock_leases|DELETE FROM lock_leases WHERE key = )")
reads = n(r"FROM events WHERE revision > ")
notify = n(r"pg_notify")
print(f"statements {name} pairs={grants} writes={writes} "
      f"messages_per_pair={len(lines) / grants:.2f} "
      f"pair_statements={(framing + locks + writes_sent) / grants:.2f} "
      f"begin_commit_per_pair={framing / grants:.2f} key_locks_per_pair={locks / grants:.2f} "
      f"log_reads_per_1000_writes={1000 * reads / writes:.0f} "
      f"notify_per_1000_writes={1000 * notify / writes:.0f}")
' "$1" "$grants" "$writes"
}
count build "$build"
count baseline "$baseline"
