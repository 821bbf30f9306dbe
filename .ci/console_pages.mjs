// The console's pages beyond locks, checked in the browser against data
// seeded through the API: pools and a pool's map, groups and members, a
// session, the events tail, the admin actions; every page reached with the
// keyboard and scanned by axe-core (injected from the local npm package, so
// the page still asks nothing of another origin).
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

const axeSource = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// No violation of impact serious or critical on the page as it is now.
export async function accessible(page, what, check) {
  // Evaluated through the browser's debugging protocol: the page's
  // Content-Security-Policy rightly refuses an inline script tag.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
  check(violations.length === 0, `axe: no serious or critical violation on ${what} (${violations.join("; ")})`);
}

// From the page's content back to a link of the navigation, with Shift+Tab
// alone, then Enter: whether it led to the link's page.
export async function reach(page, name) {
  await page.evaluate(() => document.getElementById("main").focus());
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press("Shift+Tab");
    const href = await page.evaluate((n) => document.activeElement?.textContent === n
      && document.activeElement.getAttribute("href"), name);
    if (href) {
      await page.keyboard.press("Enter");
      return page.waitForFunction((h) => location.hash === h, href, { timeout: 2000 }).then(() => true, () => false);
    }
  }
  return false;
}

// Enter on a link, as a keyboard user follows it: a page that reads again
// as the key goes down (a live event touched it) may replace the link under
// the press, so the press is made again on the link as it is now, until the
// page is the link's.
export async function follow(page, link) {
  const href = await link.getAttribute("href");
  for (let i = 0; i < 5; i++) {
    await link.press("Enter");
    const went = await page.waitForFunction((h) => location.hash === h, href, { timeout: 2000 })
      .then(() => true, () => false);
    if (went) return;
  }
  throw new Error(`console: Enter on the link to ${href} never led there`);
}

// The map's Hilbert layout, written again here: block i's cell.
function cellOf(bits, i) {
  const side = 2 ** Math.floor(bits / 2);
  const square = Math.floor(i / (side * side));
  let x = 0, y = 0, t = i % (side * side);
  for (let s = 1; s < side; s *= 2, t = Math.floor(t / 4)) {
    const rx = (t >> 1) & 1, ry = (t ^ rx) & 1;
    if (ry === 0) {
      if (rx === 1) { x = s - 1 - x; y = s - 1 - y; }
      [x, y] = [y, x];
    }
    x += s * rx;
    y += s * ry;
  }
  return [x + square * side, y];
}

// The legend's colours: a block's centre pixel is its state's fill or mark.
const COLOURS = { free: ["#e4e8ec"], reserved: ["#f2b33d", "#7a4d00"], allocated: ["#1f5fbf"],
  mixed: ["#a97ee8", "#3d1a78"] };

async function mapMatches(page, call, pool, check) {
  const map = (await call("GET", `/v1/pools/${pool}/map`)).body;
  let index = 0;
  const expected = map.runs.map((r) => { const run = `${index}:${r.count}:${r.state}`; index += Number(r.count); return run; });
  await page.waitForFunction((runs) => document.getElementById("pool-map")?.dataset.runs === runs, expected.join(" "),
    { timeout: 3000 }).catch(() => {});
  const drawn = await page.evaluate(() => document.getElementById("pool-map").dataset.runs);
  check(drawn === expected.join(" "), `the map draws the API's runs (${drawn})`);
  const bits = map.prefix_len - Number(map.cidr.split("/")[1]);
  const cell = Number(await page.evaluate(() => document.getElementById("pool-map").dataset.cell));
  const points = expected.map((r) => r.split(":")).map(([first, , state]) => [cellOf(bits, Number(first)), state]);
  const pixels = await page.evaluate(({ points, cell }) => {
    const c = document.getElementById("pool-map").getContext("2d");
    return points.map(([[x, y]]) => {
      const [r, g, b] = c.getImageData(x * cell + Math.floor(cell / 2), y * cell + Math.floor(cell / 2), 1, 1).data;
      return `#${[r, g, b].map((v) => v.toString(16).padStart(2, "0")).join("")}`;
    });
  }, { points, cell });
  const wrong = points.filter(([, state], i) => state !== "free" && !COLOURS[state].includes(pixels[i]));
  check(wrong.length === 0, `each used run's first block is drawn in its state's colours (${pixels.join(" ")})`);
  const runs = expected.map((r) => r.split(":"));
  const free = runs.filter(([, , state]) => state === "free").sort((a, b) => Number(b[1]) - Number(a[1]))[0];
  const [fx, fy] = cellOf(bits, Number(free[0]));
  const outlined = await page.evaluate(({ fx, fy, cell }) => {
    const { data } = document.getElementById("pool-map").getContext("2d").getImageData(fx * cell, fy * cell, cell, cell);
    for (let i = 0; i < data.length; i += 4) if (data[i] === 0x0f && data[i + 1] === 0x7b && data[i + 2] === 0x3a) return true;
    return false;
  }, { fx, fy, cell });
  check(outlined, "the largest free run is outlined");
  return map;
}

