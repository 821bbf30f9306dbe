"""Prints bench/run.sh's results as one Markdown table, then each target's verdict.

    python3 bench/table.py RESULTS RESERVATIONS LEASES

RESULTS holds one line per run: `ROW SYSTEM WORKLOAD key=value ...` (what
benches/loadgen prints, tagged with the row's name by run.sh),
`startup-live startup_ms=N`, `lock-pgbench pgbench uncontended ops_per_s=N`,
the `result BENCH FIGURE key=value ...` lines of the sessions, events and
renewal_traffic benches as `BENCH-FIGURE key=value ...`, and notes
`note-NAME free text` (why a figure is missing, which baseline was used).
"""

import os
import sys

path, reservations, leases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows, notes = {}, {}
for line in open(path):
    parts = line.split()
    if not parts:
        continue
    if parts[0].startswith("note-"):
        notes[parts[0][len("note-"):]] = line.split(None, 1)[1].strip() if len(parts) > 1 else ""
        continue
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


def fmt(value, spec):
    return format(value, spec) if value is not None else "–"


def count(value):
    return f"{value:,.0f}" if value is not None else "?"


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
    ("scale-held", "4 acquire (timed) + release", f"leasehold, {leases:,} expired, reaper held off", None),
    ("scale-reaping", "4 acquire (timed) + release", f"leasehold, reaper deleting {leases:,}", ("p99_ms", "scale-held")),
]

# Each line of the table: workload, system, ops/s, p50 ms, p99 ms, errors, ratio.
table = []
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
    table.append((workload, system, num(row, "ops_per_s"), num(row, "p50_ms"), num(row, "p99_ms"),
                  r.get("errors", ""), shown))

# 5: the sessions, events and renewal_traffic benches.
bound = num("sessions-renew", "bound")
if "sessions-renew" in rows:
    workload = "5 session keep-alive (renew), one at a time"
    table.append((workload, "leasehold, session with 1 bound lease", None,
                  num("sessions-renew", "one_p50_ms"), num("sessions-renew", "one_p99_ms"), "", ""))
    table.append((workload, f"leasehold, session with {count(bound)} bound leases", None,
                  num("sessions-renew", "many_p50_ms"), num("sessions-renew", "many_p99_ms"), "",
                  "p50 " + fmt_ratio(num("sessions-renew", "p50_ratio"))))
if "sessions-expiry" in rows:
    workload = "5 acquire (timed) + release, 4 clients"
    table.append((workload, "leasehold, quiet", num("sessions-expiry", "quiet_ops_per_s"),
                  num("sessions-expiry", "quiet_p50_ms"), num("sessions-expiry", "quiet_p99_ms"), "", ""))
    expiring = num("sessions-reaped", "bound") or bound
    table.append((workload, f"leasehold, while a session of {count(expiring)} leases expires and is reaped",
                  num("sessions-expiry", "during_ops_per_s"), num("sessions-expiry", "during_p50_ms"),
                  num("sessions-expiry", "during_p99_ms"), "",
                  "p99 " + fmt_ratio(num("sessions-expiry", "p99_ratio"))))
for tag, whom in (("own", "watchers of their own prefix"), ("all", "watchers of every key")):
    row = f"events-delivery_{tag}"
    if row in rows:
        received, expected = num(row, "received"), num(row, "expected")
        missing = f"{expected - received:,.0f}" if received is not None and expected is not None else ""
        table.append((f"5 event delivery, {count(num('events-changes', 'asked_per_s'))} changes/s asked",
                      f"leasehold, {count(num(row, 'watchers'))} {whom}", num("events-changes", "per_s"),
                      num(row, "p50_ms"), num(row, "p99_ms"), missing, ""))
if "events-idle" in rows:
    workload = f"5 acquire + release, {count(num('events-idle', 'clients'))} clients"
    table.append((workload, "leasehold, no watcher", num("events-idle", "none_ops_per_s"), None, None, "", ""))
    table.append((workload, f"leasehold, {count(num('events-idle', 'watchers'))} idle watchers",
                  num("events-idle", "watched_ops_per_s"), None, None, "",
                  "ops " + fmt_ratio(num("events-idle", "ratio"))))
