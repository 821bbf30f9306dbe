// The README's pictures of the console: a fresh server is seeded through the
// API and given some traffic, then the overview (with its charts), a key's
// page with a holder and two waiters, and a pool's map are saved as PNGs of
// a 1200 × 800 window. Not run in CI (it spends TRAFFIC_SECONDS, 60, on traffic for
// the charts).
//
// usage: node console_screenshots.mjs BINARY OUT_DIR
// (BINARY: a `leasehold`; writes OUT_DIR/console-overview.png,
// console-queue.png, console-pool-map.png.) Needs playwright-core beside
// this script and Debian's chromium.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [binary, out] = process.argv.slice(2);
const SECONDS = Number(process.env.TRAFFIC_SECONDS || 60);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const port = await new Promise((done) => {
  const s = createServer().listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => done(port)); });
});
const base = `http://127.0.0.1:${port}`;
const data = mkdtempSync(join(tmpdir(), "leasehold-screenshots-"));
const server = spawn(binary, ["serve", "--listen", `127.0.0.1:${port}`, "--db", join(data, "leasehold.db")],
  { stdio: "ignore" });
for (let i = 0; i < 200 && !(await fetch(`${base}/readyz`).then((r) => r.ok, () => false)); i++) await sleep(50);

async function call(method, path, body) {
  const response = await fetch(base + path, { method, headers: { "content-type": "application/json" },
    body: body && JSON.stringify(body) });
  return { status: response.status, body: response.status === 204 ? null : await response.json() };
}
const lock = (key) => `/v1/locks/${encodeURIComponent(key)}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
try {
  // Standing data: leases under a few services, a pool with reservations.
  for (const [service, count] of [["billing", 12], ["deploy", 6], ["reports", 9]]) {
    await call("POST", "/v1/lock-sets/acquire", { holder: `${service}-worker-1`, ttl_ms: 600000,
      keys: Array.from({ length: count }, (_, i) => `${service}/shard-${i}`) });
  }
  await call("PUT", "/v1/pools/office", { cidr: "10.20.0.0/16" });
  // The first racks' subnets from the start, then some scattered over it.
  for (let i = 0; i < 90; i++) {
    const third = i < 30 ? i : (i * 53 + (i >> 3) * 7) % 256;
    const r = await call("POST", "/v1/pools/office/reservations", { holder: `rack-${(i % 9) + 1}`, ttl_ms: 600000,
      subnet: i % 7 === 3 ? `10.20.${third}.64/26` : `10.20.${third}.0/24` });
    if (r.status === 201 && i % 3 === 0) {
      await call("POST", `/v1/pools/office/reservations/${r.body.id}/confirm`, { token: r.body.token });
    }
  }

  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await page.goto(`${base}/console#/`);
  await page.getByRole("status").filter({ hasText: "live" }).waitFor();

  // Traffic for the charts: grants and releases at a varying pace, a few
  // expiries, refusals and waits.
  const until = Date.now() + SECONDS * 1000;
  for (let round = 0; Date.now() < until; round++) {
    const n = 5 + Math.round(15 * (1 + Math.sin(round / 4)));
    const set = await call("POST", "/v1/lock-sets/acquire",
      { holder: "jobs-runner", ttl_ms: round % 5 ? 30000 : 1000, keys: Array.from({ length: n }, (_, i) => `jobs/${round}-${i}`) });
    await call("POST", `${lock("billing/shard-0")}/acquire`, { holder: "billing-worker-2", ttl_ms: 1000 }); // refused
    const waiter = call("POST", `${lock(`cron/tick-${round % 3}`)}/acquire`, { holder: "cron-2", ttl_ms: 1000, wait_ms: 2000 });
    const first = await call("POST", `${lock(`cron/tick-${round % 3}`)}/acquire`, { holder: "cron-1", ttl_ms: 200 });
    if (round % 5) for (const l of set.body.items.slice(0, n - 2)) await call("POST", `${lock(l.key)}/release`, { token: l.token });
    await sleep(700);
    if (first.status === 201) await call("POST", `${lock(first.body.key)}/release`, { token: first.body.token });
    await waiter;
  }

  // A key with a holder and two waiters, waiting while the pictures are taken.
  const held = await call("POST", `${lock("deploy/production")}/acquire`, { holder: "deployer-ci-4812", ttl_ms: 120000 });
  const waiting = ["deployer-ci-4813", "deployer-laptop-ana"].map(async (holder, i) => {
    await sleep(300 * i);
    return call("POST", `${lock("deploy/production")}/acquire`, { holder, ttl_ms: 60000, wait_ms: 30000 });
  });
  await sleep(1000);
  await page.evaluate(() => { location.hash = "#/"; });
  await page.getByRole("link", { name: "deploy/production" }).first().waitFor();
  await sleep(500);
  await page.screenshot({ path: join(out, "console-overview.png") });

  await page.evaluate(() => { location.hash = "#/locks/deploy%2Fproduction"; });
  await page.getByRole("cell", { name: "deployer-laptop-ana" }).waitFor();
  await page.evaluate(() => document.activeElement?.blur());
  await page.screenshot({ path: join(out, "console-queue.png") });

  await page.evaluate(() => { location.hash = "#/pools/office"; });
  await page.waitForSelector("#pool-map");
  await page.focus("#pool-map");
  await page.keyboard.press("PageDown");
  await page.keyboard.press("PageDown");
  await page.screenshot({ path: join(out, "console-pool-map.png") });

  await call("POST", `${lock("deploy/production")}/release`, { token: held.body.token });
  for (const w of await Promise.all(waiting)) {
    if (w.status === 201) await call("POST", `${lock("deploy/production")}/release`, { token: w.body.token });
  }
  console.log(`saved ${["overview", "queue", "pool-map"].map((n) => join(out, `console-${n}.png`)).join(", ")}`);
} finally {
  await browser.close();
  server.kill("SIGTERM");
  await sleep(200);
  rmSync(data, { recursive: true, force: true });
}