export async function checkPages({ page, call, check, key, open, readerToken }) {
  const tag = `console-${process.pid}`;
  const pool = tag;

  // Pools: a pool with a reserved, a confirmed and a partly used /24.
  check([200, 201].includes((await call("PUT", `/v1/pools/${pool}`, { cidr: "10.77.0.0/16" })).status), "a pool is created");
  const reserve = (body) => call("POST", `/v1/pools/${pool}/reservations`, { holder: "map-holder", ttl_ms: 60000, ...body });
  const reserved = await reserve({ prefix_len: 24 });
  const confirmed = await reserve({ prefix_len: 24 });
  await call("POST", `/v1/pools/${pool}/reservations/${confirmed.body.id}/confirm`, { token: confirmed.body.token });
  await reserve({ prefix_len: 26 });
  check(await reach(page, "Pools"), "the pools page is reached with the keyboard");
  const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: pool, exact: true }) });
  await row.waitFor();
  check(await row.getByRole("cell", { name: "10.77.0.0/16" }).count() === 1, "the pools page lists the pool with its cidr");
  await accessible(page, "the pools page", check);

  await follow(page, row.getByRole("link", { name: pool, exact: true }));
  await page.waitForSelector("#pool-map");
  await mapMatches(page, call, pool, check);
  await page.getByRole("cell", { name: reserved.body.subnet, exact: true }).waitFor();
  check(true, "the reservations table lists the subnets");
  // The pointer rests off the map: the link that led here was clicked where
  // the map is now drawn, and a map redrawn under a resting pointer (an
  // event touching the pool re-reads the page) is named by the pointer.
  await page.mouse.move(0, 0);
  // An event of the reservations just made may re-read the page between two
  // keys (the map is drawn again): the keys are pressed again on the map
  // drawn then, at most three times.
  let first = "", next = false;
  for (let i = 0; i < 3 && !next; i++) {
    await page.focus("#pool-map");
    await page.keyboard.press("Home");
    first = await page.textContent("#map-block");
    await page.keyboard.press("PageDown");
    next = await page.waitForFunction(
      () => document.getElementById("map-block")?.textContent.includes("allocated"), null, { timeout: 2000 })
      .then(() => true, () => false);
  }
  check(first.startsWith(`${reserved.body.subnet}: reserved`) && first.includes("map-holder"),
    `the focused map names its first block, its state and holder (${first})`);
  check(next, `Page Down moves to the next block, confirmed (${await page.textContent("#map-block")})`);
  const [hx, hy] = cellOf(8, 2);
  const cell = Number(await page.evaluate(() => document.getElementById("pool-map").dataset.cell));
  // A re-read of the page (an event touching the pool) names the keyboard's
  // block again: the pointer is moved onto the block until it names it.
  let hovered = "";
  for (let i = 0; i < 5 && !hovered.startsWith("10.77.2.0/24"); i++) {
    await page.mouse.move(0, 0);
    await page.hover("#pool-map", { position: { x: hx * cell + cell / 2, y: hy * cell + cell / 2 } });
    hovered = await page.textContent("#map-block");
  }
  check(hovered.startsWith("10.77.2.0/24: mixed") && hovered.includes("/26 held by map-holder"),
    `the pointer names the partly used block under it and its reservation (${hovered})`);
  // The pointer leaves the map: a map redrawn under a resting pointer is
  // named by the pointer (the browser moves it onto the new canvas), and what
  // follows is the keyboard's.
  await page.mouse.move(0, 0);
  await accessible(page, "a pool's page", check);

  const granted = Date.now();
  const later = await call("POST", `/v1/pools/${pool}/reservations`, { holder: "live-holder", prefix_len: 24, ttl_ms: 60000 });
  await page.getByRole("cell", { name: "live-holder" }).waitFor({ timeout: 5000 });
  console.log(`figure: the reservation appeared on the open pool page ${Date.now() - granted} ms after its answer`);
  check(later.status === 201, "a new reservation appears on the pool's page without a reload");
  await page.waitForFunction(() => document.getElementById("map-block")?.textContent.startsWith("10.77.1.0/24"),
    null, { timeout: 5000 }).catch(() => {});
  const kept = await page.evaluate(() => [document.getElementById("map-block")?.textContent, document.activeElement?.id]);
  check(kept[0]?.startsWith("10.77.1.0/24"), `the map names the keyboard's block after the re-read (${kept[0]}; focus on ${kept[1]})`);
  check(await page.evaluate(() => document.activeElement?.id) === "pool-map",
    "the map keeps the keyboard's focus and block across the re-read");
  await mapMatches(page, call, pool, check);
  await page.selectOption("#resolution", "25");
  await page.waitForFunction(() => document.getElementById("pool-map")?.dataset.cols === "32");
  const finer = await page.evaluate(() => document.getElementById("pool-map").dataset.runs);
  check(finer.split(" ").reduce((n, r) => n + Number(r.split(":")[1]), 0) === 512,
    "the block size can be changed (/25: 512 blocks, two squares of 16 × 16 side by side)");
  check(await page.locator("#resolution option").first().textContent() === "the server's default (/24)",
    "the block size offers the server's default first");

  // An IPv6 pool: a /48 drawn as its /56s by default, aggregated (never one
  // element per /64), its blocks named in IPv6's own notation.
  const pool6 = `${tag}-v6`;
  check([200, 201].includes((await call("PUT", `/v1/pools/${pool6}`, { cidr: "fd77:1::/48" })).status), "an IPv6 pool is created");
  const six = await call("POST", `/v1/pools/${pool6}/reservations`, { holder: "v6-holder", prefix_len: 64, ttl_ms: 60000 });
  const sixWhole = await call("POST", `/v1/pools/${pool6}/reservations`, { holder: "v6-holder", prefix_len: 56, ttl_ms: 60000 });
  check(six.status === 201 && sixWhole.status === 201, "a /64 and a /56 are reserved in it");
  await page.evaluate((p) => { location.hash = `#/pools/${encodeURIComponent(p)}`; }, pool6);
  await page.waitForFunction(() => document.getElementById("pool-map")?.dataset.runs);
  const map6 = await mapMatches(page, call, pool6, check);
  check(map6.runs.some((r) => r.state === "mixed") && map6.prefix_len < 64,
    `the IPv6 map aggregates: the /64 is part of a mixed /${map6.prefix_len} block`);
  check(await page.evaluate(() => document.querySelectorAll("#main canvas").length
    - document.querySelectorAll("#main .legend canvas").length) === 1,
  "the map is one canvas, not one element per block (beside the legend's swatches)");
  await page.focus("#pool-map");
  await page.keyboard.press("Home");
  const first6 = await page.textContent("#map-block");
  check(first6.startsWith("fd77:1::/") && first6.includes("v6-holder"),
    `the focused IPv6 map names its first block in IPv6 notation and its holder (${first6})`);
  await accessible(page, "an IPv6 pool's page", check);
  for (const r of [six, sixWhole]) {
    await call("POST", `/v1/pools/${pool6}/reservations/${r.body.id}/release`, { token: r.body.token });
  }

  // Groups: a group with a member on its own TTL and one in a session.
  const group = `${tag}-group`;
  await call("PUT", `/v1/groups/${group}`, {});
  await call("PUT", `/v1/groups/${group}/members/first-member`, { ttl_ms: 60000, capabilities: { role: "primary" } });
  const opened = await call("POST", "/v1/sessions",
    { holder: "session-holder", ttl_ms: 60000, max_lifetime_ms: 600000 });
  check(opened.status === 201 && typeof opened.body.ends_by === "string", "a session is opened, capped");
  check(await reach(page, "Groups"), "the groups page is reached with the keyboard");
  await page.getByRole("link", { name: group, exact: true }).waitFor();
  await accessible(page, "the groups page", check);
  await follow(page, page.getByRole("link", { name: group, exact: true }));
  await page.getByRole("cell", { name: "first-member" }).waitFor();
  check(await page.getByRole("cell", { name: '{"role":"primary"}' }).count() === 1, "a group's page lists a member and its capabilities");
  const joined = Date.now();
  await call("PUT", `/v1/groups/${group}/members/session-member`,
    { session: { id: opened.body.id, token: opened.body.token } });
  const joinedRow = page.getByRole("row").filter({ hasText: "session-member" });
  await joinedRow.waitFor({ timeout: 5000 });
  console.log(`figure: the join appeared on the open group page ${Date.now() - joined} ms after its answer`);
  check(true, "a join appears on the group's page without a reload");
  check(await joinedRow.getByRole("cell", { name: "session-holder" }).count() === 1,
    "a member bound to a session shows the session's holder");
  await accessible(page, "a group's page", check);

  // The sessions page lists the live session with what is bound to it.
  check(await reach(page, "Sessions"), "the sessions page is reached with the keyboard");
  const sessionRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: opened.body.id, exact: true }) });
  await sessionRow.waitFor();
  check(await sessionRow.getByRole("cell", { name: "session-holder" }).count() === 1,
    "the sessions page lists the session with its holder");
  const listed = (await call("GET", "/v1/sessions?limit=1000")).body.items.find((x) => x.id === opened.body.id);
  check(listed && listed.members === 1, "the API lists it with its one membership");
  check(await sessionRow.getByRole("cell").nth(7).textContent() === "1", "the page shows its one membership");
  check((await sessionRow.getByRole("cell").nth(4).textContent()).startsWith(opened.body.ends_by),
    "the sessions page shows when the session's tenure ends (ends by)");
  await accessible(page, "the sessions page", check);
  await page.goBack();
  await page.getByRole("row").filter({ hasText: "session-member" }).waitFor();

  // A session, reached from the member bound to it; force close.
  await follow(page, page.getByRole("link", { name: opened.body.id }));
  await page.getByRole("button", { name: "Force close" }).waitFor();
  check(await page.locator("dd").filter({ hasText: "session-holder" }).count() === 1, "the session's page names its holder");
  // What is bound to it: its membership, and a lock acquired in it now.
  const boundKey = `${key}-bound`;
  const boundLock = await call("POST", `/v1/locks/${encodeURIComponent(boundKey)}/acquire`,
    { holder: "session-holder", session: { id: opened.body.id, token: opened.body.token } });
  check(boundLock.status === 201, "a lock is acquired in the session");
  await page.getByRole("table", { name: "The locks bound to this session" })
    .getByRole("link", { name: boundKey, exact: true }).waitFor({ timeout: 2000 });
  check(true, "the session's page lists the lock bound to it, live");
  const memberships = page.getByRole("table", { name: "The group memberships bound to this session" });
  check(await memberships.getByRole("row").filter({ hasText: "session-member" })
    .getByRole("link", { name: group, exact: true }).count() === 1, "and its membership, with its group");
  await accessible(page, "a session's page", check);
  await page.getByRole("button", { name: "Force close" }).press("Enter");
  const dialog = page.getByRole("dialog", { name: "Force close" });
  await dialog.waitFor();
  await accessible(page, "the confirmation", check);
  await dialog.getByRole("button", { name: "Force close" }).click();
  await page.getByRole("alert").filter({ hasText: "Force close: done." }).waitFor();
  await page.getByText("No live session by this id").waitFor({ timeout: 2000 });
  check((await call("GET", `/v1/sessions/${opened.body.id}`)).status === 404, "force close, confirmed, ends the session");
  check((await call("GET", `/v1/locks/${encodeURIComponent(boundKey)}`)).status === 404, "and releases the lock bound to it");

  // Events: the tail shows a new event, pauses, and reads history.
  check(await reach(page, "Events"), "the events page is reached with the keyboard");
  await page.waitForSelector("#tail");
  const tailKey = `${key}-tail`;
  const path = `/v1/locks/${encodeURIComponent(tailKey)}`;
  const since = (await call("GET", "/v1/locks?limit=1")).body.revision;
  const one = await call("POST", `${path}/acquire`, { holder: "tail-holder", ttl_ms: 60000 });
  const tail = page.locator("#tail tbody");
  const acquiredAt = Date.now();
  await tail.getByRole("row").filter({ hasText: "lock.acquired" }).filter({ hasText: tailKey }).waitFor({ timeout: 5000 });
  console.log(`figure: the tail showed the grant ${Date.now() - acquiredAt} ms after its answer`);
  check(true, "the tail shows a new event without a reload");
  await accessible(page, "the events page", check);
  await page.getByRole("button", { name: "Pause" }).click();
  await call("POST", `${path}/release`, { token: one.body.token });
  await sleep(700);
  check(await tail.getByRole("row").filter({ hasText: "lock.released" }).filter({ hasText: tailKey }).count() === 0,
    "a paused tail shows no new event");
  await page.getByRole("button", { name: "Resume" }).click();
  await tail.getByRole("row").filter({ hasText: "lock.released" }).filter({ hasText: tailKey }).waitFor({ timeout: 5000 });
  check(true, "resumed, it shows what came while paused");
  await page.goto(`${page.url().split("#")[0]}#/events?prefix=${encodeURIComponent(tailKey)}`);
  await page.waitForFunction((k) => document.getElementById("tail-prefix")?.value === k, tailKey);
  await page.getByLabel("Resume after revision").fill(String(since));
  await page.getByRole("button", { name: "Read history" }).click();
  await page.locator("#tail-history").filter({ hasText: /Read history up to revision|History: / }).waitFor();
  check((await page.textContent("#tail-history")).startsWith("Read history"), `history is read (${await page.textContent("#tail-history")})`);
  await page.waitForFunction(() => document.querySelectorAll("#tail tbody tr").length === 2, null, { timeout: 2000 })
    .catch(() => {});
  check(await tail.getByRole("row").count() === 2, "history from a revision reads that key's two events again");

  // The type filter, chosen in the form: only releases of that key show.
  await page.selectOption("#tail-type", "lock.released");
  await page.getByRole("button", { name: "Filter" }).press("Enter");
  await page.waitForFunction(() => location.hash.includes("type=lock.released"));
  await page.waitForFunction(() => document.querySelectorAll("#tail tbody tr").length === 0);
  const again = await call("POST", `${path}/acquire`, { holder: "tail-holder", ttl_ms: 60000 });
  await call("POST", `${path}/release`, { token: again.body.token });
  await tail.getByRole("row").filter({ hasText: "lock.released" }).waitFor({ timeout: 5000 });
  await sleep(200);
  check(await tail.getByRole("row").count() === 1, "filtered by type, the tail shows the release alone");

  // A burst of events (lock sets, 2,000 events in a second or two): the
  // page's main thread is never blocked long, and the tail keeps 500 rows.
  await page.goto(`${page.url().split("#")[0]}#/events`);
  await page.waitForFunction(() => document.getElementById("tail-prefix")?.value === "");
  await page.evaluate(() => {
    window.longest = 0;
    new PerformanceObserver((list) => {
      for (const task of list.getEntries()) window.longest = Math.max(window.longest, task.duration);
    }).observe({ entryTypes: ["longtask"] });
    // How many rows one task adds: the page's work per frame, whatever
    // the machine's speed.
    window.largestBatch = 0;
    window.batches = 0;
    new MutationObserver((records) => {
      const added = records.reduce((n, r) => n + r.addedNodes.length, 0);
      if (added) window.batches += 1;
      window.largestBatch = Math.max(window.largestBatch, added);
    }).observe(document.querySelector("#tail tbody"), { childList: true });
  });
  const burst = `${key}-burst`;
  const started = Date.now();
  for (let round = 0; round < 4; round++) {
    await Promise.all(Array.from({ length: 10 }, async (_, i) => {
      const keys = Array.from({ length: 25 }, (_, j) => `${burst}/${round}/${i}/${j}`);
      const set = await call("POST", "/v1/lock-sets/acquire", { holder: "burst", ttl_ms: 60000, keys });
      await Promise.all(set.body.items.map((l) =>
        call("POST", `/v1/locks/${encodeURIComponent(l.key)}/release`, { token: l.token })));
    }));
  }
  const took = Date.now() - started;
  await tail.getByRole("row").filter({ hasText: `${burst}/3/` }).first().waitFor();
  await sleep(200);
  const { longest, largestBatch, batches } = await page.evaluate(() =>
    ({ longest: Math.round(window.longest), largestBatch: window.largestBatch, batches: window.batches }));
  console.log(`figure: 2000 events in ${took} ms (${Math.round(2000000 / took)}/s); the page's longest task meanwhile ${longest} ms; ${batches} batches of rows`);
  check(largestBatch > 0 && largestBatch <= 100,
    `the events pour in as batches of at most 100 rows a frame (the largest: ${largestBatch})`);
  const rows = await tail.getByRole("row").count();
  check(rows > 0 && rows <= 500, `after 2000 events the tail keeps ${rows} rows, at most 500`);

  // Force release of a held key, from its page, behind a confirmation.
  const forced = `${key}-forced`;
  await call("POST", `/v1/locks/${encodeURIComponent(forced)}/acquire`, { holder: "forced-holder", ttl_ms: 60000 });
  await page.evaluate((k) => { location.hash = `#/locks/${encodeURIComponent(k)}`; }, forced);
  await page.getByRole("cell", { name: "forced-holder" }).waitFor();
  await page.getByRole("button", { name: "Force release" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
  check((await call("GET", `/v1/locks/${encodeURIComponent(forced)}`)).status === 200, "cancelled, the lock stays held");
  await page.getByRole("button", { name: "Force release" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Force release" }).click();
  await page.getByRole("alert").filter({ hasText: "Force release: done." }).waitFor();
  await page.getByText("Nobody holds this key.").waitFor({ timeout: 2000 });
  check((await call("GET", `/v1/locks/${encodeURIComponent(forced)}`)).status === 404, "force release, confirmed, frees the key");
  // The key's history, newest first: the force release, then the grant.
  const history = page.locator("#history li");
  await page.waitForFunction(() => document.querySelector("#history li")?.textContent.includes("lock.released"),
    null, { timeout: 3000 }).catch(() => {});
  const lines = await history.allTextContents();
  check(lines.length === 2 && lines[0].includes("lock.released") && lines[0].includes("forced-holder")
    && lines[1].includes("lock.acquired"), `the key's page shows its history, newest first (${lines.join(" | ")})`);

  // A token without admin has no admin action: no button on a held key's
  // page nor on its own session's (the server would refuse them: 403).
  if (readerToken) {
    const held = await call("POST", `/v1/locks/${encodeURIComponent(forced)}/acquire`, { holder: "kept-holder", ttl_ms: 60000 });
    const asReader = { "content-type": "application/json", authorization: `Bearer ${readerToken}` };
    const own = await (await fetch(`${new URL(page.url()).origin}/v1/sessions`, { method: "POST", headers: asReader,
      body: JSON.stringify({ holder: "reader-session", ttl_ms: 60000 }) })).json();
    const reader = await open();
    await reader.addInitScript((t) => sessionStorage.setItem("leasehold-token", t), readerToken);
    await reader.goto(`${page.url().split("#")[0]}#/locks/${encodeURIComponent(forced)}`);
    await reader.getByRole("cell", { name: "kept-holder" }).waitFor();
    check(await reader.getByRole("button", { name: "Force release" }).count() === 0,
      "a token without admin sees no force release on a held key");
    await reader.evaluate((id) => { location.hash = `#/sessions/${encodeURIComponent(id)}`; }, own.id);
    await reader.locator("dd").filter({ hasText: "reader-session" }).waitFor();
    check(await reader.getByRole("button", { name: "Force close" }).count() === 0,
      "nor force close on its own session's page");
    await reader.close();
    await call("POST", `/v1/locks/${encodeURIComponent(forced)}/release`, { token: held.body.token });
    await fetch(`${new URL(page.url()).origin}/v1/sessions/${own.id}/close`, { method: "POST", headers: asReader,
      body: JSON.stringify({ token: own.token }) });
  }

  await call("POST", `/v1/pools/${pool}/reservations/${later.body.id}/release`, { token: later.body.token });
  await checkLimits({ page, call, check, key });
  await checkNested({ page, call, check, key });
  await checkCapacity({ page, call, check, key });
}

// Nested pools: a child's block drawn as such on its parent's map, named
// under the keyboard, and each page naming its parent, children and rules.
async function checkNested({ page, call, check, key }) {
  const parent = `${key.replace(/\W/g, "-")}-plan`;
  const child = `${parent}-kid`;
  check((await call("PUT", `/v1/pools/${parent}`, { cidr: "10.66.0.0/16", rules: { max_prefix_len: 28 } })).status === 201,
    "a top pool with a rule is created");
  check((await call("PUT", `/v1/pools/${child}`, { cidr: "10.66.4.0/22", parent, rules: { default_prefix_len: 26 } }))
    .status === 201, "a child pool is cut from it");
  await page.evaluate((p) => { location.hash = `#/pools/${p}?prefix_len=22`; }, parent);
  await page.locator("#pool-children").getByRole("link", { name: `${child} (10.66.4.0/22)` }).waitFor();
  check((await page.textContent("#pool-rules")).includes("at most /28"), "the parent's page names its child and its rules");
  const runs = await page.getAttribute("#pool-map", "data-runs");
  check(runs === "0:1:free 1:1:child 2:62:free", `the parent's map draws the child's block as a child (${runs})`);
  await page.locator("#pool-map").focus();
  await page.keyboard.press("Home");
  await page.keyboard.press("PageDown");
  await page.locator("#map-block").filter({ hasText: `10.66.4.0/22: child (pool ${child})` }).waitFor({ timeout: 5000 });
  check(true, "the keyboard names the child's block and its pool");
  await accessible(page, "a parent pool's page", check);
  await page.locator("#pool-children").getByRole("link", { name: `${child} (10.66.4.0/22)` }).press("Enter");
  await page.locator("#pool-parent").getByRole("link", { name: parent }).waitFor();
  const rules = await page.textContent("#pool-rules");
  check(rules.includes("at most /28") && rules.includes("/26 when none is asked"),
    `the child's page names its parent and its effective rules (${rules})`);
  check(await page.textContent("#pool-depth") === "1", "at depth 1");
  await checkTree({ page, call, check, parent, child });
  await call("DELETE", `/v1/pools/${child}`);
  await call("DELETE", `/v1/pools/${parent}`);
}

// The pools list as a tree: the child's row right under its parent's,
// indented, and each pool's usage as a bar whose width is its share, with
// the same figure in words beside it.
async function checkTree({ page, call, check, parent, child }) {
  const held = await call("POST", `/v1/pools/${child}/reservations`, { holder: "console", prefix_len: 23, ttl_ms: 600000 });
  check(held.status === 201, "a /23 is reserved in the child");
  await page.evaluate(() => { location.hash = "#/pools"; });
  await page.locator(".tree-name").filter({ hasText: child }).waitFor();
  const rows = await page.evaluate(() => [...document.querySelectorAll("tbody tr")].map((tr) => {
    const name = tr.querySelector(".tree-name");
    const usage = tr.querySelector(".usage");
    const bar = usage.querySelector(".usage-bar").getBoundingClientRect().width;
    return { name: name.querySelector("a").textContent, level: Number(name.dataset.level),
      indent: parseFloat(getComputedStyle(name).paddingLeft),
      share: usage.querySelector(".usage-fill").getBoundingClientRect().width / bar,
      text: usage.querySelector(".usage-text").textContent, hidden: usage.querySelector(".usage-bar").getAttribute("aria-hidden") };
  }));
  const at = rows.findIndex((r) => r.name === parent);
  const [top, kid] = [rows[at], rows[at + 1]];
  check(kid?.name === child && kid.level === top.level + 1 && kid.indent > top.indent,
    `the child's row is under its parent's, indented (${JSON.stringify([top, kid])})`);
  // The parent: the child's /22 of its /16 used; the child: a /23 of its /22.
  check(top.text === "1.56% (1024 of 65536 addresses)" && Math.abs(top.share - 0.0156) < 0.01,
    `the parent's bar and words say 1.56% (${top.text}, ${top.share})`);
  check(kid.text === "50% (512 of 1024 addresses)" && Math.abs(kid.share - 0.5) < 0.02 && kid.hidden === "true",
    `the child's bar is half full, said in words beside it (${kid.text}, ${kid.share})`);
  await accessible(page, "the pools tree", check);
  await call("DELETE", `/v1/pools/${child}/reservations/${held.body.id}`);
}

// Rate limits: the page is reached with the keyboard; a bucket's level is
// shown live as it is spent (no event says so); its prefix's denials per
// second show while takes are denied; a limit's own page; and deletion
// behind a confirmation.
async function checkLimits({ page, call, check, key }) {
  const name = `${key}-limit`;
  const path = `/v1/limits/${encodeURIComponent(name)}`;
  const defined = await call("PUT", path, { rate: 10, period_ms: 600000, burst: 10 });
  check(defined.status === 201, "a rate limit is defined");
  check(await reach(page, "Limits"), "the limits page is reached with the keyboard");
  await page.getByRole("link", { name, exact: true }).waitFor();
  const level = (text) => page.waitForFunction(([n, t]) => [...document.querySelectorAll("meter")]
    .some((m) => m.getAttribute("aria-label") === `${n}: ${t}`), [name, text], { timeout: 5000 })
    .then(() => true, () => false);
  check(await level("10 of 10 available"), "the page shows a new limit full");
  await accessible(page, "the limits page", check);
  const taken = await call("POST", `${path}/take`, { cost: 7 });
  check(taken.status === 200 && taken.body.available === 3, `a take of 7 leaves 3 (${JSON.stringify(taken.body)})`);
  check(await level("3 of 10 available"), "the page shows what is left, without a reload");
  // Denied takes, one every 100 ms, until the page shows its prefix's
  // denials per second (10 s at most).
  const row = page.getByRole("row").filter({ has: page.getByRole("link", { name, exact: true }) });
  let denials = 0;
  let shown = "";
  for (const until = Date.now() + 10000; Date.now() < until; denials++) {
    const denied = await call("POST", `${path}/take`, { cost: 5 });
    if (denied.status !== 429 || !(denied.body.retry_after_ms > 0)) {
      check(false, `a take of 5 with 3 left is denied with retry_after_ms (${denied.status} ${JSON.stringify(denied.body)})`);
    }
    shown = (await row.getByRole("cell").nth(4).textContent()) ?? "";
    if (/^[1-9]|^0\.[1-9]/.test(shown)) break;
    await sleep(100);
  }
  check(/^[1-9]|^0\.[1-9]/.test(shown), `the page shows its prefix's denials per second (${shown} after ${denials + 1} denials)`);
  check(await level("3 of 10 available"), "the denials took nothing");

  await follow(page, page.getByRole("link", { name, exact: true }));
  await page.locator("#limit-rate").filter({ hasText: "10 per 10 min" }).waitFor();
  check(await page.locator("#limit-available meter").getAttribute("value") === "3", "a limit's page shows its level");
  await accessible(page, "a limit's page", check);
  await page.getByRole("button", { name: "Delete this limit" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete limit" }).click();
  await page.getByRole("alert").filter({ hasText: "Delete limit: done." }).waitFor();
  check((await call("GET", path)).status === 404, "delete, confirmed, removes the limit");
  await page.locator("#limit-gone").waitFor({ timeout: 5000 });
  await sleep(1500); // a tick and the event's re-read would come by now
  check(await page.locator("#limit-gone").isVisible(), "the page says the limit is deleted, and reads it no more");
}

// A key's page shows its capacity (held and asked permits, as a meter and
// in words) and each holder's and waiter's permits.
async function checkCapacity({ page, call, check, key }) {
  const name = `${key}-capacity`;
  const path = `/v1/locks/${encodeURIComponent(name)}`;
  check((await call("PUT", `${path}/capacity`, { permits: 4 })).status === 201, "a capacity is stored");
  const held = await call("POST", `${path}/acquire`, { holder: "three-permits", ttl_ms: 60000, permits: 3 });
  check(held.status === 201 && held.body.permits === 3, "3 of its 4 permits are taken");
  // Within the fuzzed server's --max-wait (5 s): the capacity grows before
  // the page's accessibility is checked.
  const waiting = call("POST", `${path}/acquire`, { holder: "two-permits", ttl_ms: 60000, permits: 2, wait_ms: 4500 });
  await page.goto(`${page.url().split("#")[0]}#/locks/${encodeURIComponent(name)}`);
  const shown = (text) => page.waitForFunction(([t]) => [...document.querySelectorAll("#capacity meter")]
    .some((m) => m.getAttribute("aria-label") === t), [text], { timeout: 5000 }).then(() => true, () => false);
  check(await shown("3 of 4 permits held, 2 asked by waiters"), "the key's page shows its capacity, held and asked");
  const holder = page.getByRole("row").filter({ hasText: "three-permits" });
  check((await holder.getByRole("cell").nth(1).textContent()) === "3", "the holder's row shows its permits");
  const waiter = page.locator("#queue").getByRole("row").filter({ hasText: "two-permits" });
  check((await waiter.getByRole("cell").nth(3).textContent()) === "2", "the waiter's row shows the permits it asks");
  check((await call("PUT", `${path}/capacity`, { permits: 5 })).status === 200, "the capacity grows");
  const granted = await waiting;
  check(granted.status === 201, `a larger capacity grants the waiter that now fits (${granted.status})`);
  check(await shown("5 of 5 permits held, 0 asked by waiters"), "the page follows, without a reload");
  await accessible(page, "a key's page with a capacity", check);
  for (const token of [held.body.token, granted.body.token]) {
    await call("POST", `${path}/release`, { token });
  }
  check((await call("DELETE", `${path}/capacity`)).status === 204, "with nothing held, the capacity is deleted");
}

