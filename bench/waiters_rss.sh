#!/usr/bin/env bash
# Resident memory of the real release binary across rounds of waiters that
# disconnect: ROUNDS rounds (default 8) of WAITERS long-poll acquires (default
# 5000) on KEYS held keys (default 50), all dropped at once; prints the RSS at
# the start and after each round. It must come back near the baseline and not
# creep from round to round.
#
#   bench/waiters_rss.sh [BINARY]     (default: target/release/leasehold, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/leasehold}
[ -x "$bin" ] || cargo build --release --bin leasehold
rounds=${ROUNDS:-8} waiters=${WAITERS:-5000} keys=${KEYS:-50}
ulimit -n "$(ulimit -Hn)"
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Through the environment, so that an older binary without some of these
# settings runs too (to compare).
LEASEHOLD_MAX_WAITERS=$((waiters + 100)) LEASEHOLD_MAX_CONNECTIONS=$((waiters + 1000)) \
  LEASEHOLD_MAX_IN_FLIGHT_PER_CLIENT=1024 LEASEHOLD_MAX_WAITERS_PER_CLIENT=$((waiters + 100)) \
  "$bin" serve --listen "127.0.0.1:$port" --db "$dir/leasehold.db" 2>"$dir/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
python3 bench/waiters_rss.py "http://127.0.0.1:$port" "$pid" "$rounds" "$waiters" "$keys"
