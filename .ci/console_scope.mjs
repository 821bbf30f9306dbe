// A token scoped to one key prefix and one pool, signed in to the console:
// every page shows what is inside its scope and nothing outside it, not even
// hidden in the page. The data is seeded with the admin token, inside and
// outside the scope, while the scoped page is open (so the event stream has
// both to carry), then each page is read.
//
// The scoped token is made with `--lock-prefix scoped/ --pool scoped-pool`.
export const SCOPE = { prefix: "scoped/", pool: "scoped-pool" };

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

export async function checkScope({ open, call, check, base, scopedToken }) {
  const tag = process.pid;
  const inside = `${SCOPE.prefix}${tag}`;
  const outside = `elsewhere-${tag}`; // in every name and holder outside the scope
  const page = await open();
  await page.addInitScript((t) => sessionStorage.setItem("leasehold-token", t), scopedToken);
  await page.goto(`${base}/console#/`);
  await page.getByRole("status").filter({ hasText: "live" }).waitFor();

  // Nothing outside the scope anywhere in the page: neither what is seeded
  // here nor what the other checks left on the server.
  const clean = async (what) => {
    const html = await page.evaluate(() => document.documentElement.outerHTML);
    const leaked = [outside, `console-${tag}`, `console/${tag}`].filter((n) => html.includes(n));
    check(leaked.length === 0, `the scoped token's ${what} shows nothing outside its scope (${leaked.join(", ")})`);
  };

  const acquire = (key, holder, wait) => call("POST", `/v1/locks/${encodeURIComponent(key)}/acquire`,
    { holder, ttl_ms: 60000, ...(wait ? { wait_ms: 4500 } : {}) });
  const held = [await acquire(`${inside}/held`, "scoped-holder"), await acquire(`${outside}/held`, `${outside}-holder`)];
  check(held.every((l) => l.status === 201), "locks inside and outside the scope are acquired with the admin token");
  const waiting = [acquire(`${inside}/held`, "scoped-waiter", true), acquire(`${outside}/held`, `${outside}-waiter`, true)];
  await call("PUT", `/v1/pools/${SCOPE.pool}`, { cidr: "10.88.0.0/16" });
  await call("PUT", `/v1/pools/${outside}`, { cidr: "10.89.0.0/16" });
  const reservations = [
    [SCOPE.pool, await call("POST", `/v1/pools/${SCOPE.pool}/reservations`, { holder: "scoped-holder", prefix_len: 24, ttl_ms: 60000 })],
    [outside, await call("POST", `/v1/pools/${outside}/reservations`, { holder: `${outside}-holder`, prefix_len: 24, ttl_ms: 60000 })]];
  check(reservations.every(([, r]) => r.status === 201), "pools inside and outside the scope have a reservation each");
  for (const group of [`${inside}/group`, `${outside}-group`]) {
    await call("PUT", `/v1/groups/${encodeURIComponent(group)}`, {});
    await call("PUT", `/v1/groups/${encodeURIComponent(group)}/members/${group.startsWith(outside) ? outside : "scoped"}-member`,
      { ttl_ms: 60000 });
  }

  // The overview: the queue inside is ranked, the events inside are listed.
  await page.getByRole("table", { name: "The keys with the most waiters" })
    .getByRole("link", { name: `${inside}/held`, exact: true }).waitFor();
  await page.getByRole("table", { name: "The latest changes, newest first" })
    .getByRole("cell", { name: `${inside}/group` }).first().waitFor();
  check(true, "the scoped token's overview shows the queue and the events inside its scope");
  await clean("overview");
  // Its counts are its own: the locks under its prefix, not the server's.
  const own = () => page.evaluate(async (t) => (await (await fetch("/v1/status",
    { headers: { Authorization: `Bearer ${t}` } })).json()).counts, scopedToken);
  let shown = "", counts = null;
  for (let i = 0; i < 50; i++) {
    counts = await own();
    shown = await page.textContent("#live-locks");
    if (shown === String(counts.locks)) break;
    await sleep(100);
  }
  const inScope = (await call("GET", `/v1/locks?prefix=${encodeURIComponent(SCOPE.prefix)}&limit=1000`)).body.items.length;
  const all = (await call("GET", "/v1/status")).body.counts.locks;
  check(shown === String(counts.locks) && counts.locks === inScope && counts.locks < all,
    `the scoped token's overview counts the ${inScope} locks in its scope, not the server's ${all} (shows ${shown}, its /v1/status says ${counts.locks})`);

  await page.evaluate(() => { location.hash = "#/locks"; });
  await page.getByRole("link", { name: `${inside}/held`, exact: true }).waitFor();
  check(true, "the scoped token's locks page lists the lock inside its scope");
  await clean("locks page");

  await page.getByRole("link", { name: `${inside}/held`, exact: true }).click();
  await page.locator("#history li").filter({ hasText: "scoped-holder" }).first().waitFor();
  check(true, "the key's history inside its scope is shown");
  await clean("key's page");

  const stranger = await call("POST", "/v1/sessions", { holder: `${outside}-session`, ttl_ms: 60000 });
  await page.evaluate(() => { location.hash = "#/sessions"; });
  await page.getByRole("heading", { name: "Sessions" }).waitFor();
  await sleep(300);
  check(stranger.status === 201, "the sessions page of the scoped token is read while another token's session is open");
  await clean("sessions page");
  await call("POST", `/v1/sessions/${stranger.body.id}/close`, { token: stranger.body.token });

  await page.evaluate(() => { location.hash = "#/pools"; });
  await page.getByRole("link", { name: SCOPE.pool, exact: true }).waitFor();
  check(true, "the scoped token's pools page lists its pool");
  await clean("pools page");
  await page.getByRole("link", { name: SCOPE.pool, exact: true }).click();
  await page.getByRole("cell", { name: reservations[0][1].body.subnet, exact: true }).waitFor();
  check(true, "its pool's page lists the reservation");
  await clean("pool's page");

  await page.evaluate(() => { location.hash = "#/groups"; });
  await page.getByRole("link", { name: `${inside}/group`, exact: true }).waitFor();
  check(true, "the scoped token's groups page lists the group inside its scope");
  await clean("groups page");

  // The events tail: live, then its history from the first revision.
  await page.evaluate(() => { location.hash = "#/events"; });
  await page.waitForSelector("#tail");
  const again = [await acquire(`${inside}/tail`, "scoped-holder"), await acquire(`${outside}/tail`, `${outside}-holder`)];
  await page.locator("#tail tbody").getByRole("row").filter({ hasText: `${inside}/tail` }).waitFor();
  await sleep(300);
  check(true, "the scoped token's events tail shows an event inside its scope");
  await clean("events tail");
  await page.getByLabel("Resume after revision").fill("0");
  await page.getByRole("button", { name: "Read history" }).click();
  await page.locator("#tail-history").filter({ hasText: /Read history up to revision|History: / }).waitFor();
  await page.locator("#tail tbody").getByRole("row").filter({ hasText: `${inside}/group` }).first().waitFor();
  check(true, "its history from revision 0 reads the events inside its scope");
  await clean("events history");
  await page.close();

  // Tidy up: the waiters are granted and everything is released.
  for (const l of held) await call("POST", `/v1/locks/${encodeURIComponent(l.body.key)}/release`, { token: l.body.token });
  for (const w of await Promise.all(waiting)) {
    if (w.status === 201) await call("POST", `/v1/locks/${encodeURIComponent(w.body.key)}/release`, { token: w.body.token });
  }
  for (const l of again) await call("POST", `/v1/locks/${encodeURIComponent(l.body.key)}/release`, { token: l.body.token });
  for (const [pool, r] of reservations) {
    await call("POST", `/v1/pools/${pool}/reservations/${r.body.id}/release`, { token: r.body.token });
  }
}