if "events-change_log" in rows:
    workload = (f"5 acquire + release, {count(num('events-change_log', 'clients'))} clients "
                f"(median of {count(num('events-change_log', 'rounds'))})")
    table.append((workload, "leasehold without the change log (baseline)",
                  num("events-change_log", "without_ops_per_s"), None, None, "", ""))
    table.append((workload, "leasehold, this build", num("events-change_log", "with_ops_per_s"), None, None, "",
                  "ops " + fmt_ratio(num("events-change_log", "ratio"))))
if "renewal_traffic-windows" in rows:
    w = "renewal_traffic-windows"
    workload = (f"5 renewal requests of {count(num(w, 'locks'))} locks "
                f"({fmt(num(w, 'ttl_ms') and num(w, 'ttl_ms') / 1000, '.0f')} s TTL, "
                f"every {fmt(num(w, 'every_ms') and num(w, 'every_ms') / 1000, '.2f')} s)")
    table.append((workload, "leasehold, each lease renewed on its own", num(w, "own_per_s"), None, None,
                  rows[w].get("own_refused", ""), ""))
    requests = ratio(num(w, "own_per_s"), num(w, "one_per_s"))
    table.append((workload, "leasehold, the locks bound to one session, it alone renewed", num(w, "one_per_s"),
                  None, None, rows[w].get("one_refused", ""),
                  f"per-lock {requests:,.0f}×" if requests is not None else "per-lock –"))

print("| workload | system | ops/s | p50 ms | p99 ms | errors | ratio |")
print("|---|---|---:|---:|---:|---:|---:|")
for workload, system, ops, p50, p99, errors, shown in table:
    ops_text = fmt(ops, ",.0f") if ops is None or ops >= 10 else fmt(ops, ".2f")
    print(f"| {workload} | {system} | {ops_text} | {fmt(p50, '.2f')} | {fmt(p99, '.2f')} | {errors} | {shown} |")
print()
pgbench = num("lock-pgbench", "ops_per_s")
if pgbench is not None:
    print(f"`lock-pgbench` (pgbench on the one-replica database, each client inserting one "
          f"`lock_leases` row and deleting it, each its own transaction): {pgbench:,.0f} pairs/s.")
    print()
print("ratio: leasehold's ops/s ÷ the system's (1, 2); the row's latency ÷ the empty case's (3, 4 live); "
      "the reaping p99 ÷ the p99 on the same file with the reaper held off (4); "
      "5: the row's latency or ops/s ÷ the row above's, and per-lock renewal requests ÷ the session's.")
print("5, event delivery: ops/s is the changes made a second, latency from the request that made the "
      "change to its arrival at the watcher, errors the deliveries that never came; renewal requests: "
      "ops/s is renewal requests a second, errors those refused.")
print()


def verdict(ok):
    return "met" if ok else "MISSED"


def missing(what, *names):
    """The target line of a figure the run did not produce, with the reason."""
    reasons = [notes[n] for n in names if n in notes]
    print(f"- {what}: not measured: " + ("; ".join(reasons) if reasons else "the bench printed no figure"))


print("Targets:")
etcd = ratio(num("lock-leasehold", "ops_per_s"), num("lock-etcd", "ops_per_s"))
redis = ratio(num("lock-leasehold", "ops_per_s"), num("lock-redis", "ops_per_s"))
p99, etcd_p99 = num("lock-leasehold", "p99_ms"), num("lock-etcd", "p99_ms")
if etcd is not None and redis is not None:
    print(f"- 1: {etcd:.2f}× etcd's ops/s (≥ 3×: {verdict(etcd >= 3)}); "
          f"{redis:.2f}× Redis-with-fsync's (≥ 0.5×: {verdict(redis >= 0.5)}"
          + ("" if redis >= 0.5 else f", short by {0.5 / redis:.1f}×") + "); "
          f"p99 {p99:.1f} ms vs etcd's {etcd_p99:.1f} ms (no worse: {verdict(p99 <= etcd_p99)})")
handoffs = ratio(num("wait-leasehold", "ops_per_s"), num("wait-etcd", "ops_per_s"))
if handoffs is not None:
    print(f"- 2: contended hand-offs {handoffs:.2f}× etcd's lock API (≥ 2×: {verdict(handoffs >= 2)})")
subnets = ratio(num("subnet-full", "p50_ms"), num("subnet-empty", "p50_ms"))
if subnets is not None:
    print(f"- 3: reserve p50 with {reservations:,} live reservations is {subnets:.2f}× the empty "
          f"pool's (≤ 2×: {verdict(subnets <= 2)})")
