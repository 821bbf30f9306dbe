// The /docs page in headless Chromium, as a person uses it: the page loads
// from the server alone (any request elsewhere fails the check), shows every
// operation with schemas, enums, bounds and Markdown; with a token it is
// authorised through "Authorize", then "try it out" acquires a lock and the
// page shows the server's answer, which the server confirms on its own. The
// page logs no error (a Content-Security-Policy violation, a missing icon).
//
// usage: node docs_browser.mjs BASE_URL [API_TOKEN]
// Needs playwright-core (from npm) and Debian's chromium.
import { chromium } from "playwright-core";

const [base, token] = process.argv.slice(2);
const origin = new URL(base).origin;
const key = `docs-page/${process.pid}`;
const holder = "docs-page-in-chromium";

function check(condition, what) {
  if (!condition) throw new Error(`docs page: ${what}`);
  console.log(`ok: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
try {
  const page = await browser.newPage();
  const elsewhere = [];
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    elsewhere.push(url);
    return route.abort();
  });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.addInitScript(() => document.addEventListener("securitypolicyviolation", (e) =>
    console.error(`Content-Security-Policy violation: ${e.violatedDirective} refused ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`${message.text()} ${message.location().url ?? ""}`);
  });
  page.on("response", (response) => {
    if (new URL(response.url()).pathname.endsWith("/favicon.ico") && response.status() !== 200) {
      errors.push(`the icon answered ${response.status()}`);
    }
  });

  await page.goto(`${base}/docs`);
  await page.waitForSelector("#operations-locks-acquireLock", { timeout: 30000 });
  // The icon the page links is served: a browser logs a missing one as an
  // error on every load.
  const icon = await page.evaluate(() => document.querySelector("link[rel~='icon']")?.href);
  const iconAnswer = icon && await page.request.get(icon);
  check(iconAnswer?.status() === 200 && iconAnswer.headers()["content-type"].startsWith("image/"),
    `the page's icon is served as an image (${icon})`);
  for (const op of ["acquireLock", "renewLock", "releaseLock", "getLock", "listLocks",
    "forceReleaseLock", "putPool", "getPool", "listPools", "deletePool", "reserveSubnet",
    "confirmReservation"]) {
    check(await page.locator(`.opblock-summary-operation-id:text-is("${op}")`).count() === 1,
      `operation ${op} is listed`);
  }

  // Schemas, with their enums and bounds, and Markdown rendered.
  const schema = async (name) => {
    const article = page.locator("section.models article[data-json-schema-level='0']")
      .filter({ has: page.locator(`.json-schema-2020-12__title:text-is("${name}")`) });
    await article.locator(".json-schema-2020-12-expand-deep-button").first().click();
    return article.innerText();
  };
  const mode = await schema("Mode");
  check(mode.includes('"exclusive"') && mode.includes('"shared"'), "the Mode schema shows its enum");
  const openSchema = await schema("OpenSessionRequest");
  check(/ttl_ms\s*Collapse all\s*integer\s*\[100, 86400000\]/.test(openSchema),
    "the OpenSessionRequest schema shows ttl_ms and its range, 100 to the default --max-ttl");
  // Its fields' descriptions carry inline code.
  await schema("AcquireRequest");
  check(await page.locator(".markdown code, .renderedMarkdown code").count() > 0,
    "Markdown descriptions are rendered (inline code)");

  if (token) {
    await page.locator("button.authorize").first().click();
    await page.locator(".modal-ux input[type=text], .modal-ux input[type=password]").first().fill(token);
    await page.locator(".modal-ux button.authorize").first().click();
    await page.locator(".modal-ux button.btn-done, .modal-ux .close-modal").first().click();
    check(await page.locator("button.authorize.locked").count() > 0,
      "the bearer token is entered through Authorize");
  }

  // Try it out: acquire a lock from the page.
  const op = page.locator("#operations-locks-acquireLock");
  await op.locator(".opblock-summary").click();
  const tryOut = op.locator("button.try-out__btn");
  if (await tryOut.count() && /try it out/i.test(await tryOut.innerText())) await tryOut.click();
  await op.locator('tr[data-param-name="key"] input').fill(key);
  await op.locator("textarea.body-param__text").fill(
    JSON.stringify({ holder, ttl_ms: 60000 }));
  await op.locator("button.execute").click();
  const live = op.locator(".live-responses-table tr.response .response-col_status").first();
  await live.waitFor({ timeout: 30000 });
  const status = (await live.innerText()).trim();
  check(status === "201", `the page shows the server's answer to the acquire (${status})`);
  const answer = await op.locator(".live-responses-table tr.response .response-col_description").first().innerText();
  check(answer.includes("fencing_token") && answer.includes(holder),
    "the answer shown carries the lease and its fencing token");

  // The server saw the request: the lock is held by the page's holder.
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const seen = await fetch(`${base}/v1/locks/${encodeURIComponent(key)}`, { headers });
  const lease = await seen.json();
  check(seen.status === 200 && lease.holder === holder,
    `the server holds ${key} for ${holder}`);

  check(elsewhere.length === 0, `the page asked nothing of another origin (${elsewhere.join(", ")})`);
  check(errors.length === 0,
    `the page logged no error, no Content-Security-Policy violation among them (${errors.join("; ")})`);
} finally {
  await browser.close();
}
console.log("docs page: every check passed");
