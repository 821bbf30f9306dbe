// The overview, locks by prefix, a key's holders, queue and history.
// Each page renders into `main` and answers which events make it read again.

import { adminAction, adminButton, api, duration, encode, endsBy, filterForm, h, main, nextPage, sessionLink, since,
  state, table, whoAmI } from "./util.js";
import { charts, latestPrefixes } from "./charts.js";

const bytes = (n) => (n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GiB` : n >= 1 << 20
  ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

// What the database says of itself: SQLite's file, log and last checkpoint;
// PostgreSQL's replicas seen alive.
function database(db) {
  const fact = (name, value, id) => [h("dt", { text: name }), h("dd", { id, text: value })];
  if (db.sqlite) {
    const s = db.sqlite;
    return h("dl", { class: "facts", "aria-label": "Database" },
      fact("backend", "SQLite", "db-backend"), fact("file", bytes(s.file_bytes), "db-file"),
      fact("write-ahead log", bytes(s.wal_bytes), "db-wal"),
      fact("last checkpoint", s.last_checkpoint_at ? `${since(s.last_checkpoint_at)} ago` : "none yet", "db-checkpoint"));
  }
  const replicas = db.postgres?.replicas ?? [];
  return h("div", {}, h("dl", { class: "facts", "aria-label": "Database" },
    fact("backend", "PostgreSQL", "db-backend"), fact("replicas seen", String(replicas.length), "db-replicas")),
  table("The replicas sharing the database, as it last heard of them", ["replica", "last seen", ""],
    replicas.map((r) => [h("code", { text: r.replica }), `${since(r.last_seen_at)} ago`, r.self ? "this page's" : ""]),
    "No replica has recorded itself yet."));
}

export async function overview() {
  const [status, queues] = await Promise.all([api("/v1/status"), api("/v1/queues?limit=10")]);
  state.admin = status.caller.admin === true;
  const minute = [...state.seconds.entries()].filter(([s]) => s > Date.now() / 1000 - 60);
  const perMinute = minute.reduce((sum, [, n]) => sum + n, 0);
  const c = status.counts;
  const figure = (id, value, label) => h("li", {}, h("strong", { id, text: String(value) }), label);
  const waiting = latestPrefixes.filter((p) => p.waiters > 0).sort((a, b) => b.waiters - a.waiters).slice(0, 10);
  main.replaceChildren(
    h("h2", { text: "Overview" }),
    h("ul", { class: "figures", "aria-label": "Figures" },
      figure("live-locks", c.locks, "live locks"),
      figure("waiters", c.waiters, `waiters on ${queues.keys} keys`),
      figure("sessions", c.sessions, "live sessions"),
      figure("groups", c.groups, `groups, ${c.members} members`),
      figure("reservations", c.reservations, "live reservations"),
      figure("events-minute", perMinute, "events in the last minute")),
    h("h3", { text: "Lock activity" }),
    charts(),
    h("h3", { text: "Longest queues" }),
    table("The keys with the most waiters", ["key", "waiters", "longest wait"],
      queues.items.map((q) => [h("a", { href: `#/locks/${encode(q.key)}`, text: q.key }),
        String(q.waiters), duration(q.longest_wait_ms)]),
      "Nobody waits."),
    waiting.length ? table("The key prefixes with the most waiters", ["prefix", "waiters", "wait p99, last minute"],
      waiting.map((p) => [h("a", { href: `#/locks?prefix=${encode(p.prefix === "other" ? "" : p.prefix)}`, text: p.prefix }),
        String(p.waiters), p.wait_p99_ms === null ? "—" : `${Math.round(p.wait_p99_ms)} ms`]), "") : "",
    h("h3", { text: "Database" }),
    database(status.database),
    h("h3", { text: "Latest events" }),
    table("The latest changes, newest first", ["revision", "type", "resource", "holder", "reason"],
      state.recent.slice(0, 20).map((e) => [String(e.revision), e.type, e.key ?? e.subnet ?? e.group ?? e.session ?? "",
        e.holder ?? "", e.reason ?? ""]),
      "No change since the page opened."));
  // Its counts read every live lease the token may see (tens of ms with
  // 100,000): at most once a second, whatever the traffic.
  return Object.assign(() => true, { every: 1000 });
}

