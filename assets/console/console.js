// The console: who holds, who waits, live. Plain ES module, no build step;
// every request goes to the server that served the page, with the API token
// the operator signs in with (kept for this tab only). One event stream per
// open page, whatever it shows: pages re-read what they show when an event
// touches it, batched, never once per event.

const base = new URL("..", import.meta.url).href.replace(/\/$/, "");
const main = document.getElementById("main");
const live = document.getElementById("live");
const problemBox = document.getElementById("problem");
const tokenInput = document.getElementById("token");

let token = sessionStorage.getItem("leasehold-token") || "";
let stream = null;
let page = null;
const recent = []; // the last events, newest first
const seconds = new Map(); // events per second, for the last minute

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") el.textContent = value;
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    el.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  }
  return el;
}

function showProblem(message) {
  problemBox.hidden = !message;
  problemBox.textContent = message || "";
}

function headers(extra = {}) {
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

async function api(path) {
  const response = await fetch(base + path, { headers: headers({ Accept: "application/json" }) });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.detail || body.title || `${path} answered ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

const encode = (key) => encodeURIComponent(key);
const seconds_ = (ms) => (ms >= 60000 ? `${Math.round(ms / 60000)} min` : `${(ms / 1000).toFixed(1)} s`);

function table(caption, columns, rows, empty) {
  if (rows.length === 0) return h("p", { class: "muted", text: empty });
  return h("table", {},
    h("caption", { class: "muted", text: caption }),
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", text: c })))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => h("td", {}, c))))));
}

// Pages: each renders into `main` and says which events make it read again.
const pages = {
  async overview() {
    const [locks, queues] = await Promise.all([api("/v1/locks?limit=1000"), api("/v1/queues?limit=10")]);
    const minute = [...seconds.entries()].filter(([s]) => s > Date.now() / 1000 - 60);
    const perMinute = minute.reduce((sum, [, n]) => sum + n, 0);
    main.replaceChildren(
      h("h2", { text: "Overview" }),
      h("ul", { class: "figures", "aria-label": "Figures" },
        h("li", {}, h("strong", { id: "live-locks", text: `${locks.items.length}${locks.next_cursor ? "+" : ""}` }), "live locks"),
        h("li", {}, h("strong", { id: "waiters", text: queues.waiters }), `waiters on ${queues.keys} keys`),
        h("li", {}, h("strong", { id: "events-minute", text: perMinute }), "events in the last minute")),
      h("h3", { text: "Longest queues" }),
      table("The keys with the most waiters", ["key", "waiters", "longest wait"],
        queues.items.map((q) => [h("a", { href: `#/locks/${encode(q.key)}`, text: q.key }),
          String(q.waiters), seconds_(q.longest_wait_ms)]),
        "Nobody waits."),
      h("h3", { text: "Latest events" }),
      table("The latest changes, newest first", ["revision", "type", "resource", "holder", "reason"],
        recent.slice(0, 20).map((e) => [String(e.revision), e.type, e.key ?? e.subnet ?? e.group ?? e.session ?? "",
          e.holder ?? "", e.reason ?? ""]),
        "No change since the page opened."));
    return () => true;
  },

  async locks(params) {
    const prefix = params.get("prefix") || "";
    const cursor = params.get("cursor");
    const query = new URLSearchParams({ limit: "100" });
    if (prefix) query.set("prefix", prefix);
    if (cursor) query.set("cursor", cursor);
    const list = await api(`/v1/locks?${query}`);
    const now = Date.now();
    const rows = list.items.map((l) => [
      h("a", { href: `#/locks/${encode(l.key)}`, text: l.key }), l.holder, l.mode,
      String(l.fencing_token), seconds_(l.expires_in_ms)]);
    const filter = h("form", { role: "search", onsubmit: (e) => {
      e.preventDefault();
      location.hash = `#/locks?prefix=${encode(e.target.prefix.value)}`;
    } }, h("label", { for: "prefix", text: "Key prefix" }),
      h("input", { id: "prefix", name: "prefix", value: prefix }),
      h("button", { type: "submit", text: "Filter" }));
    const next = list.next_cursor
      ? h("a", { href: `#/locks?prefix=${encode(prefix)}&cursor=${encode(list.next_cursor)}`, text: "Next page" })
      : "";
    main.replaceChildren(h("h2", { text: "Locks" }), filter,
      table(`Live locks${prefix ? ` under ${prefix}` : ""}, read at ${new Date(now).toLocaleTimeString()}`,
        ["key", "holder", "mode", "fencing token", "time left"], rows, "No live lock."), next);
    return (e) => e.key !== undefined && e.key.startsWith(prefix);
  },

  async key(params, key) {
    let lock = null;
    try {
      lock = await api(`/v1/locks/${encode(key)}`);
    } catch (error) {
      if (error.status !== 404) throw error;
    }
    const queue = await api(`/v1/locks/${encode(key)}/waiters`);
    const holders = lock ? (lock.holders || [lock]) : [];
    main.replaceChildren(
      h("h2", {}, "Lock ", h("code", { text: key })),
      h("h3", { text: "Holders" }),
      table("Who holds the key", ["holder", "fencing token", "acquired", "time left"],
        holders.map((l) => [l.holder, String(l.fencing_token), l.acquired_at, seconds_(l.expires_in_ms)]),
        "Nobody holds this key."),
      h("h3", { text: "Queue" }),
      table("Who waits, the next to be granted first",
        ["#", "holder", "mode", "waiting for", "gives up in", "replica"],
        queue.items.map((w) => [String(w.position), w.holder, w.mode, seconds_(w.waited_ms),
          seconds_(w.wait_left_ms), w.replica]),
        "Nobody waits for this key."));
    return (e) => e.key === key;
  },
};

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = hash.split("?");
  const params = new URLSearchParams(query);
  if (path.startsWith("locks/")) return () => pages.key(params, decodeURIComponent(path.slice(6)));
  if (path === "locks") return () => pages.locks(params);
  return () => pages.overview();
}

