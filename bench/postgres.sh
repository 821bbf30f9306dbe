#!/usr/bin/env bash
# leasehold on PostgreSQL, for bench/run.sh: one replica, then two replicas on
# one database (clients spread over both), each run on a fresh PostgreSQL data
# dir on loopback. Prints loadgen lines tagged lock-pg1 and lock-pg2; for the
# uncontended workload also lock-pgbench: pgbench writing the same rows
# (bench/pgbench_rows.sql) on the one-replica database, leasehold stopped.
#   bench/postgres.sh WORKDIR LOADGEN WORKLOAD CLIENTS SECONDS
# Expects the release build of leasehold and the loadgen binary LOADGEN.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:?work dir}; loadgen=${2:?loadgen}; workload=${3:?workload}; clients=${4:?clients}; seconds=${5:?seconds}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
pids=()
# Its own folder under /tmp: the postgres user must be able to reach it.
pg_dir=$(mktemp -d /tmp/leasehold-bench-pg.XXXXXX)
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  .ci/postgres.sh stop "$pg_dir" >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}
trap cleanup EXIT

for replicas in 1 2; do
  url=$(.ci/postgres.sh start "$pg_dir" "$(free_port)")
  addresses=()
  for r in $(seq "$replicas"); do
    port=$(free_port)
    "${CARGO_TARGET_DIR:-target}/release/leasehold" serve --listen "127.0.0.1:$port" --db "$url" \
      --log-format json >"$work/leasehold-pg$replicas-$r.log" 2>&1 &
    pids+=($!)
    wait_port "$port"
    addresses+=("127.0.0.1:$port")
  done
  list=$(IFS=,; echo "${addresses[*]}")
  "$loadgen" "leasehold-pg$replicas" "$list" "$workload" "$clients" "$seconds" | sed "s/^/lock-pg$replicas /"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  if [[ $replicas == 1 && $workload == uncontended ]] && command -v pgbench >/dev/null; then
    tps=$(pgbench -n -M prepared -c "$clients" -j "$(nproc)" -T "$seconds" \
      -f bench/pgbench_rows.sql "$url" 2>/dev/null | awk '/^tps/ {print int($3); exit}')
    echo "lock-pgbench pgbench $workload ops_per_s=$tps"
  fi
  .ci/postgres.sh stop "$pg_dir" >/dev/null
done
