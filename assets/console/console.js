// The console: who holds, who waits, which subnets are taken, who is a
// member, what changes, live. Plain ES modules, no build step; every
// request goes to the server that served the page, with the API token the
// operator signs in with (kept for this tab only). One event stream per
// open page, whatever it shows: pages re-read what they show when an event
// touches it, batched, never once per event.

import { base, headers, main, showAction, showProblem, state } from "./util.js";
import { key, locks, overview } from "./locks.js";
import { session, sessions } from "./sessions.js";
import { pool, pools } from "./pools.js";
import { group, groups } from "./groups.js";
import { events } from "./events.js";
import { limit, limits } from "./limits.js";
import { startSampling } from "./charts.js";

const live = document.getElementById("live");
const tokenInput = document.getElementById("token");

let stream = null;
let page = null;
state.recent = []; // the last events, newest first
state.seconds = new Map(); // events per second, for the last minute

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = hash.split("?");
  const params = new URLSearchParams(query);
  const [section, ...name] = path.split("/");
  const pages = { locks: [locks, key], pools: [pools, pool], groups: [groups, group], events: [events],
    sessions: [sessions, session], limits: [limits, limit] };
  const [list, one] = pages[section] || [];
  if (name.length && one) return () => one(params, decodeURIComponent(name.join("/")));
  if (list) return () => list(params);
  return () => overview();
}

// Reading again is batched: at most one read in flight, another queued.
let reading = null;
let again = false;
async function render() {
  if (reading) { again = true; return; }
  reading = (async () => {
    try {
      state.tap = null;
      // A re-read replaces the page: a control of it that had the focus,
      // lost with it, gets it back (one outside the page keeps its own).
      const had = document.activeElement;
      readAt = Date.now();
      page = await route()();
      if (had?.id && !had.isConnected && document.activeElement === document.body) {
        document.getElementById(had.id)?.focus();
      }
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

// A page reads again 100 ms after an event touches it, or, if it says how
// often at most (`every`, in ms: the overview, whose counts read every live
// lease), no sooner than that after its last read began.
let batch = null;
let readAt = 0;
function touched(event) {
  if (!page || !page(event) || batch) return;
  const wait = Math.max(100, (page.every ?? 0) - (Date.now() - readAt));
  batch = setTimeout(() => { batch = null; render(); }, wait);
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
        const frames = (buffer + value).split("\n\n");
        buffer = frames.pop();
        for (const frame of frames) {
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
  const { recent, seconds } = state;
  recent.unshift(event);
  if (recent.length > 50) recent.length = 50;
  const second = Math.floor(Date.now() / 1000);
  if (!seconds.has(second)) for (const s of seconds.keys()) if (s < second - 60) seconds.delete(s);
  seconds.set(second, (seconds.get(second) || 0) + 1);
  state.tap?.(event);
  touched(event);
}

document.getElementById("signin").addEventListener("submit", (e) => {
  e.preventDefault();
  state.token = tokenInput.value.trim();
  state.admin = undefined;
  sessionStorage.setItem("leasehold-token", state.token);
  follow();
  render();
});
tokenInput.value = state.token;
// What changes without an event (a key's queue when a waiter joins, a rate
// limit's bucket as it refills) a page reads again with its `tick`, every
// second while it is open (one request or two, whatever the data), and the
// rest of the page when an event touches it.
let ticker = null;
function tickEverySecond() {
  clearInterval(ticker);
  ticker = setInterval(() => {
    if (reading || !page?.tick) return;
    page.tick().catch((error) => showProblem(error.message));
  }, 1000);
}
window.addEventListener("hashchange", () => { showAction(""); tickEverySecond(); render(); main.focus(); });
tickEverySecond();
follow();
render();
startSampling();