live = ratio(num("scale-live", "p50_ms"), num("scale-empty", "p50_ms"))
if live is not None:
    print(f"- 4: acquire p50 with {leases:,} live leases is {live:.2f}× the empty database's "
          f"(≤ 1.5×: {verdict(live <= 1.5)})")
if "scale-reaping" in rows:
    reaping_p99, held_p99, empty_p99 = (num(r, "p99_ms") for r in ("scale-reaping", "scale-held", "scale-empty"))
    held, empty = ratio(reaping_p99, held_p99), ratio(reaping_p99, empty_p99)
    took = rows["scale-reaping"].get("reap_s", "?")
    quiet = (f"{held:.2f}× the quiet p99 on the same database with the reaper held off "
             f"({reaping_p99:.2f} vs {held_p99:.2f} ms; < 2×: {verdict(held < 2)})" if held is not None
             else "not compared with the quiet p99 on the same database (no held-off run, so no verdict)")
    versus_empty = (f"{empty:.2f}× the empty database's ({empty_p99:.2f} ms; information)" if empty is not None
                    else "not compared with the empty database's")
    print(f"- 4: acquire p99 while the reaper deletes {leases:,} expired leases is {quiet} and "
          f"{versus_empty}" + ("; the verdict uses the same database's" if held is not None else "")
          + f"; reaping them took {took} s "
          "with the default batch (100, each followed by a rest three times as long as it took) and interval (500 ms)")
startup = num("startup-live", "startup_ms")
if startup is not None:
    print(f"- start-up on the database with {leases:,} live leases (each gets a fresh TTL, "
          f"rule 7): {startup / 1000:.1f} s ({startup:,.0f} ms; ≤ 1 s: {verdict(startup <= 1000)})")
pg1 = ratio(num("lock-pg1", "ops_per_s"), num("lock-leasehold", "ops_per_s"))
if pg1 is not None:
    pg_bench = ratio(num("lock-pg1", "ops_per_s"), pgbench)
    pg2 = ratio(num("lock-pg2", "ops_per_s"), num("lock-pg1", "ops_per_s"))
    print(f"- PostgreSQL: one replica {pg1:.2f}× SQLite (≥ 0.5×: {verdict(pg1 >= 0.5)}) and "
          + (f"{pg_bench:.2f}× pgbench (≥ 0.5×: {verdict(pg_bench >= 0.5)})" if pg_bench is not None
             else "pgbench not measured (no pgbench)")
          + (f"; two replicas {pg2:.2f}× one" + (
              f" (≥ 1.2×: {verdict(pg2 >= 1.2)})" if (os.cpu_count() or 1) > 2 else
              " (≥ 1.2× where the database has cores to spare; on this machine the replicas, "
              "the database and the load share 2 cores: for information)")
             if pg2 is not None else ""))

# 5: sessions (benches/sessions.rs).
what = "5: session keep-alive p50, 10,000 bound leases vs 1"
if "sessions-renew" in rows:
    r = num("sessions-renew", "p50_ratio")
    print(f"- 5: session keep-alive p50 with {count(bound)} bound leases is {r:.2f}× that with 1 "
          f"({num('sessions-renew', 'many_p50_ms'):.2f} vs {num('sessions-renew', 'one_p50_ms'):.2f} ms; "
          f"≤ 1.2×: {verdict(r <= 1.2)})")
else:
    missing(what, "sessions")
what = "5: acquire p99 while a session of 10,000 leases expires vs quiet"
if "sessions-expiry" in rows:
    r = num("sessions-expiry", "p99_ratio")
    print(f"- 5: acquire p99 of 4 clients while a session of {count(bound)} leases expires and is reaped is "
          f"{r:.2f}× their quiet p99 ({num('sessions-expiry', 'during_p99_ms'):.2f} vs "
          f"{num('sessions-expiry', 'quiet_p99_ms'):.2f} ms; ≤ 2×: {verdict(r <= 2)})")
else:
    missing(what, "sessions")
what = "5: keys of an expired session free to a grant"
if "sessions-free" in rows:
    free = num("sessions-free", "after_end_ms")
    reaped, interval = num("sessions-reaped", "after_end_ms"), num("sessions-reaped", "reaper_interval_ms")
    print(f"- 5: a key of the expired session of {count(bound)} leases is free to a grant {free:.1f} ms after "
          f"the session's end (≤ one reaper interval, 500 ms by default: {verdict(free <= 500)})"
          + (f"; the reaper (every {interval:,.0f} ms in this bench) deleted the session and its leases "
             f"{reaped / 1000:.2f} s after its end (information)" if reaped is not None else ""))