// Reading again is batched: at most one read in flight, another queued.
let reading = null;
let again = false;
async function render() {
  if (reading) { again = true; return; }
  reading = (async () => {
    try {
      page = await route()();
      showProblem("");
    } catch (error) {
      showProblem(error.status === 401
        ? "This server asks for an API token: sign in above."
        : error.message);
    }
  })();
  await reading;
  reading = null;
  if (again) { again = false; render(); }
}

let batch = null;
function touched(event) {
  if (!page || !page(event) || batch) return;
  batch = setTimeout(() => { batch = null; render(); }, 100);
}

// The event stream, read with fetch so that it carries the token; resumed
// from the last revision seen when it breaks.
async function follow() {
  const controller = new AbortController();
  stream?.abort();
  stream = controller;
  let since = null;
  while (!controller.signal.aborted) {
    try {
      const path = since === null ? "/v1/events" : `/v1/events?since=${since}`;
      const response = await fetch(base + path, {
        headers: headers({ Accept: "text/event-stream" }), signal: controller.signal });
      if (response.status === 401 || response.status === 403) {
        // Nothing to follow until the operator signs in with a token that may.
        live.textContent = "not signed in";
        return;
      }
      if (!response.ok) throw new Error(`the event stream answered ${response.status}`);
      live.textContent = "live";
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).join("\n");
          if (!data) continue;
          const event = JSON.parse(data);
          since = event.revision;
          note(event);
        }
      }
    } catch (error) {
      if (controller.signal.aborted) return;
      live.textContent = `disconnected (${error.message}); retrying`;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function note(event) {
  recent.unshift(event);
  recent.length = Math.min(recent.length, 50);
  const second = Math.floor(Date.now() / 1000);
  seconds.set(second, (seconds.get(second) || 0) + 1);
  for (const s of seconds.keys()) if (s < second - 60) seconds.delete(s);
  touched(event);
}

document.getElementById("signin").addEventListener("submit", (e) => {
  e.preventDefault();
  token = tokenInput.value.trim();
  sessionStorage.setItem("leasehold-token", token);
  follow();
  render();
});
tokenInput.value = token;
// A key's queue changes without an event when a waiter joins: its page
// reads again every second while it is open (one request, whatever the data).
let ticker = null;
function watchQueue() {
  clearInterval(ticker);
  if (location.hash.startsWith("#/locks/")) ticker = setInterval(render, 1000);
}
window.addEventListener("hashchange", () => { watchQueue(); render(); main.focus(); });
watchQueue();
follow();
render();
