// The console in headless Chromium, as an operator uses it: the page loads
// from the server alone (any request elsewhere fails the check) without a
// script error; a grant made elsewhere appears on the open locks page
// without reloading; on a key's page a waiter appears in the queue and
// leaves it when it is granted, and the holders follow; the other pages are
// checked against data seeded through the API (console_pages.mjs); every
// page is reached with the keyboard alone, and axe-core finds no serious or
// critical accessibility violation on any of them; no page breaks its
// Content-Security-Policy or misses its icon; a token scoped to one key
// prefix and one pool sees nothing outside them (console_scope.mjs).
//
// usage: node console_browser.mjs BASE_URL [API_TOKEN [READER_TOKEN [SCOPED_TOKEN]]]
// (READER_TOKEN: one without admin, to whom the console offers no admin action;
// SCOPED_TOKEN: one made with --lock-prefix scoped/ --pool scoped-pool)
// Needs playwright-core and axe-core (from npm, beside this script) and
// Debian's chromium.
import { chromium } from "playwright-core";
import { accessible, checkPages, follow } from "./console_pages.mjs";
import { checkScope } from "./console_scope.mjs";

const [base, token, readerToken, scopedToken] = process.argv.slice(2);
const origin = new URL(base).origin;
const key = `console/${process.pid}`;

function check(condition, what) {
  if (!condition) throw new Error(`console: ${what}`);
  console.log(`ok: ${what}`);
}

async function call(method, path, body) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(base + path, { method, headers, body: body && JSON.stringify(body) });
  return { status: response.status, body: response.status === 204 ? null : await response.json() };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
const elsewhere = [];
const errors = [];
// Content-Security-Policy violations and a missing icon: never forgiven, not
// even before signing in.
const faults = [];

// A tab of its own (its own sessionStorage, so its own token). A lease or
// session that ended answers 404, which its page shows as such, and so do
// the capacity of a key that has none and a pool deleted between the list
// of pools and the read of its usage (the browser logs every 4xx it is
// answered).
async function open() {
  const page = await browser.newPage();
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    elsewhere.push(url);
    return route.abort();
  });
  await page.addInitScript(() => document.addEventListener("securitypolicyviolation", (e) =>
    console.error(`Content-Security-Policy violation: ${e.violatedDirective} refused ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`)));
  page.on("response", (response) => {
    if (new URL(response.url()).pathname.endsWith("/favicon.ico") && response.status() !== 200) {
      faults.push(`the icon answered ${response.status()}`);
    }
  });
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    if (/content.security.policy/i.test(message.text())) return void faults.push(message.text());
    const lease = /\/v1\/(locks|sessions|pools)\/[^/]+(\/capacity)?$/.test(message.location().url ?? "");
    if (lease && message.text().includes("status of 404")) return;
    errors.push(`${message.text()} ${message.location().url ?? ""}`);
  });
  return page;
}

