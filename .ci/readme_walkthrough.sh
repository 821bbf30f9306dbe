#!/usr/bin/env bash
# Runs the walk-throughs of README.md and of the guides under docs/ as a
# reader would, one after the other, against a fresh server: every ```sh
# block that follows a line `<!-- walkthrough -->`, in the order of the files
# below and within each, as one bash script with -euo pipefail
# (a client command that fails stops it). The README's address
# http://127.0.0.1:8474 becomes this server's; `leasehold` on PATH is the
# binary given. curl's answers are checked too: each status code it got must
# be the one the README's comments promise, in order.
#
# usage: .ci/readme_walkthrough.sh path/to/leasehold [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(realpath "$1")
work=${2:-$(mktemp -d)}
mkdir -p "$work"

# The pages whose walk-throughs run, in the order a reader meets them.
pages="README.md docs/locks.md docs/subnets.md docs/coordination.md docs/cli.md"

# What the curl commands answer, in order (the README's first lock and first
# subnet; locks, subnets and a pool's map, sessions, events, then the fencing
# check).
expected="201 409 200 204 201 201 200 201 409 409 200 200 200 204 201 200 204 201 201 200 201 200 200 200 204 201 201 201 201 200 200 200 204 201 200 200 200"

awk '
  /^<!-- walkthrough -->$/ { armed = 1; next }
  armed && /^```sh$/ { inside = 1; armed = 0; blocks++; next }
  inside && /^```$/ { inside = 0; print ""; next }
  inside { print }
  END { if (blocks != 8) { print "expected 8 walk-through blocks, found " blocks + 0 > "/dev/stderr"; exit 1 } }
' $pages >"$work/walkthrough.sh"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
"$binary" serve --listen "127.0.0.1:$port" --db "$work/walkthrough.db" >"$work/walkthrough-server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fsS "$base/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done

mkdir -p "$work/bin"
ln -sf "$binary" "$work/bin/leasehold"
statuses="$work/curl-statuses"
: >"$statuses"
{
  # Each curl also notes its status code where this check can read it.
  echo "curl() { command curl -w '%{stderr}%{http_code}\\n' \"\$@\" 2>>'$statuses'; }"
  sed "s#http://127.0.0.1:8474#$base#g" "$work/walkthrough.sh"
} >"$work/run.sh"
(cd "$work" && PATH="$work/bin:$PATH" LEASEHOLD_URL="$base" bash -euo pipefail "$work/run.sh")

got=$(tr '\n' ' ' <"$statuses" | sed 's/ $//')
echo "curl status codes: $got"
if [ "$got" != "$expected" ]; then
  echo "the curl walk-throughs answered $got, their comments say $expected" >&2
  exit 1
fi
echo "the walk-throughs ran as written"
