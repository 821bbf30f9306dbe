// How soon the console paints with a lot of data: the locks page and the
// overview (whose counts read every live lock) of a server with LOCKS live
// leases, and a /8 pool's map cut into /24s (65,536 blocks)
// with every STRIDE-th /24 reserved. Each page is loaded LOADS times in a
// fresh browser context; the time is from the start of the navigation to the
// first frame after the page's table (or map) is in the document. Prints the
// median and every load.
//
// usage: node console_paint.mjs BINARY LOADGEN WORKDIR
// (BINARY: a release `leasehold`; LOADGEN: the loadgen bench's executable,
// whose `seed` fills the stopped server's database.) bench/console_paint.sh
// builds both and runs this. Needs playwright-core beside this script and
// Debian's chromium.
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { chromium } from "playwright-core";

const [binary, loadgen, work] = process.argv.slice(2);
const LOCKS = Number(process.env.LOCKS || 100000);
const LOADS = Number(process.env.LOADS || 5);
const STRIDE = Number(process.env.STRIDE || 8);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

const freePort = () => new Promise((done) => {
  const s = createServer().listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => done(port)); });
});

async function serve(db) {
  const port = await freePort();
  const child = spawn(binary, ["serve", "--listen", `127.0.0.1:${port}`, "--db", db], { stdio: "ignore" });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (await fetch(`${base}/readyz`).then((r) => r.ok, () => false)) return { base, child };
    await sleep(50);
  }
  throw new Error("the server did not start");
}
const stop = (child) => new Promise((done) => { child.once("exit", done); child.kill("SIGTERM"); });

async function call(base, method, path, body) {
  const response = await fetch(base + path, { method, headers: { "content-type": "application/json" },
    body: body && JSON.stringify(body) });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// LOADS loads of BASE/console#HASH, each in a fresh context, until SELECTOR.
async function paint(browser, base, hash, selector) {
  const times = [];
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${base}/console#${hash}`, { waitUntil: "commit" });
    await page.waitForSelector(selector, { timeout: 60000 });
    times.push(await page.evaluate(() => new Promise((done) =>
      requestAnimationFrame(() => setTimeout(() => done(performance.now()))))));
    await context.close();
  }
  return times.map(Math.round);
}

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const db = `${work}/leasehold.db`;
let { base, child } = await serve(db); // migrates the file
await stop(child);
const seeded = execFileSync(loadgen, ["seed", db, String(LOCKS), "live"], { encoding: "utf8" }).trim();
console.log(`${seeded} (loadgen seed)`);
({ base, child } = await serve(db));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
try {
  const live = await call(base, "GET", "/v1/locks?limit=1");
  if (!live.next_cursor) throw new Error("the seeded leases are not live");
  const locks = await paint(browser, base, "/locks", "main table tbody tr");
  console.log(`locks page, ${LOCKS} live locks: first paint of the table ${median(locks)} ms median of ${LOADS} (${locks.join(", ")} ms)`);
  // The overview counts every live lock (GET /v1/status) each time it reads.
  const reads = [];
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    const status = await call(base, "GET", "/v1/status");
    reads.push(performance.now() - started);
    if (status.counts.locks < LOCKS) throw new Error(`the status counts ${status.counts.locks} locks`);
  }
  console.log(`GET /v1/status with ${LOCKS} live locks: ${median(reads).toFixed(1)} ms median of 20 (slowest ${Math.max(...reads).toFixed(1)} ms)`);
  const overview = await paint(browser, base, "/", "#live-locks");
  console.log(`overview, ${LOCKS} live locks: first paint of its counts ${median(overview)} ms median of ${LOADS} (${overview.join(", ")} ms)`);

  // A /8 pool, every STRIDE-th /24 reserved (a run of each state per gap).
  await call(base, "PUT", "/v1/pools/paint", { cidr: "10.0.0.0/8" });
  const subnets = Array.from({ length: 65536 / STRIDE }, (_, i) => {
    const n = i * STRIDE;
    return `10.${n >> 8}.${n & 255}.0/24`;
  });
  const started = Date.now();
  for (let i = 0; i < subnets.length; i += 32) {
    await Promise.all(subnets.slice(i, i + 32).map((subnet) =>
      call(base, "POST", "/v1/pools/paint/reservations", { holder: "paint", subnet, ttl_ms: 3600000 })));
  }
  const map = await call(base, "GET", "/v1/pools/paint/map?prefix_len=24");
  console.log(`${subnets.length} /24 reservations in ${((Date.now() - started) / 1000).toFixed(1)} s; the map has ${map.runs.length} runs`);
  const pool = await paint(browser, base, "/pools/paint?prefix_len=24", "#pool-map");
  console.log(`pool map, /8 in /24s (65536 blocks, ${map.runs.length} runs): first paint ${median(pool)} ms median of ${LOADS} (${pool.join(", ")} ms)`);
} finally {
  await browser.close();
  await stop(child);
}
