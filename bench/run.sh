#!/usr/bin/env bash
# Side-by-side benchmark on this machine, in one run: leasehold vs etcd vs Redis,
# and leasehold on PostgreSQL with one and two replicas (bench/postgres.sh),
# then leasehold's subnet pool and large-database workloads. Installs etcd and
# Redis from Debian's packages if missing, starts every system on loopback with
# a fresh data directory, runs each workload through benches/loadgen, and
# prints one table with the ratios and the verdict on each target.
#   bench/run.sh [CLIENTS] [SECONDS]
#   BENCH_SMALL=1 bench/run.sh      # smoke test: small pool and database, 2 s a line
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64}
if [[ -n ${BENCH_SMALL:-} ]]; then
  seconds=${2:-2}; reservations=1000; leases=20000
else
  seconds=${2:-10}; reservations=50000; leases=1000000
fi
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

if ! command -v etcd >/dev/null || ! command -v redis-server >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server redis-server >/dev/null
fi
cargo build --release --quiet
loadgen=$(cargo bench --bench loadgen --no-run --quiet --message-format=json |
  python3 -c 'import json, sys; print([m["executable"] for m in map(json.loads, sys.stdin)
    if m.get("executable") and m["target"]["name"] == "loadgen"][-1])')
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_port PORT [SECONDS]
wait_port() {
  for _ in $(seq $((${2:-10} * 10))); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 never opened" >&2; return 1
}
# start_leasehold DB PORT: runs a server in the background, its pid in $server
start_leasehold() {
  "$target/release/leasehold" serve --listen "127.0.0.1:$2" --db "$1" --log-format json \
    >>"$work/leasehold.log" 2>&1 &
  server=$!; pids+=("$server")
}
stop() { kill -TERM "$1"; wait "$1" 2>/dev/null || true; }
results="$work/results"
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
port=$(free_port)
start_leasehold "$work/expired/leasehold.db" "$port"; wait_port "$port" 600
run scale-reaping leasehold "127.0.0.1:$port" "reaping:$leases" "$clients" 1800
stop "$server"

echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r); etcd $(etcd --version | head -1 | awk '{print $3}'), redis $(redis-server --version | awk '{print $3}' | cut -d= -f2); $clients clients, $seconds s a line"
python3 bench/table.py "$results" "$reservations" "$leases"
