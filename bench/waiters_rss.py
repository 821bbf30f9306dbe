"""Resident memory of a leasehold server across rounds of waiters that
disconnect: each round parks WAITERS long-poll acquires on held keys, waits
until the server counts them all, drops every connection, waits until the
server has let them go, and prints the server's RSS. Run by waiters_rss.sh."""

import asyncio
import json
import sys
import time
import urllib.request

BASE, PID, ROUNDS, WAITERS, KEYS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
HOST, PORT = BASE.removeprefix("http://").split(":")


def rss_mib():
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def metric(name):
    text = urllib.request.urlopen(f"{BASE}/metrics").read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    return None


def post(path, body):
    request = urllib.request.Request(f"{BASE}{path}", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    return json.load(urllib.request.urlopen(request))


def wait_until(check, what, patience=120):
    started = time.time()
    while not check():
        if time.time() - started > patience:
            sys.exit(f"gave up waiting for {what}")
        time.sleep(0.1)


async def park(i):
    reader, writer = await asyncio.open_connection(HOST, int(PORT))
    body = json.dumps({"holder": f"w{i}", "ttl_ms": 60000, "wait_ms": 300000})
    writer.write((f"POST /v1/locks/held-{i % KEYS}/acquire HTTP/1.1\r\nHost: localhost\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    await writer.drain()
    return writer


async def round_of_waiters():
    writers = []
    for start in range(0, WAITERS, 500):
        writers += await asyncio.gather(*(park(i) for i in range(start, min(start + 500, WAITERS))))
    await asyncio.get_running_loop().run_in_executor(
        None, wait_until, lambda: metric("leasehold_waiters") == WAITERS, "every waiter to park")
    for w in writers:
        w.transport.abort()


def main():
    for k in range(KEYS):
        post(f"/v1/locks/held-{k}/acquire", {"holder": "holder", "ttl_ms": 86400000})
    time.sleep(1)
    baseline = rss_mib()
    print(f"baseline rss_mib={baseline:.1f}", flush=True)
    for r in range(1, ROUNDS + 1):
        asyncio.run(round_of_waiters())
        peak = rss_mib()
        wait_until(lambda: metric("leasehold_waiters") == 0, "every waiter to leave")
        time.sleep(5)
        after = rss_mib()
        print(f"round={r} waiters={WAITERS} peak_rss_mib={peak:.1f} rss_after_mib={after:.1f} "
              f"above_baseline_mib={after - baseline:.1f}", flush=True)


main()
