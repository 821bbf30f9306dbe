#!/usr/bin/env bash
# Side-by-side benchmark on this machine, in one run: leasehold vs etcd vs Redis,
# and leasehold on PostgreSQL with one and two replicas (bench/postgres.sh),
# then leasehold's subnet pool and large-database workloads, then sessions,
# watchers and renewal traffic (cargo benches sessions, events and
# renewal_traffic). Installs etcd and Redis from Debian's packages if missing,
# starts every system on loopback with a fresh data directory, runs each
# workload through benches/loadgen, and prints one table with the ratios and
# the verdict on each target.
#   bench/run.sh [CLIENTS] [SECONDS]
#   BENCH_SMALL=1 bench/run.sh      # smoke test: small pool, database and benches, 2 s a line
#   BENCH_BASELINE=1 bench/run.sh   # also builds the commit before the change log
#                                   # (a git worktree) to measure the change log's cost
#   BASELINE_BIN=PATH bench/run.sh  # the same with a leasehold binary built already
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64}
if [[ -n ${BENCH_SMALL:-} ]]; then
  seconds=${2:-2}; reservations=1000; leases=20000
  # sessions, events and renewal_traffic, shrunk the same way.
  bound=1000; renewals=200; watchers=500; rounds=1; locks=500; window_s=10
else
  seconds=${2:-10}; reservations=50000; leases=1000000
  bound=10000; renewals=500; watchers=10000; rounds=3; locks=5000; window_s=30
fi
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
pids=()
worktree=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null
  if [[ -n $worktree ]]; then git worktree remove --force "$worktree" 2>/dev/null || true; fi
  rm -rf "$work"
  if [[ -n $worktree ]]; then git worktree prune 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
results="$work/results"
# note NAME TEXT: a line of prose for bench/table.py (why a figure is missing, what a baseline is)
note() { local name=$1; shift; echo "note-$name $*" | tee -a "$results"; }

if ! command -v etcd >/dev/null || ! command -v redis-server >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server redis-server >/dev/null
fi
cargo build --release --quiet
# Every bench's executable is built now, with the server above, so that the
# whole table measures one build even if the sources change during the run.
eval "$(cargo bench --no-run --quiet --message-format=json \
    --bench loadgen --bench sessions --bench events --bench renewal_traffic |
  python3 -c 'import json, shlex, sys
found = {m["target"]["name"]: m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("executable") and m["target"]["kind"] == ["bench"]}
for name in ("loadgen", "sessions", "events", "renewal_traffic"):
    print(f"{name}={shlex.quote(found[name])}")')"

# The change log's cost (events bench) needs a leasehold built without it:
# BASELINE_BIN, or with BENCH_BASELINE=1 a release build of the commit before
# the change log was merged (the first parent of the commit that added its
# migration), in a git worktree under $work that the cleanup removes.
if [[ -n ${BASELINE_BIN:-} ]]; then
  if [[ -x $BASELINE_BIN ]]; then
    note baseline "BASELINE_BIN $BASELINE_BIN"
  else
    note change_log "BASELINE_BIN=$BASELINE_BIN is not an executable file"
    unset BASELINE_BIN
  fi
elif [[ -n ${BENCH_BASELINE:-} ]]; then
  added=$(git log --diff-filter=A -m --first-parent --format=%H -- migrations/sqlite/0008_events.sql | tail -n 1)
  if [[ -z $added ]] || ! base=$(git rev-parse --verify --quiet "$added^1"); then
    note change_log "no commit before the change log found in git (migrations/sqlite/0008_events.sql)"
  elif ! git worktree add --detach --quiet "$work/baseline" "$base" >"$work/baseline-build.log" 2>&1; then
    note change_log "git worktree add of $(git rev-parse --short "$base") failed: $(tail -n 1 "$work/baseline-build.log")"
  else
    worktree="$work/baseline"
    echo "building the baseline $(git rev-parse --short "$base") (before the change log) in $worktree ..."
    if (cd "$worktree" && CARGO_TARGET_DIR="$work/baseline-target" nice cargo build --release --quiet --bin leasehold) \
        >>"$work/baseline-build.log" 2>&1; then
      export BASELINE_BIN="$work/baseline-target/release/leasehold"
      note baseline "commit $(git rev-parse --short "$base") ($(git log -1 --format=%s "$base" | cut -c1-60)), the one before the change log was merged"
    else
      tail -n 20 "$work/baseline-build.log" >&2
      note change_log "the release build of $(git rev-parse --short "$base") (before the change log) failed"
    fi
  fi
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_port PORT [SECONDS]
wait_port() {
  for _ in $(seq $((${2:-10} * 10))); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 never opened" >&2; return 1
}
# start_leasehold DB PORT [FLAG...]: runs a server in the background, its pid in $server
start_leasehold() {
  local db=$1 port=$2; shift 2
  "$target/release/leasehold" serve --listen "127.0.0.1:$port" --db "$db" --log-format json "$@" \
    >>"$work/leasehold.log" 2>&1 &
  server=$!; pids+=("$server")
}
stop() { kill -TERM "$1"; wait "$1" 2>/dev/null || true; }
# run ROW SYSTEM ADDRESS WORKLOAD CLIENTS SECONDS: one line of figures, tagged ROW
run() { local row=$1; shift; "$loadgen" "$@" | sed "s/^/$row /" | tee -a "$results"; }

