#!/usr/bin/env bash
# The console's time to first paint with a lot of data (bench/console_paint.mjs):
# builds the release server and the loadgen bench, installs playwright-core
# from npm into a temporary folder, and runs the script with Debian's chromium.
# usage: bench/console_paint.sh   (LOCKS, LOADS, STRIDE as in the script)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
loadgen=$(cargo bench --no-run --quiet --message-format=json --bench loadgen |
  python3 -c 'import json, sys
found = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("executable") and m["target"]["name"] == "loadgen"]
print(found[0])')
npm install --silent --no-audit --no-fund --prefix "$work/browser" playwright-core@1.65 >/dev/null
cp bench/console_paint.mjs "$work/browser/"
node "$work/browser/console_paint.mjs" "${CARGO_TARGET_DIR:-target}/release/leasehold" "$loadgen" "$work/data"
