"""Prints bench/run.sh's results as one Markdown table, then each target's verdict.

    python3 bench/table.py RESULTS RESERVATIONS LEASES

RESULTS holds one line per run: `ROW SYSTEM WORKLOAD key=value ...` (what
benches/loadgen prints, tagged with the row's name by run.sh), and
`startup-live startup_ms=N`.
"""

import sys

path, reservations, leases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = {}
for line in open(path):
    parts = line.split()
    rows[parts[0]] = dict(p.split("=", 1) for p in parts[1:] if "=" in p)


def num(row, field):
    value = rows.get(row, {}).get(field)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt_ratio(r):
    return f"{r:.2f}×" if r is not None else "–"


# (row, workload, system, what the ratio column compares)
LAYOUT = [
    ("lock-leasehold", "1 uncontended acquire + release", "leasehold", None),
    ("lock-etcd", "1 uncontended acquire + release", "etcd (lease + txn)", ("ops", "lock-leasehold")),
    ("lock-redis", "1 uncontended acquire + release", "Redis (`appendfsync always`)", ("ops", "lock-leasehold")),
    ("lock-pg1", "1 uncontended acquire + release", "leasehold on PostgreSQL, 1 replica", ("ops", "lock-leasehold")),
    ("lock-pg2", "1 uncontended acquire + release", "leasehold on PostgreSQL, 2 replicas", ("ops", "lock-leasehold")),
    ("wait-leasehold", "2 contended: all clients wait on one key (handoffs)", "leasehold (`wait_ms`)", None),
    ("wait-etcd", "2 contended: all clients wait on one key (handoffs)", "etcd lock API", ("ops", "wait-leasehold")),
    ("subnet-empty", "3 reserve (timed) + release of a /24 in a /8", "leasehold, empty pool", None),
    ("subnet-fill", f"3 filling the pool: {reservations:,} reserves", "leasehold", None),
    ("subnet-full", "3 reserve (timed) + release of a /24 in a /8", f"leasehold, {reservations:,} live", ("p50_ms", "subnet-empty")),
    ("scale-empty", "4 acquire (timed) + release", "leasehold, empty database", None),
    ("scale-live", "4 acquire (timed) + release", f"leasehold, {leases:,} live leases", ("p50_ms", "scale-empty")),
    ("scale-reaping", "4 acquire (timed) + release", f"leasehold, reaper deleting {leases:,}", ("p99_ms", "scale-empty")),
]

print("| workload | system | ops/s | p50 ms | p99 ms | errors | ratio |")
print("|---|---|---:|---:|---:|---:|---:|")
for row, workload, system, compare in LAYOUT:
    if row not in rows:
        continue
    r = rows[row]
    if compare is None:
        shown = "1.00×" if row in ("lock-leasehold", "wait-leasehold") else ""
    elif compare[0] == "ops":
        shown = "leasehold " + fmt_ratio(ratio(num(compare[1], "ops_per_s"), num(row, "ops_per_s")))
    else:
        field = compare[0]
        shown = f"{field[:3]} " + fmt_ratio(ratio(num(row, field), num(compare[1], field)))
    print(f"| {workload} | {system} | {num(row, 'ops_per_s'):,.0f} | {num(row, 'p50_ms'):.2f} "
          f"| {num(row, 'p99_ms'):.2f} | {r.get('errors', '')} | {shown} |")
print()
print("ratio: leasehold's ops/s ÷ the system's (1, 2); the row's latency ÷ the empty case's (3, 4).")
print()


def verdict(ok):
    return "met" if ok else "MISSED"


print("Targets:")
etcd = ratio(num("lock-leasehold", "ops_per_s"), num("lock-etcd", "ops_per_s"))
redis = ratio(num("lock-leasehold", "ops_per_s"), num("lock-redis", "ops_per_s"))
p99, etcd_p99 = num("lock-leasehold", "p99_ms"), num("lock-etcd", "p99_ms")
if etcd is not None and redis is not None:
    print(f"- 1: {etcd:.2f}× etcd's ops/s (≥ 3×: {verdict(etcd >= 3)}); "
          f"{redis:.2f}× Redis-with-fsync's (≥ 0.5×: {verdict(redis >= 0.5)}"
          + ("" if redis >= 0.5 else f", short by {0.5 / redis:.1f}×") + "); "
          f"p99 {p99:.1f} ms vs etcd's {etcd_p99:.1f} ms (no worse: {verdict(p99 <= etcd_p99)})")
subnets = ratio(num("subnet-full", "p50_ms"), num("subnet-empty", "p50_ms"))
if subnets is not None:
    print(f"- 3: reserve p50 with {reservations:,} live reservations is {subnets:.2f}× the empty "
          f"pool's (≤ 2×: {verdict(subnets <= 2)})")
live = ratio(num("scale-live", "p50_ms"), num("scale-empty", "p50_ms"))
if live is not None:
    print(f"- 4: acquire p50 with {leases:,} live leases is {live:.2f}× the empty database's "
          f"(≤ 1.5×: {verdict(live <= 1.5)})")
reaping = ratio(num("scale-reaping", "p99_ms"), num("scale-empty", "p99_ms"))
if reaping is not None:
    took = rows["scale-reaping"].get("reap_s", "?")
    print(f"- 4: acquire p99 while the reaper deletes {leases:,} expired leases is {reaping:.2f}× the "
          f"empty database's (< 2×: {verdict(reaping < 2)}); reaping them took {took} s "
          "with the default batch (100, each followed by a rest three times as long as it took) and interval (500 ms)")
startup = num("startup-live", "startup_ms")
if startup is not None:
    print(f"- start-up on the database with {leases:,} live leases (each gets a fresh TTL, "
          f"rule 7): {startup / 1000:.1f} s")
