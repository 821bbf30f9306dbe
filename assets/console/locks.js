// The overview, locks by prefix, a key's holders and queue.
// Each page renders into `main` and answers which events make it read again.

import { api, duration, encode, filterForm, h, main, state, table } from "./util.js";

export async function overview() {
  const [locks, queues] = await Promise.all([api("/v1/locks?limit=1000"), api("/v1/queues?limit=10")]);
  const minute = [...state.seconds.entries()].filter(([s]) => s > Date.now() / 1000 - 60);
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
        String(q.waiters), duration(q.longest_wait_ms)]),
      "Nobody waits."),
    h("h3", { text: "Latest events" }),
    table("The latest changes, newest first", ["revision", "type", "resource", "holder", "reason"],
      state.recent.slice(0, 20).map((e) => [String(e.revision), e.type, e.key ?? e.subnet ?? e.group ?? e.session ?? "",
        e.holder ?? "", e.reason ?? ""]),
      "No change since the page opened."));
  return () => true;
}

export async function locks(params) {
  const prefix = params.get("prefix") || "";
  const cursor = params.get("cursor");
  const query = new URLSearchParams({ limit: "100" });
  if (prefix) query.set("prefix", prefix);
  if (cursor) query.set("cursor", cursor);
  const list = await api(`/v1/locks?${query}`);
  const rows = list.items.map((l) => [
    h("a", { href: `#/locks/${encode(l.key)}`, text: l.key }), l.holder, l.mode,
    String(l.fencing_token), duration(l.expires_in_ms)]);
  const next = list.next_cursor
    ? h("a", { href: `#/locks?prefix=${encode(prefix)}&cursor=${encode(list.next_cursor)}`, text: "Next page" })
    : "";
  main.replaceChildren(h("h2", { text: "Locks" }), filterForm("locks", [["prefix", "Key prefix"]], params),
    table(`Live locks${prefix ? ` under ${prefix}` : ""}, read at ${new Date().toLocaleTimeString()}`,
      ["key", "holder", "mode", "fencing token", "time left"], rows, "No live lock."), next);
  return (e) => e.key !== undefined && e.key.startsWith(prefix);
}

export async function key(params, name) {
  let lock = null;
  try {
    lock = await api(`/v1/locks/${encode(name)}`);
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  const queue = await api(`/v1/locks/${encode(name)}/waiters`);
  const holders = lock ? (lock.holders || [lock]) : [];
  main.replaceChildren(
    h("h2", {}, "Lock ", h("code", { text: name })),
    h("h3", { text: "Holders" }),
    table("Who holds the key", ["holder", "fencing token", "acquired", "time left"],
      holders.map((l) => [l.holder, String(l.fencing_token), l.acquired_at, duration(l.expires_in_ms)]),
      "Nobody holds this key."),
    h("h3", { text: "Queue" }),
    table("Who waits, the next to be granted first",
      ["#", "holder", "mode", "waiting for", "gives up in", "replica"],
      queue.items.map((w) => [String(w.position), w.holder, w.mode, duration(w.waited_ms),
        duration(w.wait_left_ms), w.replica]),
      "Nobody waits for this key."));
  return (e) => e.key === name;
}
