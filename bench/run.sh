#!/usr/bin/env bash
# Side-by-side benchmark on this machine, in one run: leasehold vs etcd vs Redis
# (and leasehold on PostgreSQL with one and two replicas, via bench/postgres.sh).
# Installs etcd and Redis from Debian's packages if missing, starts every system
# on loopback with a fresh data directory, runs the same workload against each
# through benches/loadgen.rs, and prints one table with the ratios.
#   bench/run.sh [CLIENTS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64}
seconds=${2:-10}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

if ! command -v etcd >/dev/null || ! command -v redis-server >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server redis-server >/dev/null
fi
cargo build --release --quiet
cargo bench --bench loadgen --no-run --quiet 2>/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

lh=$(free_port)
target/release/leasehold serve --listen "127.0.0.1:$lh" --db "$work/leasehold/leasehold.db" \
  --log-format json >"$work/leasehold.log" 2>&1 &
pids+=($!)
etcd_client=$(free_port); etcd_peer=$(free_port)
etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_client" \
  --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" >"$work/etcd.log" 2>&1 &
pids+=($!)
redis=$(free_port)
mkdir -p "$work/redis"
redis-server --bind 127.0.0.1 --port "$redis" --dir "$work/redis" --appendonly yes \
  --appendfsync always --save '' >"$work/redis.log" 2>&1 &
pids+=($!)
wait_port "$lh"; wait_port "$etcd_client"; wait_port "$redis"

run() { cargo bench --quiet --bench loadgen -- "$@" 2>/dev/null | grep ops_per_s; }
results="$work/results"
{
  run leasehold "127.0.0.1:$lh" uncontended "$clients" "$seconds"
  run etcd "127.0.0.1:$etcd_client" uncontended "$clients" "$seconds"
  run redis "127.0.0.1:$redis" uncontended "$clients" "$seconds"
  bench/postgres.sh "$work" uncontended "$clients" "$seconds"
  run leasehold "127.0.0.1:$lh" contended "$clients" "$seconds"
  run etcd "127.0.0.1:$etcd_client" contended "$clients" "$seconds"
} | tee "$results"

echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r); etcd $(etcd --version | head -1 | awk '{print $3}'), redis $(redis-server --version | awk '{print $3}' | cut -d= -f2)"
python3 - "$results" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    fields = dict(p.split("=") for p in parts[2:])
    rows[(parts[0], parts[1])] = fields
print(f"{'workload':<12} {'system':<10} {'ops/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'leasehold ÷':>12}")
for (system, workload), f in rows.items():
    base = rows.get(("leasehold", workload))
    ratio = float(base["ops_per_s"]) / float(f["ops_per_s"]) if base and float(f["ops_per_s"]) else 0
    print(f"{workload:<12} {system:<10} {float(f['ops_per_s']):>9.0f} {float(f['p50_ms']):>8.2f} "
          f"{float(f['p99_ms']):>8.2f} {f['errors']:>7} {ratio:>11.2f}x")
PY