try {
  const page = await open();
  await page.goto(`${base}/console`);
  if (token) {
    await page.getByRole("alert").filter({ hasText: "sign in" }).waitFor();
    check(true, "without a token the page asks for one");
    errors.length = 0; // the server's 401s before signing in are its answer
    await page.getByLabel("API token").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForSelector("#live-locks");
    // The token is kept for this tab: a reload stays signed in.
    await page.reload();
  }
  await page.waitForSelector("#live-locks");
  await page.getByRole("status").filter({ hasText: "live" }).waitFor();
  check(true, "the overview shows its figures and the event stream is live");
  // The icon the page links is served: a browser logs a missing one as an
  // error on every load.
  const icon = await page.evaluate(() => document.querySelector("link[rel~='icon']")?.href);
  const iconAnswer = icon && await page.request.get(icon);
  check(iconAnswer?.status() === 200 && iconAnswer.headers()["content-type"].startsWith("image/"),
    `the page's icon is served as an image (${icon})`);

  await accessible(page, "the overview", check);

  // The overview's counts are the server's, and it says what the database is.
  const status = (await call("GET", "/v1/status")).body;
  const backend = { sqlite: "SQLite", postgres: "PostgreSQL" }[status.database.backend];
  check(await page.textContent("#db-backend") === backend, `the overview names the database (${backend})`);
  if (status.database.sqlite) {
    check(!["0 B", ""].includes(await page.textContent("#db-file")), "and the SQLite file's size");
  } else {
    check(Number(await page.textContent("#db-replicas")) >= 1, "and the PostgreSQL replicas seen");
  }

  // Keyboard only: from the top of the page to the locks page.
  await page.keyboard.press("Tab"); // the leasehold link
  await page.keyboard.press("Tab"); // Overview
  await page.keyboard.press("Tab"); // Locks
  await page.keyboard.press("Enter");
  await page.waitForSelector("h2:text('Locks')");
  check(page.url().endsWith("#/locks"), "the locks page is reached with the keyboard");
  await accessible(page, "the locks page", check);

  const held = await call("POST", `/v1/locks/${encodeURIComponent(key)}/acquire`,
    { holder: "first-holder", ttl_ms: 60000, max_lifetime_ms: 600000 });
  check(held.status === 201 && typeof held.body.ends_by === "string",
    "a lock is acquired through the API, capped: its answer shows ends_by");
  const granted = Date.now();
  await page.getByRole("link", { name: key }).waitFor();
  console.log(`figure: the grant appeared on the open locks page ${Date.now() - granted} ms after its answer`);
  check(true, "the grant appears on the open page without a reload");

  await follow(page, page.getByRole("link", { name: key }));
  await page.waitForSelector("h2:has-text('Lock')");
  await page.getByRole("cell", { name: "first-holder" }).waitFor();
  check(true, "the key's page names its holder");
  const holderRow = page.getByRole("row").filter({ hasText: "first-holder" });
  check((await holderRow.getByRole("cell").nth(6).textContent()).startsWith(held.body.ends_by),
    "the key's page shows when the holder's tenure ends (ends by)");
  await accessible(page, "a key's page", check);

  // What an open, idle key's page costs the server: its queue once a second
  // (a waiter joining is not an event), and the charts' sample every 3 s.
  const reads = new Map();
  const countRead = (request) => {
    const path = new URL(request.url()).pathname;
    if (path.startsWith("/v1/")) reads.set(path, (reads.get(path) || 0) + 1);
  };
  page.on("request", countRead);
  await new Promise((done) => setTimeout(done, 3000));
  page.off("request", countRead);
  const waitersPath = `/v1/locks/${encodeURIComponent(key)}/waiters`;
  const others = [...reads].filter(([p]) => p !== waitersPath && p !== "/v1/prefixes");
  console.log(`figure: an idle key's page in 3 s: ${[...reads].map(([p, n]) => `${n} × ${p}`).join(", ")}`);
  check(others.length === 0 && (reads.get(waitersPath) || 0) <= 4,
    "an idle key's page reads its queue alone, once a second (and the charts' sample)");

  const waiting = call("POST", `/v1/locks/${encodeURIComponent(key)}/acquire`,
    { holder: "patient-waiter", ttl_ms: 60000, wait_ms: 4500 });
  await page.getByRole("cell", { name: "patient-waiter" }).waitFor();
  check(true, "a waiter appears in the key's queue");

  const released = await call("POST", `/v1/locks/${encodeURIComponent(key)}/release`,
    { token: held.body.token });
  check(released.status === 204, "the holder releases");
  const answer = await waiting;
  check(answer.status === 201 && answer.body.holder === "patient-waiter", "the waiter is granted");
  await page.getByText("Nobody waits for this key.").waitFor();
  await page.getByRole("cell", { name: "first-holder" }).waitFor({ state: "detached" });
  check(await page.getByRole("cell", { name: "patient-waiter" }).count() === 1,
    "the waiter left the queue and holds the key");
  await call("POST", `/v1/locks/${encodeURIComponent(key)}/release`, { token: answer.body.token });

  // The overview ranks a key with a waiter among the longest queues, and
  // leads to it. (Waits stay under the server's --max-wait, 5 s in CI.)
  const busy = `${key}-busy`;
  const busyPath = `/v1/locks/${encodeURIComponent(busy)}`;
  const first = await call("POST", `${busyPath}/acquire`, { holder: "busy-holder", ttl_ms: 60000 });
  const queued = call("POST", `${busyPath}/acquire`, { holder: "busy-waiter", ttl_ms: 60000, wait_ms: 4500 });
  for (let i = 0; i < 100; i++) {
    const queues = await call("GET", "/v1/queues");
    if (queues.body.items.some((q) => q.key === busy)) break;
    await new Promise((done) => setTimeout(done, 20));
  }
  await page.evaluate(() => { location.hash = "#/"; });
  const longest = page.getByRole("table", { name: "The keys with the most waiters" });
  await longest.getByRole("link", { name: busy, exact: true }).waitFor();
  const figures = ["locks", "waiters", "sessions", "groups", "reservations"];
  let shown = [], counted = [];
  for (let i = 0; i < 20; i++) {
    const now = (await call("GET", "/v1/status")).body.counts;
    counted = figures.map((f) => String(now[f]));
    shown = await Promise.all(figures.map((f) => page.textContent(f === "locks" ? "#live-locks" : `#${f}`)));
    if (shown.join() === counted.join()) break;
    await new Promise((done) => setTimeout(done, 100));
  }
  check(shown.join() === counted.join(), `the overview's counts are the server's (${figures.map((f, i) => `${f} ${shown[i]}`).join(", ")})`);
  check(await longest.getByRole("row").filter({ hasText: busy }).getByRole("cell", { name: "1", exact: true }).count() === 1,
    "the overview lists a key with its one waiter among the longest queues");
  await call("POST", `${busyPath}/release`, { token: first.body.token });
  const busyAnswer = await queued;
  check(busyAnswer.status === 201, "that waiter is granted");
  await call("POST", `${busyPath}/release`, { token: busyAnswer.body.token });

  // The overview's charts, from its own samples of /v1/prefixes: after a
  // burst of grants the grants chart has a new point of more than 10 a
  // second (the checks before it grant a handful in all).
  await page.waitForSelector("#chart-grants");
  const before = Number(await page.evaluate(() => document.getElementById("chart-grants").dataset.points));
  const burstKeys = Array.from({ length: 50 }, (_, i) => `${key}-chart/${i}`);
  const set = await call("POST", "/v1/lock-sets/acquire", { holder: "chart-holder", ttl_ms: 60000, keys: burstKeys });
  check(set.status === 201, "a burst of 50 grants");
  const charted = Date.now();
  await page.waitForFunction((n) => {
    const chart = document.getElementById("chart-grants");
    return chart && Number(chart.dataset.points) > n && Number(chart.dataset.latest) > 10;
  }, before, { timeout: 10000 });
  console.log(`figure: the grants chart showed the burst ${Date.now() - charted} ms after its answer`);
  check(true, `the overview's grants chart shows the burst (${await page.getByRole("img", { name: /^Grants/ }).getAttribute("aria-label")})`);
  for (const l of set.body.items) await call("POST", `/v1/locks/${encodeURIComponent(l.key)}/release`, { token: l.token });
  await accessible(page, "the overview with its charts", check);

  // Under steady traffic the overview reads its counts (which read every
  // live lease) at most once a second, however many events touch it.
  let statusReads = 0;
  const countStatus = (request) => { if (request.url().endsWith("/v1/status")) statusReads++; };
  page.on("request", countStatus);
  const steady = `/v1/locks/${encodeURIComponent(`${key}-steady`)}`;
  let pairs = 0;
  for (const until = Date.now() + 3000; Date.now() < until; pairs++) {
    const lease = await call("POST", `${steady}/acquire`, { holder: "steady", ttl_ms: 60000 });
    await call("POST", `${steady}/release`, { token: lease.body.token });
  }
  page.off("request", countStatus);
  console.log(`figure: ${pairs} grants and releases in 3 s; the open overview read /v1/status ${statusReads} times`);
  check(statusReads >= 1 && statusReads <= 4, `the overview reads its counts at most once a second under traffic (${statusReads} in 3 s)`);

  await checkPages({ page, call, check, key, open, readerToken });
  if (scopedToken) await checkScope({ open, call, check, base, scopedToken });

  check(elsewhere.length === 0, `no request to another origin (${elsewhere.join(", ")})`);
  check(errors.length === 0, `no script error (${errors.join("; ")})`);
  check(faults.length === 0, `no Content-Security-Policy violation, the icon found (${faults.join("; ")})`);
} finally {
  await browser.close();
}