else:
    missing(what, "sessions")

# 5: watchers (benches/events.rs).
capped = f" ({notes['watchers']})" if "watchers" in notes else ""
what = "5: event delivery to 10,000 watchers at 1,000 changes/s"
own, every = rows.get("events-delivery_own"), rows.get("events-delivery_all")
if own and every:
    got = [(num(r, "received"), num(r, "expected")) for r in ("events-delivery_own", "events-delivery_all")]
    complete = all(g is not None and e is not None and g >= e for g, e in got)
    print(f"- 5: event delivery at {count(num('events-changes', 'per_s'))} changes/s "
          f"(asked {count(num('events-changes', 'asked_per_s'))}/s) to "
          f"{count(num('events-delivery_own', 'watchers'))} watchers of their own prefix: "
          f"p50 {num('events-delivery_own', 'p50_ms'):.2f} ms, p99 {num('events-delivery_own', 'p99_ms'):.2f} ms, "
          f"{count(got[0][0])} of {count(got[0][1])} deliveries; to {count(num('events-delivery_all', 'watchers'))} "
          f"watchers of every key: p50 {num('events-delivery_all', 'p50_ms'):.2f} ms, "
          f"p99 {num('events-delivery_all', 'p99_ms'):.2f} ms, {count(got[1][0])} of {count(got[1][1])} "
          f"(latency: information; all must arrive: {verdict(complete)}){capped}")
else:
    missing(what, "events", "watchers")
what = "5: memory per watcher"
if "events-memory" in rows:
    print(f"- 5: memory per watcher: {num('events-memory', 'kib_per_watcher'):.1f} KiB "
          f"({num('events-memory', 'before_mib'):.1f} → {num('events-memory', 'after_mib'):.1f} MiB "
          f"for {count(num('events-memory', 'watchers'))}; information){capped}")
else:
    missing(what, "events", "watchers")
what = "5: acquire + release with 10,000 idle watchers vs none"
if "events-idle" in rows:
    r = num("events-idle", "ratio")
    print(f"- 5: acquire + release with {count(num('events-idle', 'watchers'))} idle watchers is {r:.2f}× "
          f"the throughput with none ({count(num('events-idle', 'watched_ops_per_s'))} vs "
          f"{count(num('events-idle', 'none_ops_per_s'))} ops/s; ≥ 0.9×: {verdict(r >= 0.9)}){capped}")
else:
    missing(what, "events", "watchers")
what = "5: the change log's cost, acquire + release with it vs without"
if "events-change_log" in rows:
    r = num("events-change_log", "ratio")
    print(f"- 5: the change log's cost: acquire + release with it is {r:.2f}× the throughput without "
          f"({count(num('events-change_log', 'with_ops_per_s'))} vs "
          f"{count(num('events-change_log', 'without_ops_per_s'))} ops/s, median of "
          f"{count(num('events-change_log', 'rounds'))}; baseline: {notes.get('baseline', '?')}; "
          f"≥ 0.9×: {verdict(r >= 0.9)})")
elif "change_log" in notes:
    missing(what, "change_log")
elif "baseline" not in notes:
    print(f"- {what}: not measured (set BENCH_BASELINE=1 or BASELINE_BIN)")
else:
    missing(what, "events", "watchers")

# 5: renewal traffic (benches/renewal_traffic.rs).
what = "5: renewal traffic, per-lock renewals vs one session"
w = "renewal_traffic-windows"
if w in rows:
    requests = ratio(num(w, "own_per_s"), num(w, "one_per_s"))
    cpu = ratio(num(w, "own_cpu_s_per_s"), num(w, "one_cpu_s_per_s"))
    print(f"- 5: renewal traffic of {count(num(w, 'locks'))} locks over {count(num(w, 'window_s'))} s: "
          f"one session sends {fmt(requests, ',.0f')}× fewer renewal requests than per-lock renewals "
          f"({num(w, 'own_per_s'):.1f} vs {num(w, 'one_per_s'):.2f}/s) and the server spends "
          f"{fmt(cpu, ',.1f')}× less CPU ({num(w, 'own_cpu_s_per_s'):.4f} vs {num(w, 'one_cpu_s_per_s'):.4f} s/s; "
          f"refused {rows[w].get('own_refused', '?')} and {rows[w].get('one_refused', '?')}; information)")
else:
    missing(what, "renewal_traffic")