export async function locks(params) {
  const prefix = params.get("prefix") || "";
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "100" });
  if (prefix) query.set("prefix", prefix);
  if (cursor) query.set("cursor", cursor);
  // The waiters of the keys shown: the keys with waiters under the prefix,
  // at most a thousand, in one read beside the page's.
  const waitQuery = new URLSearchParams({ limit: "1000" });
  if (prefix) waitQuery.set("prefix", prefix);
  const [list, queues] = await Promise.all([api(`/v1/locks?${query}`), api(`/v1/queues?${waitQuery}`)]);
  const waiters = new Map(queues.items.map((q) => [q.key, q.waiters]));
  const rows = list.items.map((l) => [
    h("a", { href: `#/locks/${encode(l.key)}`, text: l.key }), l.holder, l.mode,
    String(l.fencing_token), since(l.acquired_at), duration(l.expires_in_ms), endsBy(l),
    String(waiters.get(l.key) ?? 0)]);
  const next = nextPage("locks", list, { prefix });
  main.replaceChildren(h("h2", { text: "Locks" }), filterForm("locks", [["prefix", "Key prefix"]], params),
    table(`Live locks${prefix ? ` under ${prefix}` : ""}, read at ${new Date().toLocaleTimeString()}`,
      ["key", "holder", "mode", "fencing token", "held for", "time left", "ends by", "waiters"], rows,
      "No live lock."), next);
  return (e) => e.key !== undefined && e.key.startsWith(prefix);
}

const VERBS = { "lock.acquired": "granted to", "lock.released": "released by", "lock.updated": "updated by" };

// A key's capacity kept on the server: how much of it is held, as a meter
// and in words, and what waiters ask; nothing when the key has none.
function capacityOf(c) {
  if (!c) return h("p", { id: "capacity", class: "muted", text: "No capacity is stored for this key." });
  const words = `${c.held} of ${c.permits} permits held, ${c.waiting} asked by waiters`;
  return h("p", { id: "capacity" },
    h("meter", { min: "0", max: String(c.permits), value: String(Math.min(c.held, c.permits)), "aria-label": words }),
    ` ${words}`);
}

// A key's history from the change log, newest first, as a timeline.
function timeline(items) {
  if (items.length === 0) return h("p", { class: "muted", text: "The change log has nothing of this key." });
  return h("ol", { class: "timeline", id: "history", "aria-label": "History, newest first" },
    items.map((e) => h("li", {},
      h("time", { datetime: e.at, text: new Date(e.at).toLocaleString() }), " ",
      // A capacity's change has no holder.
      h("strong", { text: e.type }), e.holder ? ` ${VERBS[e.type] ?? "by"} ${e.holder}` : "",
      e.fencing_token !== undefined ? ` (fencing token ${e.fencing_token})` : "",
      e.reason ? `: ${e.reason}` : "",
      e.session ? [" in session ", sessionLink(e.session)] : "",
      h("span", { class: "muted", text: ` · revision ${e.revision}` }))));
}

export async function key(params, name) {
  const path = `/v1/locks/${encode(name)}`;
  const [lock, queue, history] = await Promise.all([
    api(path).catch((error) => { if (error.status === 404) return null; throw error; }),
    api(`${path}/waiters`), api(`${path}/history?limit=20`), whoAmI()]);
  const capacity = await api(`${path}/capacity`).catch((error) => {
    if (error.status === 404) return null;
    throw error;
  });
  const holders = lock ? (lock.holders || [lock]) : [];
  const force = () => adminAction(
    `Force release ${name}? Every holder loses it now, and the next waiter is granted.`,
    "Force release", () => api(path, "DELETE"));
  main.replaceChildren(
    h("h2", {}, "Lock ", h("code", { text: name })),
    h("h3", { text: "Capacity" }),
    capacityOf(capacity),
    h("h3", { text: "Holders" }),
    lock?.session ? h("p", {}, "Bound to session ", sessionLink(lock.session)) : "",
    table("Who holds the key", ["holder", "permits", "fencing token", "acquired", "held for", "time left", "ends by"],
      holders.map((l) => [l.holder, String(l.permits ?? 1), String(l.fencing_token), l.acquired_at,
        since(l.acquired_at), duration(l.expires_in_ms), endsBy(l)]),
      "Nobody holds this key."),
    lock ? adminButton("Force release", force) : "",
    h("h3", { text: "Queue" }),
    h("div", { id: "queue", "data-key": name }, queueTable(queue)),
    h("h3", { text: "History" }),
    timeline(history.items));
  const tick = async () => {
    const [again, held] = await Promise.all([api(`${path}/waiters`),
      capacity ? api(`${path}/capacity`).catch(() => null) : null]);
    // Only onto this key's page, should the page have changed meanwhile.
    const shown = document.getElementById("queue");
    if (shown?.dataset.key !== name) return;
    shown.replaceChildren(queueTable(again));
    if (held) document.getElementById("capacity")?.replaceWith(capacityOf(held));
  };
  return Object.assign((e) => e.key === name, { tick });
}

function queueTable(queue) {
  return table("Who waits, the next to be granted first",
    ["#", "holder", "mode", "permits", "waiting for", "gives up in", "replica"],
    queue.items.map((w) => [String(w.position), w.holder, w.mode, String(w.permits ?? 1), duration(w.waited_ms),
      duration(w.wait_left_ms), w.replica]),
    "Nobody waits for this key.");
}