lh=$(free_port)
start_leasehold "$work/leasehold/leasehold.db" "$lh"
etcd_client=$(free_port); etcd_peer=$(free_port)
etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_client" \
  --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" >"$work/etcd.log" 2>&1 &
etcd_pid=$!; pids+=("$etcd_pid")
redis=$(free_port)
mkdir -p "$work/redis"
redis-server --bind 127.0.0.1 --port "$redis" --dir "$work/redis" --appendonly yes \
  --appendfsync always --save '' >"$work/redis.log" 2>&1 &
redis_pid=$!; pids+=("$redis_pid")
wait_port "$lh"; wait_port "$etcd_client"; wait_port "$redis"

# 1 and 2: locks, side by side.
run lock-leasehold leasehold "127.0.0.1:$lh" uncontended "$clients" "$seconds"
run lock-etcd etcd "127.0.0.1:$etcd_client" uncontended "$clients" "$seconds"
run lock-redis redis "127.0.0.1:$redis" uncontended "$clients" "$seconds"
bench/postgres.sh "$work" "$loadgen" uncontended "$clients" "$seconds" | tee -a "$results"
run wait-leasehold leasehold "127.0.0.1:$lh" contended "$clients" "$seconds"
run wait-etcd etcd "127.0.0.1:$etcd_client" contended "$clients" "$seconds"
stop "$etcd_pid"; stop "$redis_pid"

# 3: reserve + release in a /8 pool, empty and then holding $reservations live /24s.
run subnet-empty leasehold "127.0.0.1:$lh" subnets:bench "$clients" "$seconds"
run subnet-fill leasehold "127.0.0.1:$lh" "fill:bench:$reservations" "$clients" 3600
run subnet-full leasehold "127.0.0.1:$lh" subnets:bench "$clients" "$seconds"
stop "$server"

# 4: a database holding $leases live leases, and one with $leases expired rows
# for the reaper, each seeded into a file the server has migrated.
for kind in live expired; do
  port=$(free_port)
  start_leasehold "$work/$kind/leasehold.db" "$port"; wait_port "$port"; stop "$server"
  "$loadgen" seed "$work/$kind/leasehold.db" "$leases" "$kind"
done
port=$(free_port)
start_leasehold "$work/empty/leasehold.db" "$port"; wait_port "$port"
run scale-empty leasehold "127.0.0.1:$port" acquire "$clients" "$seconds"
stop "$server"
port=$(free_port)
began=$(date +%s%N)
start_leasehold "$work/live/leasehold.db" "$port"; wait_port "$port" 1800
echo "startup-live startup_ms=$((($(date +%s%N) - began) / 1000000))" | tee -a "$results"
run scale-live leasehold "127.0.0.1:$port" acquire "$clients" "$seconds"
stop "$server"
# The quiet p99 of the same file of $leases expired rows, the reaper held off
# (its first pass comes one interval after the start), for the reaping row.
port=$(free_port)
start_leasehold "$work/expired/leasehold.db" "$port" --reaper-interval 1h; wait_port "$port" 600
run scale-held leasehold "127.0.0.1:$port" acquire "$clients" "$seconds"
stop "$server"
port=$(free_port)
start_leasehold "$work/expired/leasehold.db" "$port"; wait_port "$port" 600
run scale-reaping leasehold "127.0.0.1:$port" "reaping:$leases" "$clients" 1800
stop "$server"

# 5: sessions, watchers and renewal traffic, each a cargo bench of its own
# (built above) that starts its own server. bench NAME [ENV=VALUE...]: runs
# it, its output on the terminal; its `result BENCH FIGURE key=value...` lines
# go into the results as `BENCH-FIGURE key=value...`. A bench that fails
# leaves a note, and the table says which figures are missing.
bench() {
  local name=$1 status=0; shift
  echo "== benches/$name.rs ($*)"
  # On SQLite, whatever DB the caller has set.
  env -u DB "$@" "${!name}" --bench 2>&1 | tee "$work/$name.out" || status=$?
  sed -n 's/^result \([a-z_]*\) \([a-z_0-9]*\) /\1-\2 /p' "$work/$name.out" >>"$results"
  if [[ $status != 0 ]]; then note "$name" "the bench failed (exit $status); its output was above"; fi
}
bench sessions BOUND="$bound" RENEWALS="$renewals"
# 10,000 event streams need as many open files in the bench and in its server.
want=$((watchers + 1000))
limit=$(ulimit -n)
if [[ $limit != unlimited && $limit -lt 20000 ]]; then
  ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  limit=$(ulimit -n)
fi
if [[ $limit != unlimited && $limit -lt $want ]]; then
  # Fewer watchers than asked, and the table says so.
  asked=$watchers; watchers=$((limit > 1100 ? limit - 1000 : 0))
  if [[ $watchers -gt 0 ]]; then
    note watchers "only $watchers watchers of $asked: the open-file limit is $limit and cannot be raised to 20000"
  fi
fi
if [[ $watchers -gt 0 ]]; then
  bench events WATCHERS="$watchers" SECONDS="$seconds" CLIENTS="$clients" ROUNDS="$rounds"
else
  note events "the open-file limit is $limit and cannot be raised to 20000 for the watchers' streams"
fi
bench renewal_traffic LOCKS="$locks" WINDOW_S="$window_s"

echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r); etcd $(etcd --version | head -1 | awk '{print $3}'), redis $(redis-server --version | awk '{print $3}' | cut -d= -f2); $clients clients, $seconds s a line"
python3 bench/table.py "$results" "$reservations" "$leases"
